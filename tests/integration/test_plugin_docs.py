"""Every filter and module of the collection is documented for ansible-doc (issue 16, "Self-service"):
``ansible-doc -t filter cps.gpu_cluster.<name>`` shows each filter's own documentation (not the
documentation of another filter of the same file), and every module's DOCUMENTATION declares its
``attributes`` (check_mode, diff_mode, platform)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / "collections"
ANSIBLE_DOC = shutil.which("ansible-doc") or str(REPO / ".venv" / "bin" / "ansible-doc")
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py"))
ATTRIBUTES = {"check_mode", "diff_mode", "platform"}


def filter_names() -> dict[str, str]:
    """{filter name: plugin file} from every FilterModule.filters() of plugins/filter/."""
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))
    names = {}
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.cps.gpu_cluster.plugins.filter.{path.stem}")
        for name in module.FilterModule().filters():
            assert name not in names, f"filter {name} is defined in {names.get(name)} and {path.name}"
            names[name] = path.name
    return names


def ansible_doc(kind: str, names: list[str]) -> dict:
    done = subprocess.run([ANSIBLE_DOC, "-t", kind, "-j", *(f"cps.gpu_cluster.{n}" for n in names)], env=ENV,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"ansible-doc -t {kind} failed (a plugin without documentation?):\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def test_every_filter_has_its_own_documentation():
    names = filter_names()
    assert 20 <= len(names) <= 40, f"issue 28: at most 40 public filters, found {len(names)}"
    docs = ansible_doc("filter", sorted(names))
    problems = []
    for name, source in sorted(names.items()):
        doc = (docs.get(f"cps.gpu_cluster.{name}") or {}).get("doc") or {}
        if doc.get("name") != name:
            problems.append(f"{name} ({source}): ansible-doc shows {doc.get('name')!r}'s documentation; add plugins/filter/{name}.yml")
            continue
        for key in ("short_description", "description", "version_added", "author", "options"):
            if not doc.get(key):
                problems.append(f"{name}: DOCUMENTATION lacks {key}")
        if "_input" not in (doc.get("options") or {}):
            problems.append(f"{name}: options lack _input")
        ret = (docs[f"cps.gpu_cluster.{name}"].get("return") or {}).get("_value") or {}
        if not ret.get("description"):
            problems.append(f"{name}: RETURN lacks _value")
        if not docs[f"cps.gpu_cluster.{name}"].get("examples"):
            problems.append(f"{name}: no EXAMPLES")
    assert not problems, "\n".join(problems)


def test_every_phase_filter_documents_its_steps():
    """A phase-level filter (issue 28) documents exactly the steps it runs, each with an example; an
    unknown step is refused naming the steps."""
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))
    phases = {}
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.cps.gpu_cluster.plugins.filter.{path.stem}")
        phases.update((name, f) for name, f in module.FilterModule().filters().items() if hasattr(f, "steps"))
    assert {"verify_plan", "verify_judge", "verify_report", "jupyterhub_verify_plan", "jupyterhub_verify_judge"} <= set(phases)
    docs = ansible_doc("filter", sorted(phases))
    for name, phase in sorted(phases.items()):
        entry = docs[f"cps.gpu_cluster.{name}"]
        step = entry["doc"]["options"]["step"]
        assert tuple(step["choices"]) == phase.steps, f"{name}: the documented steps differ from the steps it runs"
        assert len(step["description"]) == len(phase.steps) + 1, f"{name}: one description line per step"
        for one in phase.steps:
            assert f"cps.gpu_cluster.{name}('{one}'" in entry["examples"], f"{name}: no example of step {one}"
        with pytest.raises(AnsibleFilterError, match=f"{name}: unknown step 'nope'; the steps are "):
            phase("x", "nope")


def test_moved_filter_names_say_what_replaces_them():
    """Every filter name that was published and moved into a phase filter is a tombstone in
    meta/runtime.yml naming its replacement (plugin_routing), and that replacement exists."""
    routing = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["plugin_routing"]["filter"]
    names = filter_names()
    tombstones = {old: entry["tombstone"]["warning_text"] for old, entry in routing.items() if "tombstone" in entry}
    assert len(tombstones) > 80
    for old, text in tombstones.items():
        assert old not in names, f"{old} is both a filter and a tombstone"
        new = text.split("cps.gpu_cluster.", 1)[1].split("(", 1)[0]
        assert new in names, f"{old}: the replacement {new} is not a filter"


def test_every_filter_sidecar_names_a_filter():
    names = filter_names()
    for sidecar in sorted((REPO / "plugins" / "filter").glob("*.yml")):
        assert sidecar.stem in names, f"{sidecar.name} documents no filter of plugins/filter/*.py"


@pytest.fixture(scope="module")
def module_docs():
    return ansible_doc("module", MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_module_declares_attributes(module, module_docs):
    attributes = module_docs[f"cps.gpu_cluster.{module}"]["doc"].get("attributes") or {}
    assert ATTRIBUTES <= set(attributes), f"{module}: attributes lack {sorted(ATTRIBUTES - set(attributes))}"
    for name, attribute in attributes.items():
        assert attribute.get("support") in {"full", "partial", "none", "N/A"}, f"{module}: attribute {name} support"
        assert attribute.get("description"), f"{module}: attribute {name} needs a description"
    assert attributes["platform"].get("platforms"), f"{module}: the platform attribute names its platforms"
