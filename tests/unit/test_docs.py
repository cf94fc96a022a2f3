"""The documentation cannot drift from the code (issue 29).

Every repository path, playbook, role, ``make`` target, plugin (``cps.gpu_cluster.<name>``) and
inventory variable that README.md, docs/*.md, roles/*/README.md and galaxy.yml name exists; every
version they quote is one the collection pins or supports (versions.yml and the supported lists in
plugins/); and no doc quotes a count of tests, cases or scenarios (counts go stale; the docs say
what runs, not how many). What a check cannot tell from the text is listed in the exceptions below,
each with its reason. A stale exception fails too, so the lists stay short.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", REPO / "galaxy.yml", *(REPO / "docs").glob("*.md"), *(REPO / "roles").glob("*/README.md")])


def rel(path):
    return str(path.relative_to(REPO))


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False).stdout.split()
    return out or [rel(p) for p in REPO.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts]


FILES = set(tracked())
DIRS = {str(Path(f).parents[i]) for f in FILES for i in range(len(Path(f).parts) - 1)}
BASENAMES = {Path(f).name for f in FILES}
TOP = {f.split("/")[0] for f in FILES}

# The code spans of a doc (Markdown); galaxy.yml is YAML whose comments and values are the doc.
TICKED = re.compile(r"`([^`\n]+)`")


def spans(doc):
    text = doc.read_text()
    if doc.suffix == ".yml":  # its comments (build_ignore lists patterns, not files)
        return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
    return TICKED.findall(text)


# A path-like token: dir/.../name or name.ext.
PATH = re.compile(r"(?<![\w./~$<>{}@:-])(?>((?:\.?[A-Za-z0-9_-][A-Za-z0-9_.-]*/)+[A-Za-z0-9_.-]*[A-Za-z0-9_]/?"
                  r"|[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:yml|yaml|md|py|j2|json|tf|sh|txt|cfg|toml|ini)))(?![\w/<>{}*-])")

# Names a doc gives that are not files of this repository: what the collection writes on a host or
# in the user's state directory, other projects' files, placeholders. Reason each.
PATH_EXCEPTIONS = {
    "lab/.state": "make lab writes it (git-ignored)",
    "lab/.state/inventory": "make lab writes it (git-ignored)",
    "lab/.state/k3s-airgap": "make lab writes it (git-ignored)",
    "inventories/mine": "the user's own inventory in the examples",
    "meta/argument_specs.yml": "a role's file, named relative to the role",
    "meta/main.yml": "a role's file, named relative to the role",
    "tests/test_2_k3s_day2.py": "relative to molecule/k3s_reset/",
    "app-config.yaml": "Backstage's own configuration file",
    "catalog-info.yaml": "written by the Backstage template into the user's repository",
    "fleet.yaml": "written into every Fleet bundle",
    "audit-policy.yaml": "written under /etc/rancher/k3s on the servers",
    "pod-security-admission.yaml": "written under /etc/rancher/k3s on the servers",
    "registries.yaml": "written under /etc/rancher/k3s on every node",
    "kube-vip.yaml": "written into the servers' manifests directory",
    "k3s-killall.sh": "k3s's own script on a node",
    "sha256sum-amd64.txt": "a k3s release asset",
    "sha256sum-arm64.txt": "a k3s release asset",
    "inventory-sample.yml": "k3s-ansible's sample inventory (docs/migrating.md)",
}


def cited_paths():
    for doc in DOCS:
        for span in spans(doc):
            for found in PATH.findall(span):
                token = found.rstrip("/")
                first = token.split("/")[0]
                if "/" in token and first not in TOP and not first.startswith("."):
                    continue  # another tree: a host path, an API group, a URL part
                yield doc, token


def exists(doc, token):
    if token in FILES or token in DIRS:
        return True
    role_dir = doc.parent if doc.name == "README.md" and doc.parent.parent.name == "roles" else None
    if role_dir and (rel(role_dir / token) in FILES | DIRS or rel(role_dir / "tasks" / token) in FILES):
        return True  # a role's file, or a tasks_from name (relative to the role's tasks/)
    if "/" not in token:
        return token in BASENAMES or f"playbooks/{token}" in FILES
    return (REPO / token).exists() and not (REPO / token).is_symlink()


def test_every_cited_path_exists():
    missing = sorted({f"{rel(doc)}: {token}" for doc, token in cited_paths()
                      if token not in PATH_EXCEPTIONS and not exists(doc, token)})
    assert not missing, "cited but not in the repository:\n" + "\n".join(missing)


def test_path_exceptions_are_still_needed():
    cited = {token for _doc, token in cited_paths()}
    stale = sorted(set(PATH_EXCEPTIONS) - cited)
    assert not stale, f"exceptions no doc cites any more (remove them): {stale}"


# --- make targets, plugins, playbooks, roles -------------------------------------------------------

MAKE_TARGETS = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), re.M))
ROLES = {p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()}
PLAYBOOKS = {p.stem for p in (REPO / "playbooks").glob("*.yml")}


def registered_filters():
    names = set()
    for path in (REPO / "plugins" / "filter").glob("*.py"):
        module = importlib.import_module(f"ansible_collections.cps.gpu_cluster.plugins.filter.{path.stem}")
        names.update(module.FilterModule().filters())
    return names


FILTERS = registered_filters()
MODULES = {p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__"}
LOOKUPS = {p.stem for p in (REPO / "plugins" / "lookup").glob("*.py")} if (REPO / "plugins" / "lookup").is_dir() else set()


def test_every_make_target_exists():
    missing = sorted({f"{rel(doc)}: make {target}" for doc in DOCS for span in spans(doc)
                      for target in re.findall(r"(?:^|[\s(])make ([a-z][a-z-]*)", span)
                      if target not in MAKE_TARGETS})
    assert not missing, "make targets the Makefile does not have:\n" + "\n".join(missing)


def test_every_fqcn_names_a_plugin_role_or_playbook():
    known = ROLES | PLAYBOOKS | FILTERS | MODULES | LOOKUPS
    missing = sorted({f"{rel(doc)}: cps.gpu_cluster.{name}" for doc in DOCS
                      for name in re.findall(r"(?<!ansible_collections\.)cps\.gpu_cluster\.([a-z_][a-z0-9_]*)", doc.read_text())
                      if name not in known})
    assert not missing, "no such filter, module, lookup, role or playbook:\n" + "\n".join(missing)


# --- inventory and role variables -------------------------------------------------------------------

def _spec_names(options, out):
    for name, spec in (options or {}).items():
        out.add(name)
        _spec_names((spec or {}).get("options"), out)


def known_variables():
    """Argument specs (every entry point), the roles' defaults and the variables they read, the
    docs/inventory.md table, versions.yml's pins, the playbooks' variables and the names the
    plugins read from hostvars."""
    names = set()
    words = re.compile(r"\b[a-z][a-z0-9_]+\b")
    for spec in (REPO / "roles").glob("*/meta/argument_specs.yml"):
        for entry in (yaml.safe_load(spec.read_text()).get("argument_specs") or {}).values():
            _spec_names(entry.get("options"), names)
    for path in [*(REPO / "roles").glob("*/defaults/*.yml"), *(REPO / "roles").glob("*/vars/*.yml"),
                 *(REPO / "playbooks").rglob("*.yml"), *(REPO / "roles").glob("*/tasks/*.yml")]:
        names.update(words.findall(path.read_text()))
    names.update(re.findall(r"^\|\s*`([a-z0-9_]+)`", (REPO / "docs" / "inventory.md").read_text(), re.M))
    names.update(yaml.safe_load((REPO / "versions.yml").read_text()))
    for path in (REPO / "plugins").rglob("*.py"):
        names.update(re.findall(r"[\"']([a-z][a-z0-9_]+)[\"']", path.read_text()))
    return names


# Names in the variable namespaces that are not variables. Reason each.
NAME_EXCEPTIONS = {
    "k3s_ha": "a molecule scenario (molecule/k3s_ha)",
    "k3s_reset": "a molecule scenario and a module",
}
MOLECULE = {p.name for p in (REPO / "molecule").iterdir() if (p / "molecule.yml").is_file()}
PY_MODULES = {p.stem for p in (REPO / "plugins").rglob("*.py")}


def cited_variables():
    prefixes = ("gpu_cluster_", "k3s_", *(f"{role}_" for role in ROLES))
    for doc in DOCS:
        for span in spans(doc):
            for name in re.findall(r"(?<![\w.$/-])([a-z][a-z0-9_]*)(?![\w/.(-])", span):
                if name.startswith(prefixes) and name not in ROLES:
                    yield doc, name


def test_every_cited_variable_exists():
    known = known_variables()
    others = FILTERS | MODULES | LOOKUPS | PLAYBOOKS | MOLECULE | PY_MODULES | set(NAME_EXCEPTIONS)
    missing = sorted({
        f"{rel(doc)}: {name}" for doc, name in cited_variables()
        if name not in known and name not in others
        and not (name.endswith("_") and any(k.startswith(name) for k in known))})
    assert not missing, ("variables no argument spec, role default, playbook, versions.yml, plugin or "
                         "docs/inventory.md table has:\n" + "\n".join(missing))


# --- versions ------------------------------------------------------------------------------------------

VERSION = re.compile(r"(?<![\w.])(v?\d+\.\d+\.\d+(?:\+k3s\d+)?)(?![\w.])")


def known_versions():
    """versions.yml's pins (images by tag), images pinned in a role's defaults (verify's), the versions
    the code supports or requires (the GPU Operator list, the k3s floor), the Renovate release the tests
    pin, galaxy.yml's own."""
    found = set()
    for pin in yaml.safe_load((REPO / "versions.yml").read_text()).values():
        found.add(str(pin))
        found.add(str(pin).rsplit(":", 1)[-1])
    for defaults in (REPO / "roles").glob("*/defaults/main.yml"):  # images pinned as literals (verify's)
        for name, value in (yaml.safe_load(defaults.read_text()) or {}).items():
            if name.endswith("_image") or "_image_" in name:
                found.update(VERSION.findall(str(value)))
    components = (REPO / "plugins" / "plugin_utils" / "components.py").read_text()
    supported = re.search(r"GPU_OPERATOR_SUPPORTED_VERSIONS\s*=\s*(\([^)]*\)|\[[^\]]*\])", components)
    found.update(ast.literal_eval(supported.group(1)))
    floor = re.search(r"K3S_MIN_VERSION = \((\d+), (\d+), (\d+)\)",
                      (REPO / "plugins" / "plugin_utils" / "inventory_checks.py").read_text())
    found.add("v" + ".".join(floor.groups()))
    renovate = re.search(r'RENOVATE_VERSION = "([^"]+)"', (REPO / "tests" / "integration" / "test_renovate.py").read_text())
    found.add(renovate.group(1))
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    found.add(galaxy["version"])
    for spec in (galaxy.get("dependencies") or {}).values():
        found.update(VERSION.findall(str(spec)))
    return found


# Versions a doc quotes that are not pins: examples of bad input, captured hardware and software
# facts, other projects' versions. Reason each; a pin bumped without its doc fails the test.
VERSION_EXCEPTIONS = {
    ("docs/inventory.md", "v1.33.05+k3s1"): "an example of a refused version (leading zero)",
    ("docs/inventory.md", "1.2.3"): "an example of a version form",
    ("docs/inventory.md", "v1.2.3"): "an example of a version form",
    ("roles/component_delivery/README.md", "1.2.3"): "an example of a version form",
    ("docs/backstage.md", "0.6.2"): "Backstage's own packages, which the template test installs from npm",
    ("docs/backstage.md", "3.2.4"): "Backstage's own packages, which the template test installs from npm",
    ("docs/gpu-pools.md", "v0.93.0"): "the prometheus-operator CRDs kept in tests/fixtures (their origin)",
    ("docs/verify.md", "580.159.04"): "the driver of the real H100 VM the reference figures come from",
    ("docs/lab.md", "172.31.250"): "an address prefix, not a version",
    ("docs/lab.md", "192.168.77"): "an address prefix, not a version",
}


def cited_versions():
    for doc in DOCS:
        for version in VERSION.findall(doc.read_text()):
            yield rel(doc), version


def test_every_quoted_version_is_pinned_or_supported():
    known = known_versions()
    wrong = sorted({f"{doc}: {version}" for doc, version in cited_versions()
                    if version not in known and (doc, version) not in VERSION_EXCEPTIONS})
    assert not wrong, ("versions neither versions.yml nor the supported lists have (a pin bumped without "
                       "its doc?):\n" + "\n".join(wrong))


def test_version_exceptions_are_still_needed():
    stale = sorted(set(VERSION_EXCEPTIONS) - set(cited_versions()))
    assert not stale, f"exceptions no doc quotes any more (remove them): {stale}"


# --- counts -------------------------------------------------------------------------------------------------

NUMBER = r"(?:\d[\d,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty)"
COUNT = re.compile(rf"(?<![\w-]){NUMBER}\s+(?:(?:unit|integration|render|day-2|molecule|k3s)\s+)?"
                   r"(?:tests?|cases|scenarios|test files)\b", re.I)


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_no_doc_quotes_a_count_of_tests(doc):
    counts = COUNT.findall(doc.read_text())
    assert not counts, f"{rel(doc)} quotes counts that go stale; say what runs instead: {counts}"


# --- the checks themselves fail on drift -----------------------------------------------------------------

def test_the_checks_catch_a_renamed_path_a_removed_variable_and_a_bumped_pin(tmp_path):
    doc = REPO / "docs" / "k3s.md"
    assert exists(doc, "playbooks/etcd_snapshot.yml") and not exists(doc, "playbooks/etcd_snapshots.yml")
    assert "gpu_cluster_k3s_version" in known_variables()
    assert "gpu_cluster_k3s_versions" not in known_variables()
    pinned = yaml.safe_load((REPO / "versions.yml").read_text())["k3s_version"]
    assert pinned in known_versions()
    major, minor, rest = pinned.lstrip("v").split(".", 2)
    assert f"v{major}.{int(minor) + 1}.{rest}" not in known_versions()


# --- lists that must name every playbook ---------------------------------------------------------------

@pytest.mark.parametrize(("doc", "form"), [
    ("docs/installing.md", "`cps.gpu_cluster.{}`"),  # every playbook by its FQCN
    ("docs/inventory.md", "`{}`"),  # the playbooks that import preflight
    ("docs/development.md", "`{}`"),  # the layout table's playbooks/ row
])
def test_playbook_lists_name_every_playbook(doc, form):
    text = (REPO / doc).read_text()
    skip = {"docs/inventory.md": {"site", "preflight"}, "docs/development.md": {"site"}}.get(doc, set())
    missing = sorted(p for p in PLAYBOOKS - skip if form.format(p) not in text)
    assert not missing, f"{doc} does not list the playbooks {missing}"
