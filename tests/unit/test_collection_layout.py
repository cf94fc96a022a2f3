"""The collection's own contract: layout, metadata and the conventions every
role and module follows (prefixed variables, argument specs, documentation)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (REPO / "roles").iterdir() if p.is_dir()) if (REPO / "roles").is_dir() else []
MODULES = sorted((REPO / "plugins" / "modules").glob("*.py"))
# Names the issues spell out for the k3s roles as a family (issue 5: ``k3s_airgap_dir``),
# shared by k3s_prereq/k3s_install/k3s_node rather than owned by one of them; issue 11:
# ``k3s_install_bin_dir`` is the one setting for the binary's directory, read by k3s_node too.
K3S_FAMILY_NAMES = {"k3s_airgap_dir", "k3s_token", "k3s_install_bin_dir"}
PHASES = ["preflight", "proxmox_host", "provision", "k3s", "management", "storage", "gpu", "apps", "verify"]


def load(path: Path):
    return yaml.safe_load(path.read_text())


def test_galaxy_metadata():
    galaxy = load(REPO / "galaxy.yml")
    assert galaxy["namespace"] == "cps"
    assert galaxy["name"] == "gpu_cluster"
    for dep in ("kubernetes.core", "community.general", "community.proxmox", "ansible.posix"):
        assert dep in galaxy["dependencies"], f"galaxy.yml must depend on {dep}"


@pytest.mark.parametrize(
    "path",
    [
        "meta/runtime.yml",
        "roles",
        "plugins/modules",
        "plugins/module_utils",
        "plugins/filter",
        "playbooks",
        "inventories/homelab",
        "molecule",
        "terraform",
        "tests/unit",
        "docs",
        "README.md",
        "ansible.cfg",
        "requirements.txt",
        "requirements-dev.txt",
        "requirements.yml",
        ".ci/run",
        "Makefile",
    ],
)
def test_layout(path):
    assert (REPO / path).exists(), f"{path} is part of the collection layout"


def test_ansible_cfg_settings():
    text = (REPO / "ansible.cfg").read_text()
    assert re.search(r"^pipelining\s*=\s*true", text, re.M)
    assert re.search(r"^fact_caching\s*=\s*jsonfile", text, re.M)
    assert re.search(r"^forks\s*=\s*\d+", text, re.M)


def test_requirements_pin_tools():
    dev = (REPO / "requirements-dev.txt").read_text()
    for tool in ("molecule", "molecule-plugins[podman]", "pytest", "pytest-testinfra", "ansible-lint", "kubernetes-validate", "ruff"):
        assert re.search(rf"^{re.escape(tool)}==", dev, re.M), f"{tool} must be pinned in requirements-dev.txt"
    runtime = (REPO / "requirements.txt").read_text()
    for lib in ("ansible", "kubernetes", "proxmoxer"):
        assert re.search(rf"^{lib}==", runtime, re.M), f"{lib} must be pinned in requirements.txt"
    collections = {c["name"] for c in load(REPO / "requirements.yml")["collections"]}
    assert {"kubernetes.core", "community.general", "community.proxmox", "ansible.posix"} <= collections


def test_site_runs_every_phase_in_order():
    site = load(REPO / "playbooks" / "site.yml")
    imports = [play for play in site if "ansible.builtin.import_playbook" in play]
    imported = [Path(play["ansible.builtin.import_playbook"]).stem for play in imports]
    assert imported == PHASES
    # one play of its own: the check that every node answers, right before K3s (issue 43)
    own = [play["name"] for play in site if play not in imports]
    assert len(own) == 1 and site.index(next(p for p in site if p["name"] == own[0])) == PHASES.index("k3s")
    for play, phase in zip(imports, PHASES):
        assert phase in play.get("tags", []), f"phase {phase} must be runnable by tag"
        assert (REPO / "playbooks" / f"{phase}.yml").is_file()


def test_ci_calls_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "make test" in readme
    assert re.search(r"^\s*(exec\s+)?make test\s*$", ci, re.M)


def _defaults(role: Path) -> dict:
    path = role / "defaults" / "main.yml"
    return (load(path) or {}) if path.is_file() else {}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_variables_prefixed_and_specified(role):
    defaults = {k: v for k, v in _defaults(role).items() if not (role.name.startswith("k3s_") and k in K3S_FAMILY_NAMES)}
    for name in defaults:
        assert name.startswith((f"{role.name}_", f"__{role.name}_")), f"{role.name}: default {name} must start with {role.name}_"
    spec_path = role / "meta" / "argument_specs.yml"
    assert spec_path.is_file(), f"{role.name} needs meta/argument_specs.yml"
    specs = load(spec_path)["argument_specs"]
    assert "main" in specs
    options = {}
    for entry in specs.values():
        options.update(entry.get("options") or {})
    for name in defaults:
        if not name.startswith("__"):
            assert name in options, f"{role.name}: {name} is in defaults/main.yml but not in meta/argument_specs.yml"
    for name in options:
        if role.name.startswith("k3s_") and name in K3S_FAMILY_NAMES:
            continue
        assert name.startswith(f"{role.name}_"), f"{role.name}: option {name} must start with {role.name}_"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_main_is_a_table_of_contents(role):
    main = role / "tasks" / "main.yml"
    assert main.is_file()
    tasks = load(main) or []
    for task in tasks:
        keys = set(task) - {"name", "tags", "when", "vars", "become", "no_log"}
        assert keys & {"ansible.builtin.include_tasks", "ansible.builtin.import_tasks", "block", "ansible.builtin.meta"}, (
            f"{role.name}/tasks/main.yml should only include task files, found {sorted(keys)}"
        )


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_module_documentation_complete(module):
    tree = ast.parse(module.read_text())
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    for block in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
        assert block in names, f"{module.name} lacks {block}"
    doc = yaml.safe_load(next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DOCUMENTATION"))
    assert doc["module"] == module.stem
    assert doc.get("short_description") and doc.get("description")


# --------------------------------------------------------------------------- where code runs (issue 28)
COLLECTION_IMPORT = re.compile(r"ansible_collections\.cps\.gpu_cluster\.plugins\.(module_utils|plugin_utils)(?:\.(\w+))?")


def collection_imports(path):
    """{(directory, name)} of the collection files one Python file imports (absolute imports, the
    collection's one documented import path; ``from ...module_utils import a, b`` counts a and b)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        match = COLLECTION_IMPORT.fullmatch(node.module)
        if match:
            names = [match.group(2)] if match.group(2) else [alias.name for alias in node.names]
            found.update((match.group(1), name) for name in names)
    return found


def module_payload(module):
    """Every collection file a module ships to a host: its imports, and theirs."""
    todo, seen = list(collection_imports(module)), set()
    while todo:
        item = todo.pop()
        if item not in seen:
            seen.add(item)
            todo += collection_imports(REPO / "plugins" / item[0] / f"{item[1]}.py")
    return seen


MODULES = sorted((REPO / "plugins" / "modules").glob("*.py"))
PLUGIN_FILES = sorted((REPO / "plugins").rglob("*.py"))


@pytest.mark.parametrize("path", PLUGIN_FILES, ids=lambda p: str(p.relative_to(REPO / "plugins")))
def test_plugins_import_each_other_by_one_path(path):
    """One import path a reader and a tool can follow: ansible_collections.cps.gpu_cluster.plugins.<dir>.<name>."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    relative = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == [], f"{path.name}: relative import on line(s) {relative}"
    assert "sys.path" not in path.read_text(encoding="utf-8"), f"{path.name} changes sys.path"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_modules_ship_no_controller_code(module):
    controller = sorted(name for directory, name in module_payload(module) if directory == "plugin_utils")
    assert controller == [], f"{module.name} would ship controller-only code to hosts: plugins/plugin_utils/{controller}"


def test_module_utils_holds_only_what_modules_import():
    shipped = set().union(*(module_payload(module) for module in MODULES))
    present = {("module_utils", p.stem) for p in (REPO / "plugins" / "module_utils").glob("*.py") if p.stem != "__init__"}
    assert present - shipped == set(), (
        f"no module imports {sorted(name for _d, name in present - shipped)}: controller-only code goes to "
        "plugins/plugin_utils/ (docs/development.md, Where code lives)")


def test_the_payload_walk_sees_an_import_of_controller_code(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from ansible_collections.cps.gpu_cluster.plugins.module_utils import nvidia_smi\n"
                      "from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.vllm import vllm_spec\n")
    payload = module_payload(module)
    assert ("module_utils", "nvidia_smi") in payload and ("plugin_utils", "vllm") in payload
    assert ("plugin_utils", "gpu_pools") in payload  # imported by plugin_utils/vllm.py in turn


def registered_filters():
    """{filter name: plugin file} of every FilterModule in plugins/filter/."""
    names = {}
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module(f"ansible_collections.cps.gpu_cluster.plugins.filter.{path.stem}")
        names.update((name, path.name) for name in module.FilterModule().filters())
    return names


def test_every_filter_has_a_caller():
    """A published filter is a promise (issue 28): each one is called by a role, a playbook or a
    scenario, or documented for users in docs/ or the README. Dead filters are deleted."""
    callers = [p for p in (REPO / "roles").rglob("*") if p.suffix in (".yml", ".j2", ".md")]
    callers += list((REPO / "playbooks").rglob("*.yml")) + list((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    callers += list((REPO / "molecule").rglob("*.yml"))
    text = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in callers if path.is_file())
    uncalled = sorted(f"{name} ({source})" for name, source in registered_filters().items()
                      if not re.search(rf"\b{re.escape(name)}\b", text))
    assert uncalled == [], f"filters nobody calls: {uncalled}"
