"""The inventory `make lab` generates follows the contract: same groups and
collection variables as the homelab, podman connection, gpu_cluster_lab set,
and it passes preflight. (Writing it needs no container; `make lab` runs the rest.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GROUPS = ["proxmox_hosts", "k3s_cluster", "k3s_servers", "k3s_agents", "gpu_workers", "infra_nodes", "app_nodes"]


def ansible_env() -> dict:
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
        ANSIBLE_INJECT_FACT_VARS="false",
        ANSIBLE_NOCOLOR="1",
    )


@pytest.fixture(scope="module")
def lab_inventory(tmp_path_factory) -> Path:
    state = tmp_path_factory.mktemp("lab-state")
    subprocess.run(["bash", "lab/lab.sh", "inventory"], cwd=REPO, env=dict(os.environ, LAB_STATE=str(state)), check=True, capture_output=True)
    return state / "inventory"


@pytest.fixture(scope="module")
def resolved(lab_inventory) -> dict:
    out = subprocess.run(["ansible-inventory", "-i", str(lab_inventory), "--list"], cwd=REPO, env=ansible_env(),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def hosts_of(data: dict, group: str) -> set:
    found = set(data.get(group, {}).get("hosts", []))
    for child in data.get(group, {}).get("children", []):
        found |= hosts_of(data, child)
    return found


def test_topology(resolved):
    for group in GROUPS:
        assert group in resolved["all"]["children"] or any(group in resolved.get(g, {}).get("children", []) for g in resolved), group
    assert hosts_of(resolved, "proxmox_hosts") == {"lab-pve1"}
    assert hosts_of(resolved, "k3s_servers") == {"lab-cp1", "lab-cp2", "lab-cp3"}
    assert hosts_of(resolved, "gpu_workers") == {"lab-wk-gpu1"}
    assert hosts_of(resolved, "app_nodes") == {"lab-wk-app1"}
    assert hosts_of(resolved, "k3s_agents") == {"lab-wk-gpu1", "lab-wk-app1"}


def test_host_variables(resolved):
    hostvars = resolved["_meta"]["hostvars"]
    ips = set()
    for host, variables in hostvars.items():
        assert variables["ansible_host"] == host, "ansible_host is the container name"
        assert variables["ansible_connection"] == "containers.podman.podman"
        assert variables["gpu_cluster_lab"] is True
        assert variables["gpu_cluster_node_ip"].startswith(variables["gpu_cluster_node_network"].rsplit(".", 1)[0] + ".")
        ips.add(variables["gpu_cluster_node_ip"])
    assert len(ips) == len(hostvars)


def test_same_collection_variables_as_the_homelab(lab_inventory):
    homelab = yaml.safe_load((REPO / "inventories/homelab/group_vars/all/main.yml").read_text())
    lab = yaml.safe_load((lab_inventory / "group_vars/all/main.yml").read_text())
    missing = {name for name in homelab if name.startswith("gpu_cluster_")} - set(lab)
    assert not missing, f"the lab inventory lacks {sorted(missing)}"
    assert lab["gpu_cluster_k3s_version"] == homelab["gpu_cluster_k3s_version"]


def test_lab_inventory_passes_preflight(lab_inventory):
    result = subprocess.run(["ansible-playbook", "playbooks/preflight.yml", "-i", str(lab_inventory)], cwd=REPO, env=ansible_env(),
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Inventory OK: cluster lab, 3 server(s), 2 agent(s) (1 GPU worker(s)), 1 Proxmox host(s)" in result.stdout
