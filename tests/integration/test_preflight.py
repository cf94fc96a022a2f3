"""playbooks/preflight.yml for real: every bad inventory in preflight_cases.yml
fails with its own message, the homelab inventory and the valid layouts of the
table (``passes: true``) pass, and no host but localhost is ever touched.

Each case is the homelab inventory copied to a temporary directory with the
case's patch applied (a JSON merge patch per file), then
``ansible-playbook playbooks/preflight.yml -i <that directory>``. The runs go
in parallel threads so the whole table stays fast.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HOMELAB = REPO / "inventories" / "homelab"
# The decrypted vault a homelab user keeps beside the inventory (docs/getting-started.md section 4):
# the homelab switches Rancher and Fleet on, whose phase needs the bootstrap password and the Git token.
VAULT = REPO / "tests" / "fixtures" / "homelab-vault.yml"
# What a user's control node has besides (docs/getting-started.md, section 1): helm and terraform on PATH,
# as stand-ins that answer only the version questions preflight asks (run_needs)
TOOLS = REPO / "tests" / "fixtures" / "tools"
TOOL_PATH = f"{TOOLS / 'helm-cli'}:{TOOLS / 'terraform-cli'}"
CASES = yaml.safe_load((Path(__file__).parent / "preflight_cases.yml").read_text())
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
GOOD = "homelab"
BAD = [case for case in CASES if not case.get("passes")]
VALID = [case for case in CASES if case.get("passes")]


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch: mappings merge, None deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def materialise(patch: dict, dest: Path, vault: bool = True) -> Path:
    """Copy the homelab inventory (with its vault's values, unless ``vault`` is false) to dest and
    apply patch; returns the inventory directory."""
    inventory = dest / "inventory"
    shutil.copytree(HOMELAB, inventory)
    if vault:
        shutil.copy(VAULT, inventory / "group_vars" / "all" / "vault.yml")
    for name, file_patch in (patch or {}).items():
        path = inventory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        current = yaml.safe_load(path.read_text()) if path.exists() else {}
        path.write_text(yaml.safe_dump(merge_patch(current or {}, file_patch), sort_keys=False))
    return inventory


def run_preflight(inventory: Path, playbook: str = "playbooks/preflight.yml", *args: str,
                  path: str | None = None) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PATH=path if path is not None else f"{TOOL_PATH}:{os.environ.get('PATH', '')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
        ANSIBLE_INJECT_FACT_VARS="false",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_STDOUT_CALLBACK="default",
    )
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, playbook, "-i", str(inventory), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    """Run preflight once per case (and once on the homelab), in parallel."""
    jobs = {GOOD: materialise({}, tmp_path_factory.mktemp(GOOD))}
    for case in CASES:
        jobs[case["id"]] = materialise(case["patch"], tmp_path_factory.mktemp(case["id"]))
    with ThreadPoolExecutor(max_workers=max(2, min(6, (os.cpu_count() or 2) * 2))) as pool:
        futures = {name: pool.submit(run_preflight, inventory) for name, inventory in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def recap_hosts(output: str) -> list[str]:
    """Host names listed under PLAY RECAP."""
    recap = output.split("PLAY RECAP", 1)[1] if "PLAY RECAP" in output else ""
    return re.findall(r"^(\S+)\s+:\s+ok=", recap, re.M)


def test_table_is_large_and_distinct():
    ids = [case["id"] for case in CASES]
    messages = [case["message"] for case in CASES]
    assert len(BAD) >= 15
    assert VALID, "the table keeps valid layouts (passes: true) too"
    assert len(set(ids)) == len(ids), "case ids must be unique"
    assert len(set(messages)) == len(messages), "each case must have its own message"


def test_merge_patch():
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": [1]}}) == {"a": {"c": 2, "d": [1]}}


def test_homelab_inventory_passes(results):
    result = results[GOOD]
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Inventory OK: cluster homelab, 3 server(s), 4 agent(s) (4 GPU worker(s)), 1 Proxmox host(s)" in output
    assert "WARNING" not in output, output
    assert recap_hosts(output) == ["localhost"]


@pytest.mark.parametrize("case", VALID, ids=[case["id"] for case in VALID])
def test_valid_layout_passes(results, case):
    result = results[case["id"]]
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"preflight refused the valid layout {case['id']}:\n{output}"
    assert "Inventory OK" in output, output
    assert case["message"] in output, f"expected {case['message']!r} in:\n{output}"
    assert recap_hosts(output) == ["localhost"], output


@pytest.mark.parametrize("case", BAD, ids=[case["id"] for case in BAD])
def test_bad_inventory_fails_with_its_message(results, case):
    result = results[case["id"]]
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"preflight passed an inventory with {case['id']}:\n{output}"
    assert "The inventory has" in output, f"preflight did not fail on its check:\n{output}"
    assert case["message"] in output, f"expected {case['message']!r} in:\n{output}"
    # Touching no host: only localhost ran anything; the homelab addresses are unreachable here.
    assert recap_hosts(output) == ["localhost"], output
    assert "UNREACHABLE" not in output


def test_homelab_without_its_vault_is_refused_naming_each_secret(tmp_path):
    """Issue 43: the homelab switches Rancher and Fleet on; without the vault the management phase would
    refuse (roles/management/tasks/preflight.yml: management_problems with secrets_needed), after the VMs
    and K3s existed. Preflight (and site.yml's) refuses it before anything is touched, naming each
    variable. (render.yml needs no vault: the render tier renders this homelab without one; which
    phase needs which secrets: tests/unit/plugins/plugin_utils/test_secrets_needed.py.)"""
    inventory = materialise({}, tmp_path, vault=False)
    for playbook in ("playbooks/preflight.yml", "playbooks/site.yml", "playbooks/management.yml"):
        result = run_preflight(inventory, playbook)
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert "The inventory has 2 problem(s)" in output, output
        assert "gpu_cluster_rancher_bootstrap_password must be set (vaulted, at least 12 characters): " \
               "playbooks/management.yml needs it" in output, output
        assert "gpu_cluster_fleet_git_username needs gpu_cluster_fleet_git_password" in output, output
        assert re.findall(r"^PLAY \[([^\]]+)\]", output, re.M) == ["Preflight"], output
        assert recap_hosts(output) == ["localhost"], output


def test_a_short_vaulted_password_is_refused_without_its_value(tmp_path):
    """The refusal names the variable, never its value (issue 43: a refusal never shows a secret)."""
    inventory = materialise({"group_vars/all/vault.yml": {"vault_gpu_cluster_rancher_bootstrap_password": "tiny-s3cret"}},
                            tmp_path)
    result = run_preflight(inventory)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "gpu_cluster_rancher_bootstrap_password must be set (vaulted, at least 12 characters)" in output, output
    assert "tiny-s3cret" not in output


def _only_terraform(tmp_path: Path, version: str = "1.9.8") -> str:
    """A PATH with the system's directories and a terraform of ``version``, and no helm."""
    tools = tmp_path / "tools"
    tools.mkdir()
    stand_in = (TOOLS / "terraform-cli" / "terraform").read_text().replace('"terraform_version":"1.9.8"', f'"terraform_version":"{version}"')
    (tools / "terraform").write_text(stand_in)
    (tools / "terraform").chmod(0o755)
    path = f"{tools}:/usr/bin:/bin"
    if shutil.which("helm", path=path):
        pytest.skip("this machine has helm in /usr/bin")
    return path


def test_a_run_without_helm_is_refused_before_anything_is_touched(tmp_path):
    """Issue 43: the homelab delivers directly (gpu_cluster_delivery: direct) and manages with Rancher, so
    storage, gpu, apps and management install charts with helm (roles/component_delivery/tasks/helm_check.yml
    fails there, after K3s exists). Preflight refuses first, naming the phases and both ways out; with
    fleet delivery only the management phase still needs it (Rancher is installed directly in both modes)."""
    inventory = materialise({}, tmp_path)
    path = _only_terraform(tmp_path)
    result = run_preflight(inventory, path=path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "no helm CLI on the control node (helm is not on PATH): the storage, gpu, apps and management phases of this " \
           "run install Helm charts with it (gpu_cluster_delivery: direct); install it (https://helm.sh/docs/intro/install/), " \
           "or set gpu_cluster_delivery: fleet" in output, output
    assert recap_hosts(output) == ["localhost"], output
    fleet = run_preflight(inventory, "playbooks/preflight.yml", "-e", "gpu_cluster_delivery=fleet", path=path)
    assert "no helm CLI on the control node (helm is not on PATH): the management phase of this run installs" \
           in fleet.stdout, fleet.stdout
    # site.yml --tags preflight runs no phase: nothing to install with
    tagged = run_preflight(inventory, "playbooks/site.yml", "--tags", "preflight", path=path)
    assert tagged.returncode == 0 and "Inventory OK" in tagged.stdout, tagged.stdout + tagged.stderr


def test_terraform_older_than_the_module_needs_is_refused(tmp_path):
    """terraform/proxmox/versions.tf says required_version >= 1.5.0: Terraform 1.4 refuses the module at
    init (after the Proxmox host phase has run); preflight says so first."""
    path = _only_terraform(tmp_path, "1.4.6")
    shutil.copy(TOOLS / "helm-cli" / "helm", Path(path.split(":", maxsplit=1)[0]) / "helm")
    result = run_preflight(materialise({}, tmp_path), path=path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "terraform is Terraform 1.4.6; terraform/proxmox needs >= 1.5.0 (its required_version)" in output, output


def test_site_stops_after_a_failed_preflight(tmp_path):
    """site.yml with a bad inventory runs no phase after preflight, so no host is touched."""
    case = next(case for case in CASES if case["id"] == "two_servers")
    result = run_preflight(materialise(case["patch"], tmp_path), playbook="playbooks/site.yml")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert case["message"] in output
    assert re.findall(r"^PLAY \[([^\]]+)\]", output, re.M) == ["Preflight"], output
    assert recap_hosts(output) == ["localhost"]


PHASE_PLAYBOOKS = ["proxmox_host", "provision", "k3s", "storage", "gpu", "apps", "verify",
                   "upgrade", "reset", "add_node", "etcd_snapshot", "render"]


@pytest.fixture(scope="module")
def phase_results(tmp_path_factory) -> dict:
    """Every phase and day-2 playbook run on the two-server inventory, in parallel."""
    case = next(case for case in CASES if case["id"] == "two_servers")
    inventory = materialise(case["patch"], tmp_path_factory.mktemp("phases"))
    with ThreadPoolExecutor(max_workers=max(2, min(6, (os.cpu_count() or 2) * 2))) as pool:
        futures = {name: pool.submit(run_preflight, inventory, f"playbooks/{name}.yml") for name in PHASE_PLAYBOOKS}
        return {name: future.result() for name, future in futures.items()}, case["message"]


@pytest.mark.parametrize("name", PHASE_PLAYBOOKS)
def test_every_phase_playbook_runs_preflight_first(phase_results, name):
    """Each phase playbook imports preflight first: a bad inventory stops it before any host is touched."""
    results, message = phase_results
    output = results[name].stdout + results[name].stderr
    assert results[name].returncode != 0, output
    assert message in output, output
    assert re.findall(r"^PLAY \[([^\]]+)\]", output, re.M) == ["Preflight"], output
    assert recap_hosts(output) == ["localhost"], output


def test_site_checks_the_inventory_once(tmp_path):
    """site.yml imports preflight and every phase imports it again: the inventory is checked once per run."""
    result = run_preflight(materialise({}, tmp_path), "playbooks/site.yml", "--tags", "preflight")
    output = result.stdout + result.stderr
    assert output.count("Inventory OK:") == 1, output
    assert output.count("TASK [Collect the inventory's problems and warnings]") == 1, output
    assert "UNREACHABLE" not in output


@pytest.mark.parametrize("limit", ["wk-gpu1", "k3s_servers"])
def test_limit_without_localhost_still_runs_preflight(tmp_path, limit):
    """--limit that leaves the control node out still checks the inventory first (once, on the
    controller: the limited hosts are never contacted) and stops the run."""
    case = next(case for case in CASES if case["id"] == "two_servers")
    result = run_preflight(materialise(case["patch"], tmp_path), "playbooks/k3s.yml", "--limit", limit)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert case["message"] in output, output
    assert re.findall(r"^PLAY \[([^\]]+)\]", output, re.M) == ["Preflight"], output
    assert "UNREACHABLE" not in output
    limited = {"wk-gpu1"} if limit == "wk-gpu1" else {"cp1", "cp2"}
    assert recap_hosts(output) and set(recap_hosts(output)) <= limited, output


def test_schedule_playbook_prints_every_verify_job_of_the_homelab(tmp_path):
    """cps.gpu_cluster.schedule with every setting at its default: the table names each verify Job
    verify.yml creates (wk-gpu1 and wk-gpu2 are alike and judged once, yet both listed), each on its
    node, with the pool's resource on the pooled nodes."""
    result = run_preflight(materialise({}, tmp_path), "playbooks/schedule.yml")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for line in ("verify Job smi-wk-gpu1 [gpu-cluster-verify] asks nvidia.com/gpu 1 -> wk-gpu1",
                 "verify Job smi-wk-gpu2 [gpu-cluster-verify] asks nvidia.com/gpu 1 -> wk-gpu2",
                 "verify Job gpuprobe-wk-gpu2 [gpu-cluster-verify] asks nvidia.com/gpu 2 -> wk-gpu2",
                 "verify Job smi-wk-gpu3 [gpu-cluster-verify] asks nvidia.com/gpu.shared 1 -> wk-gpu3",
                 "verify Job smi-wk-gpu4 [gpu-cluster-verify] asks nvidia.com/mig-1g.10gb 1 -> wk-gpu4"):
        assert line in output, output
    assert "NO NODE" not in output
    assert "cpu-only" in output or "JupyterHub profile" in output, output


@pytest.mark.parametrize("case_id, secret", [("secret_with_a_newline", "bootstrap-s3cret-value"),
                                             ("git_url_with_credentials", "ghp-url-token"),
                                             ("hub_admin_password_too_short", "s3cr3t-x")])
def test_refused_secrets_are_not_printed(tmp_path, case_id, secret):
    """Issue 27: a refused secret (or a URL with a token in it) is named, never shown, also with -vv."""
    case = next(case for case in CASES if case["id"] == case_id)
    result = run_preflight(materialise(case["patch"], tmp_path), "playbooks/preflight.yml", "-vv")
    output = result.stdout + result.stderr
    assert case["message"] in output, output
    assert result.returncode != 0 and secret not in output, output
