"""The inventory terraform/proxmox would write passes playbooks/preflight.yml
(homelab sizes, and 1 control plane + 1 GPU worker), and playbooks/provision.yml
says `SKIPPED provision: <reason>` once, without failing, when switched off or in a lab, and fails
with `FAILED provision: <reason>` when it cannot run anywhere else."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit" / "terraform"))

from terraform_helpers import SSH_KEY, render_template, resolve, tfvars_from_inventory  # noqa: E402

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
ANSIBLE_INVENTORY = shutil.which("ansible-inventory") or str(REPO / ".venv" / "bin" / "ansible-inventory")


def ansible_env(**extra) -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="default")
    env.update(extra)
    return env


def playbook(name: str, inventory: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ANSIBLE_PLAYBOOK, f"playbooks/{name}", "-i", str(inventory), *args], cwd=REPO,
                          env=env or ansible_env(), capture_output=True, text=True, timeout=300, check=False)


def homelab_list() -> dict:
    out = subprocess.run([ANSIBLE_INVENTORY, "-i", str(REPO / "inventories" / "homelab"), "--list"], cwd=REPO,
                         env=ansible_env(), check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


def trimmed(inventory_json: dict, hosts: set[str]) -> dict:
    data = {k: dict(v) for k, v in inventory_json.items()}
    for name, group in data.items():
        if name != "_meta" and "hosts" in group:
            group["hosts"] = [h for h in group["hosts"] if h in hosts]
    data["_meta"] = {"hostvars": {h: trimmed_pools(v, hosts) for h, v in inventory_json["_meta"]["hostvars"].items() if h in hosts}}
    return data


def trimmed_pools(hostvars: dict, hosts: set[str]) -> dict:
    """The homelab's example GPU pools name its four GPU workers: a trimmed inventory keeps the pools
    of the workers it keeps (with those workers only), as a user trimming the homelab would; the models
    and notebook profiles placed on a dropped pool go with it (a model back on whole GPUs, the profile
    left out), as preflight requires of every pool a workload names."""
    pools = hostvars.get("gpu_cluster_gpu_pools")
    if not isinstance(pools, list):
        return hostvars
    kept = [dict(pool, nodes=[n for n in pool.get("nodes", []) if n in hosts]) for pool in pools]
    kept = [pool for pool in kept if pool["nodes"]]
    names = {pool["name"] for pool in kept}
    trimmed_vars = dict(hostvars, gpu_cluster_gpu_pools=kept)
    if isinstance(hostvars.get("gpu_cluster_llm_models"), list):
        trimmed_vars["gpu_cluster_llm_models"] = [
            model if "pool" not in model or model["pool"] in names else dict((k, v) for k, v in model.items() if k != "pool")
            for model in hostvars["gpu_cluster_llm_models"]]
    if isinstance(hostvars.get("gpu_cluster_jupyterhub_profiles"), list):
        trimmed_vars["gpu_cluster_jupyterhub_profiles"] = [
            profile for profile in hostvars["gpu_cluster_jupyterhub_profiles"] if "pool" not in profile or profile["pool"] in names]
    return trimmed_vars


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    """Generated inventories: the homelab, 1 cp + 1 worker from the homelab, and 1 + 1 from defaults."""
    full = homelab_list()
    cases = {
        "homelab": tfvars_from_inventory(full),
        "one-plus-one": tfvars_from_inventory(trimmed(full, {"pve1", "cp1", "wk-gpu1"})),
        "defaults-one-plus-one": {
            "proxmox_node": "pve1", "proxmox_host_address": "10.0.0.2", "template_vm_id": 9000,
            "scratch_storage": "nvme-scratch", "cluster_name": "tiny", "domain": "tiny.lan",
            "node_network": "10.0.0.0/24", "gateway": "10.0.0.1", "dns_servers": ["10.0.0.1"],
            "ssh_public_keys": [SSH_KEY], "control_plane_count": 1, "gpu_worker_count": 1,
            "gpu_pci_mappings": ["a100-0", "a100-1"],
            "inventory_vars": {"all": {"gpu_cluster_api_vip": "10.0.0.100", "gpu_cluster_cluster_cidr": "10.42.0.0/16",
                                       "gpu_cluster_service_cidr": "10.43.0.0/16", "gpu_cluster_k3s_version": "v1.33.5+k3s1",
                                       "gpu_cluster_gpu_operator_version": "v26.7.0"},
                               "proxmox_hosts": {"ansible_user": "root", "gpu_cluster_gpu_pci_ids": ["10de:20b5"],
                                                 "gpu_cluster_gpu_pci_devices": [{"name": "a100-0", "address": "0000:17:00.0"},
                                                                                 {"name": "a100-1", "address": "0000:31:00.0"}]}},
        },
    }
    paths = {}
    for name, tfvars in cases.items():
        path = tmp_path_factory.mktemp(name) / "inventory.yml"
        path.write_text(render_template(resolve(tfvars)["inventory_vars"]))
        paths[name] = path
    return paths


def test_rendered_inventories_pass_preflight(rendered):
    with ThreadPoolExecutor(max_workers=3) as pool:
        # the generated inventory refers to the homelab's vault variables: its values as a user's vault has them
        vault = "@" + str(REPO / "tests" / "fixtures" / "homelab-vault.yml")
        results = dict(zip(rendered, pool.map(lambda p: playbook("preflight.yml", p, "-e", vault), rendered.values())))
    for name, done in results.items():
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
        assert "Inventory OK" in done.stdout or "SKIPPED" in done.stdout, name


def test_preflight_catches_a_bad_generated_inventory(rendered, tmp_path):
    """The same run fails when the generated inventory breaks the contract (a GPU given to two workers)."""
    data = yaml.safe_load(rendered["homelab"].read_text())
    workers = data["all"]["children"]["k3s_cluster"]["children"]["k3s_agents"]["children"]["gpu_workers"]["hosts"]
    workers["wk-gpu2"]["gpu_cluster_gpu_pci_mappings"] = ["a100-0", "a100-1"]
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(data))
    done = playbook("preflight.yml", bad)
    assert done.returncode != 0
    assert "a100-0" in done.stdout


def skipped_lines(done: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r'"msg": "(SKIPPED provision: [^"]*)"', done.stdout)


@pytest.mark.parametrize("check", [False, True], ids=["apply", "check"])
def test_provision_fails_without_terraform_outside_a_lab(check, tmp_path):
    env = ansible_env(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", PROXMOX_VE_API_TOKEN="u@pve!t=s")
    env.pop("PROXMOX_TOKEN_SECRET", None)
    done = playbook("provision.yml", REPO / "inventories" / "homelab", *(["--check"] if check else []), env=env)
    assert done.returncode != 0, done.stdout + done.stderr
    assert skipped_lines(done) == [], done.stdout
    # preflight says it before anything is touched (issue 43: terraform for provision.yml, run_needs)
    assert "no terraform CLI on the control node (terraform is not on PATH): the provision phase of this run creates " \
           "the VMs with it" in done.stdout, done.stdout
    assert "TASK [Look up the tools this run needs on the control node]" in done.stdout
    assert "PLAY [Phase provision]" not in done.stdout


def test_provision_fails_without_credentials_outside_a_lab(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories" / "homelab", inventory)
    # a terraform that answers preflight's version question and nothing else (the phase stops before using it)
    terraform = REPO / "tests" / "fixtures" / "tools" / "terraform-cli" / "terraform"
    (inventory / "group_vars" / "all" / "zz-test.yml").write_text(f"gpu_cluster_terraform_binary: {terraform}\n")
    env = ansible_env()
    for name in ("PROXMOX_VE_API_TOKEN", "PROXMOX_TOKEN_SECRET"):
        env.pop(name, None)
    done = playbook("provision.yml", inventory, env=env)
    assert done.returncode != 0, done.stdout + done.stderr
    assert skipped_lines(done) == [], done.stdout
    assert "FAILED provision: no Proxmox API token in the environment" in done.stdout, done.stdout


def test_provision_can_be_switched_off(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories" / "homelab", inventory)
    (inventory / "group_vars" / "all" / "provision.yml").write_text("gpu_cluster_provision_enabled: false\n")
    done = playbook("provision.yml", inventory)
    assert done.returncode == 0, done.stdout + done.stderr
    assert skipped_lines(done) == ["SKIPPED provision: gpu_cluster_provision_enabled is false"], done.stdout


def test_provision_skips_in_the_lab(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories" / "homelab", inventory)
    (inventory / "group_vars" / "all" / "zz-lab.yml").write_text("gpu_cluster_lab: true\n")
    done = playbook("provision.yml", inventory, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert skipped_lines(done) == [
        "SKIPPED provision: lab inventory (gpu_cluster_lab): the VMs are containers, there is no Proxmox API"], done.stdout
