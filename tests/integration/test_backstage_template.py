"""templates/backstage: the Backstage software template (issue 16, "Self-service").

- template.yaml validates against Backstage's own Template v1beta3 schema (vendored with the catalog
  Entity schemas it references, tests/fixtures/backstage/, origins in tests/fixtures/SOURCES.md);
- every ``${{ values.X }}`` of the skeleton is a value the fetch:template step passes, every value
  is a declared parameter passed unchanged, and every parameter is used;
- the skeleton rendered with sample answers (validated against the template's own forms first) into
  a directory outside the collection passes the real preflight, run with the command the generated
  README documents; a bad answer set is refused by preflight with its message.

Rendering: Backstage renders the skeleton with nunjucks (nunjitsu, its nunjucks subset, since
scaffolder-backend 4.x), variables written ``${{ ... }}``. Here jinja2 renders it with the same
delimiters for preflight, and the last test checks that both Backstage engines (vendored, run with
node) give the same bytes. The skeleton keeps to what both engines treat alike:
``{% for %}`` (with ``{% else %}``, ``loop.index``/``loop.index0``), ``{% if %}``, ``{% set %}``
(plain and block form), dict literals and lookups, ``==``/``<``/``not``/``and``, the ``length``
filter, and ``{%-`` whitespace control; no Python or JS methods, no filters one engine lacks.
``finalize`` prints booleans as JavaScript does (``true``/``false``) and a missing value as an
empty string, like nunjucks.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2
import jsonschema
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.components import GPU_OPERATOR_SUPPORTED_VERSIONS
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.gpu_pools import MODEL_DEVICE_IDS
from referencing import Registry
from referencing.jsonschema import DRAFT7

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_DIR = REPO / "templates" / "backstage"
SKELETON = TEMPLATE_DIR / "skeleton"
SCHEMAS = REPO / "tests" / "fixtures" / "backstage"
TEMPLATE = yaml.safe_load((TEMPLATE_DIR / "template.yaml").read_text())
VERSIONS = yaml.safe_load((REPO / "versions.yml").read_text())
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
VALUE_RE = re.compile(r"\bvalues\.([A-Za-z_][A-Za-z0-9_]*)")
PARAMETER_RE = re.compile(r"\bparameters\.([A-Za-z_][A-Za-z0-9_]*)")


# Backstage's entity name rule (@backstage/catalog-model KubernetesValidatorFunctions.isValidObjectName),
# which the catalog applies besides the JSON schemas.
ENTITY_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def entity_validator(schema_id: str) -> jsonschema.Draft7Validator:
    schemas = [json.loads(path.read_text()) for path in SCHEMAS.glob("*.schema.json")]
    registry = Registry().with_resources([(schema["$id"], DRAFT7.create_resource(schema)) for schema in schemas])
    return jsonschema.Draft7Validator(next(schema for schema in schemas if schema["$id"] == schema_id), registry=registry)


def template_validator() -> jsonschema.Draft7Validator:
    return entity_validator("TemplateV1beta3")


def valid_entity_name(name) -> bool:
    return isinstance(name, str) and len(name) <= 63 and ENTITY_NAME_RE.fullmatch(name) is not None


def pages() -> list:
    return TEMPLATE["spec"]["parameters"]


def declared_parameters() -> dict:
    """Every parameter of every form page, with its schema (those a dependency adds included)."""
    declared = {}
    for page in pages():
        declared.update(page.get("properties", {}))
        for dependency in page.get("dependencies", {}).values():
            for branch in dependency.get("oneOf", []):
                for name, schema in branch.get("properties", {}).items():
                    declared.setdefault(name, schema)
    return declared


def step(step_id: str) -> dict:
    return next(s for s in TEMPLATE["spec"]["steps"] if s["id"] == step_id)


def skeleton_files() -> list:
    return sorted(p for p in SKELETON.rglob("*") if p.is_file())


# --- the template itself ---------------------------------------------------------------------------

def test_template_validates_against_backstage_schema():
    validator = template_validator()
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(TEMPLATE)]
    assert not errors
    # The schema is live: a template without steps, or with a wrong kind, is refused.
    broken = copy.deepcopy(TEMPLATE)
    del broken["spec"]["steps"]
    broken["kind"] = "Component"
    messages = " ".join(e.message for e in validator.iter_errors(broken))
    assert valid_entity_name(TEMPLATE["metadata"]["name"])
    assert "'steps' is a required property" in messages and "'Component' is not one of ['Template']" in messages


def test_form_pages_are_valid_json_schemas():
    for page in pages():
        jsonschema.Draft7Validator.check_schema(page)
        assert set(page.get("required", [])) <= set(declared_parameters()), page["title"]


def test_steps_are_a_real_scaffolder_flow():
    actions = [s["action"] for s in TEMPLATE["spec"]["steps"]]
    assert actions == ["fetch:template", "publish:github", "catalog:register"]
    assert step("fetch")["input"]["url"] == "./skeleton"
    assert step("register")["input"]["catalogInfoPath"] == "/catalog-info.yaml"
    assert (SKELETON / "catalog-info.yaml.njk").is_file()


def test_every_skeleton_value_is_a_declared_parameter_and_every_parameter_is_used():
    values = step("fetch")["input"]["values"]
    declared = declared_parameters()
    # Each value is its parameter, passed unchanged.
    assert {k: v for k, v in values.items() if v != f"${{{{ parameters.{k} }}}}"} == {}
    used = set()
    for path in skeleton_files():
        used |= set(VALUE_RE.findall(path.read_text()))
        used |= set(VALUE_RE.findall(str(path.relative_to(SKELETON))))
    assert sorted(used - set(values)) == [], "the skeleton uses values the fetch step does not pass"
    assert sorted(set(values) - used) == [], "the fetch step passes values the skeleton never uses"
    other_steps = json.dumps([s for s in TEMPLATE["spec"]["steps"] if s["id"] != "fetch"])
    used_parameters = set(values) | set(PARAMETER_RE.findall(other_steps))
    assert sorted(used_parameters - set(declared)) == [], "parameters used but not declared"
    assert sorted(set(declared) - used_parameters) == [], "parameters declared but never used"


def test_gpu_models_and_pins_follow_the_collection():
    declared = declared_parameters()
    models = declared["gpuWorkers"]["items"]["properties"]["gpuModel"]["enum"]
    assert models == list(MODEL_DEVICE_IDS)
    table = dict(re.findall(r'"([^"]+)": "(10de:[0-9a-f]{4})"', (SKELETON / "inventory/group_vars/proxmox_hosts.yml.njk").read_text()))
    assert table == MODEL_DEVICE_IDS
    assert sorted(declared["gpuOperatorVersion"]["enum"]) == sorted(GPU_OPERATOR_SUPPORTED_VERSIONS)
    assert declared["gpuOperatorVersion"]["default"] == VERSIONS["gpu_operator_chart"]
    assert declared["k3sVersion"]["default"] == VERSIONS["k3s_version"]


# --- rendering the skeleton -----------------------------------------------------------------------

def js_string(value):
    """nunjucks prints what JavaScript's String() gives: true/false, '' for undefined/null."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else value


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(SKELETON)),
    variable_start_string="${{", variable_end_string="}}",
    keep_trailing_newline=True, autoescape=False, finalize=js_string,
)


def answers_with_defaults(answers: dict) -> dict:
    """What the form submits: the answers, defaults for the fields left alone; each page validated."""
    filled = dict(answers)
    for page in pages():
        for name, schema in page.get("properties", {}).items():
            if name not in filled and "default" in schema:
                filled[name] = copy.deepcopy(schema["default"])
        errors = [f"{page['title']}: {list(e.absolute_path)} {e.message}" for e in jsonschema.Draft7Validator(page).iter_errors(filled)]
        assert not errors, errors
    return filled


def render(answers: dict, dest: Path) -> Path:
    """fetch:template with templateFileExtension: *.njk rendered (extension dropped), the rest copied."""
    parameters = answers_with_defaults(answers)
    values = {key: parameters[PARAMETER_RE.search(expr).group(1)]
              for key, expr in step("fetch")["input"]["values"].items()
              if PARAMETER_RE.search(expr).group(1) in parameters}
    for path in skeleton_files():
        relative = path.relative_to(SKELETON)
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".njk":
            target = target.with_suffix("")
            target.write_text(ENV.get_template(relative.as_posix()).render(values=values))
        else:
            shutil.copyfile(path, target)
    return dest


COMMON = {
    "dnsServers": ["1.1.1.1"], "proxmoxTokenId": "terraform@pve!gpu-cluster",
    "owner": "group:default/platform", "repoUrl": "github.com?owner=homelab&repo=gpu-cluster",
}
ONE_SERVER = dict(
    COMMON, clusterName="tiny", nodeNetwork="192.168.50.0/24", gateway="192.168.50.1", apiVip="192.168.50.100",
    proxmoxAddress="192.168.50.2", controlPlaneCount=1, controlPlaneAddresses=["192.168.50.11"],
    gpuWorkers=[{"address": "192.168.50.21", "gpuModel": "NVIDIA H100 PCIe", "gpuCount": 1, "pciAddresses": ["0000:17:00.0"]}],
    nfsServer="192.168.50.30", jupyterhubEnabled=True, llmEnabled=True, provisionEnabled=False,
)
THREE_SERVERS = dict(
    COMMON, clusterName="lab3", domain="lab.lan", nodeNetwork="10.20.0.0/24", gateway="10.20.0.1", apiVip="10.20.0.100",
    dnsServers=["10.20.0.1", "9.9.9.9"], proxmoxAddress="10.20.0.2", proxmoxName="pve7", controlPlaneCount=3,
    controlPlaneAddresses=["10.20.0.11", "10.20.0.12", "10.20.0.13"], infraNodeAddresses=["10.20.0.31"], appNodeAddresses=["10.20.0.41"],
    gpuWorkers=[
        {"address": "10.20.0.21", "gpuModel": "NVIDIA A100 80GB PCIe", "gpuCount": 2, "pciAddresses": ["0000:17:00.0", "0000:31:00.0"]},
        {"address": "10.20.0.22", "gpuModel": "NVIDIA L40S", "gpuCount": 1, "pciAddresses": ["0000:4b:00.0"]},
    ],
    nfsServer="nas.lab.lan", nfsPath="/tank/k3s", llmEnabled=True, llmName="llama", llmModel="meta-llama/Llama-3.1-8B-Instruct", llmGpu=2,
    managementEnabled=True, managementMode="rancher", rancherHostname="rancher.lab.lan", monitoringEnabled=True,
)
# Two workers of one model (its id listed once) and a GeForce card's audio function; no NFS, CPU only otherwise.
SAME_MODEL = dict(
    COMMON, clusterName="geforce", nodeNetwork="172.16.5.0/24", gateway="172.16.5.1", apiVip="172.16.5.100",
    proxmoxAddress="172.16.5.2", controlPlaneCount=1, controlPlaneAddresses=["172.16.5.11"],
    gpuWorkers=[
        {"address": "172.16.5.21", "gpuModel": "NVIDIA GeForce RTX 4090", "gpuCount": 1, "pciAddresses": ["01:00.0"]},
        {"address": "172.16.5.22", "gpuModel": "NVIDIA GeForce RTX 4090", "gpuCount": 1, "pciAddresses": ["02:00.0"]},
    ],
    extraPciIds=["10de:22ba"], nfsEnabled=False, monitoringEnabled=False, managementEnabled=True, managementMode="fleet",
)
# The VIP outside the node subnet and a GPU worker on a control-plane node's address.
BAD = dict(ONE_SERVER, clusterName="bad", apiVip="192.168.60.100",
           gpuWorkers=[dict(ONE_SERVER["gpuWorkers"][0], address="192.168.50.11")])

GOOD = {"one-server": ONE_SERVER, "three-servers": THREE_SERVERS, "same-model": SAME_MODEL}


def run_preflight(repository: Path) -> subprocess.CompletedProcess:
    """The generated README's command, from the repository's root: the collection by its FQCN."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default",
               PATH="{}:{}".format(Path(ANSIBLE_PLAYBOOK).parent, os.environ.get("PATH", "")))
    return subprocess.run([ANSIBLE_PLAYBOOK, "cps.gpu_cluster.preflight", "-i", "inventory"], cwd=repository, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict:
    """Each answer set rendered outside the collection and checked by preflight, in parallel."""
    answer_sets = dict(GOOD, bad=BAD)
    repositories = {}
    for name, answers in answer_sets.items():
        repositories[name] = render(answers, tmp_path_factory.mktemp(f"backstage-{name}") / "repo")
        assert REPO not in repositories[name].resolve().parents
        if answers.get("managementEnabled") and answers.get("managementMode", "rancher") == "rancher":
            # the README's "Before the first run": the bootstrap password in the vault (decrypted here)
            (repositories[name] / "inventory" / "group_vars" / "all" / "vault.yml").write_text(
                "vault_gpu_cluster_rancher_bootstrap_password: test-bootstrap-pw-0123\n")
    with ThreadPoolExecutor(max_workers=len(repositories)) as pool:
        results = dict(zip(repositories, pool.map(run_preflight, repositories.values())))
    return {name: (repositories[name], results[name]) for name in repositories}


def load(repository: Path, name: str):
    return yaml.safe_load((repository / "inventory" / name).read_text())


def test_the_readme_documents_the_command_the_test_runs(rendered):
    readme = (rendered["one-server"][0] / "README.md").read_text()
    assert "ansible-playbook cps.gpu_cluster.preflight -i inventory" in readme
    assert "ansible-galaxy collection install cps.gpu_cluster" in readme
    assert "tiny" in readme and "${{" not in readme


@pytest.mark.parametrize("name", sorted(GOOD))
def test_rendered_inventory_passes_preflight(rendered, name):
    repository, result = rendered[name]
    for path in repository.rglob("*"):
        assert "${{" not in (path.read_text() if path.is_file() else ""), path
        assert path.suffix != ".njk", path
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    answers = GOOD[name]
    servers, gpus = len(answers["controlPlaneAddresses"]), len(answers["gpuWorkers"])
    agents = gpus + len(answers.get("infraNodeAddresses", [])) + len(answers.get("appNodeAddresses", []))
    assert (f"Inventory OK: cluster {answers['clusterName']}, {servers} server(s), {agents} agent(s) ({gpus} GPU worker(s)), "
            "1 Proxmox host(s)") in result.stdout


def test_rendered_inventories_hold_the_answers(rendered):
    repository = rendered["three-servers"][0]
    cluster = load(repository, "hosts.yml")["all"]["children"]["k3s_cluster"]["children"]
    assert cluster["k3s_servers"]["hosts"] == {f"cp{i}": {"ansible_host": f"10.20.0.1{i}"} for i in (1, 2, 3)}
    workers = cluster["k3s_agents"]["children"]
    assert workers["gpu_workers"]["hosts"]["wk-gpu1"] == {
        "ansible_host": "10.20.0.21", "gpu_cluster_gpu_model": "NVIDIA A100 80GB PCIe", "gpu_cluster_gpu_count": 2,
        "gpu_cluster_gpu_pci_mappings": ["wk-gpu1-gpu0", "wk-gpu1-gpu1"]}
    assert workers["infra_nodes"]["hosts"] == {"wk-infra1": {"ansible_host": "10.20.0.31"}}
    assert workers["app_nodes"]["hosts"] == {"wk-app1": {"ansible_host": "10.20.0.41"}}
    proxmox = load(repository, "group_vars/proxmox_hosts.yml")
    assert proxmox["gpu_cluster_gpu_pci_ids"] == ["10de:20b5", "10de:26b9"]
    assert proxmox["gpu_cluster_gpu_pci_devices"][2] == {"name": "wk-gpu2-gpu0", "address": "0000:4b:00.0"}
    assert proxmox["gpu_cluster_proxmox_api_url"] == "https://10.20.0.2:8006/api2/json"
    platforms = load(repository, "group_vars/all/platforms.yml")
    assert platforms["gpu_cluster_management_enabled"] is True and platforms["gpu_cluster_rancher_hostname"] == "rancher.lab.lan"
    assert platforms["gpu_cluster_llm_models"] == [{"name": "llama", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": 2}]
    assert load(repository, "group_vars/all/main.yml")["gpu_cluster_nfs_path"] == "/tank/k3s"

    same = rendered["same-model"][0]
    assert load(same, "group_vars/proxmox_hosts.yml")["gpu_cluster_gpu_pci_ids"] == ["10de:2684", "10de:22ba"]
    assert "gpu_cluster_nfs_server" not in load(same, "group_vars/all/main.yml")
    assert load(same, "group_vars/all/platforms.yml")["gpu_cluster_management_mode"] == "fleet"
    tiny = load(rendered["one-server"][0], "hosts.yml")["all"]["children"]["k3s_cluster"]["children"]["k3s_agents"]["children"]
    assert tiny["infra_nodes"] == {"hosts": {}} and tiny["app_nodes"] == {"hosts": {}}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_rendered_catalog_entity_is_valid(rendered, name):
    """catalog:register reads catalog-info.yaml: a Resource entity by Backstage's schemas and name rule."""
    entity = yaml.safe_load((rendered[name][0] / "catalog-info.yaml").read_text())
    validator = entity_validator("ResourceV1alpha1")
    assert [e.message for e in validator.iter_errors(entity)] == []
    assert valid_entity_name(entity["metadata"]["name"]) and entity["metadata"]["name"] == GOOD[name]["clusterName"]
    assert entity["spec"]["owner"] == "group:default/platform"
    # The schema is live: a Resource without its owner is refused.
    del entity["spec"]["owner"]
    assert "'owner' is a required property" in [e.message for e in validator.iter_errors(entity)]


def test_the_form_asks_for_the_nfs_server_when_nfs_is_on():
    without_server = {k: v for k, v in ONE_SERVER.items() if k != "nfsServer"}
    with pytest.raises(AssertionError, match=r"Platforms: .* is not valid under any of the given schemas"):
        answers_with_defaults(without_server)
    assert "nfsServer" not in answers_with_defaults(dict(without_server, nfsEnabled=False))


def test_the_form_keeps_cluster_names_valid_entity_names():
    pattern = re.compile(declared_parameters()["clusterName"]["pattern"])
    for name in ("a", "homelab", "x" * 63, "lab-3"):
        assert pattern.search(name) and valid_entity_name(name), name
    assert not pattern.search("x" * 64) and not valid_entity_name("x" * 64)


def test_bad_answers_are_refused_by_preflight(rendered):
    result = rendered["bad"][1]
    assert result.returncode != 0
    assert "The inventory has 2 problem(s); fix each and run again:" in result.stdout
    assert ("- gpu_cluster_api_vip 192.168.60.100 is outside gpu_cluster_node_network 192.168.50.0/24; "
            "pick an address inside the node network") in result.stdout
    assert "- cp1, wk-gpu1: share the IP 192.168.50.11; give every host its own address" in result.stdout


def test_the_form_holds_the_control_plane_to_1_or_3():
    with pytest.raises(AssertionError, match=r"Control plane and CPU workers: .* is not valid under any of the given schemas"):
        answers_with_defaults(dict(ONE_SERVER, controlPlaneCount=3))
    with pytest.raises(AssertionError, match=r"\['controlPlaneCount'\] 2 is not one of \[1, 3\]"):
        answers_with_defaults(dict(ONE_SERVER, controlPlaneCount=2, controlPlaneAddresses=["192.168.50.11", "192.168.50.12"]))


# --- the same skeleton rendered by Backstage's engines ----------------------------------------------

# Backstage's scaffolder rendered with nunjucks 3.2 (SecureTemplater: autoescape off, variables
# ${{ ... }}); @backstage/plugin-scaffolder-backend 4.x renders with nunjitsu, a nunjucks subset whose
# default variable delimiters are ${{ ... }}. Both are vendored (tests/fixtures/SOURCES.md).
ENGINES = {
    "nunjucks-3.2.4": (SCHEMAS / "nunjucks-3.2.4" / "nunjucks.min.js", """
const nunjucks = require(process.argv[1]);
const env = new nunjucks.Environment([], {autoescape: false, tags: {variableStart: '${{', variableEnd: '}}'}});
const render = (source, context) => env.renderString(source, context);"""),
    "nunjitsu-0.6.2": (SCHEMAS / "nunjitsu-0.6.2" / "index.cjs", """
const renderer = require(process.argv[1]).createTemplateRenderer();
const render = (source, context) => renderer.render(source, context);"""),
}
RENDER_ALL = """
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {};
for (const [name, source] of Object.entries(input.sources)) out[name] = render(source, {values: input.values});
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", sorted(dict(GOOD, bad=BAD)))
def test_backstage_engines_render_the_skeleton_as_jinja_does(name, engine, tmp_path):
    """The jinja2 rendering above stands for Backstage's engine only if both give the same bytes."""
    node = shutil.which("node")
    if not node:
        pytest.skip("no node on PATH (scripts/install-host-deps.sh installs nodejs): the Backstage engines are not compared with jinja2")
    module, setup = ENGINES[engine]
    answers = dict(GOOD, bad=BAD)[name]
    repository = render(answers, tmp_path / "repo")
    parameters = answers_with_defaults(answers)
    values = {key: parameters[PARAMETER_RE.search(expr).group(1)] for key, expr in step("fetch")["input"]["values"].items()
              if PARAMETER_RE.search(expr).group(1) in parameters}
    sources = {p.relative_to(SKELETON).as_posix(): p.read_text() for p in skeleton_files() if p.suffix == ".njk"}
    result = subprocess.run([node, "-e", setup + RENDER_ALL, str(module)], input=json.dumps({"values": values, "sources": sources}),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    by_engine = json.loads(result.stdout)
    assert len(by_engine) == len(sources) >= 9
    for relative, text in by_engine.items():
        assert text == (repository / relative[:-len(".njk")]).read_text(), relative
