"""The inventory `make lab` generates follows the contract: same groups and
collection variables as the homelab, podman connection, gpu_cluster_lab set,
and it passes preflight. (Writing it needs no container; `make lab` runs the rest.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def test_lab_nfs_export_lists_only_node_addresses_and_is_not_world_writable(lab_inventory, resolved, tmp_path):
    """The role nfs_server, with the lab's inventory, exports to the five nodes' addresses only,
    root squashed, from a directory owned by the dedicated uid/gid that is not world-writable."""
    assert hosts_of(resolved, "nfs_servers") == {"lab-pve1"}
    hostvars = resolved["_meta"]["hostvars"]
    assert hostvars["lab-pve1"]["gpu_cluster_node_ip"] == hostvars["lab-pve1"]["gpu_cluster_nfs_server"]
    node_ips = [hostvars[host]["gpu_cluster_node_ip"] for host in sorted(hosts_of(resolved, "k3s_cluster"))]
    exports = tmp_path / "gpu-cluster.exports"
    facts = tmp_path / "nfs.json"
    playbook = tmp_path / "render_nfs.yml"
    playbook.write_text(f"""---
- name: Render the lab's NFS export with the role's defaults
  hosts: nfs_servers
  gather_facts: false
  tasks:
    - name: Run the role's preflight (and expose its defaults)
      ansible.builtin.include_role:
        name: cps.gpu_cluster.nfs_server
        tasks_from: preflight
        public: true
    - name: Render the exports file
      ansible.builtin.template:
        src: {REPO}/roles/nfs_server/templates/etc/exports.d/gpu-cluster.exports.j2
        dest: {exports}
        mode: "0644"
    - name: Write the directory's owner and mode
      ansible.builtin.copy:
        content: "{{{{ {{'owner': nfs_server_export_owner, 'group': nfs_server_export_group,
                       'mode': nfs_server_export_mode}} | to_json }}}}"
        dest: {facts}
        mode: "0644"
""")
    result = subprocess.run(["ansible-playbook", str(playbook), "-i", str(lab_inventory),
                             "-e", "ansible_connection=local", "-e", f"ansible_python_interpreter={sys.executable}"],
                            cwd=REPO, env=ansible_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in exports.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1
    path, *clients = lines[0].split()
    assert path == "/export/k3s"
    assert sorted(client.split("(")[0] for client in clients) == sorted(node_ips)
    assert len(node_ips) == 5 and "/" not in " ".join(client.split("(")[0] for client in clients)
    for client in clients:
        options = client.split("(", 1)[1].rstrip(")").split(",")
        assert "root_squash" in options and "no_root_squash" not in options, client
    directory = json.loads(facts.read_text())
    assert (str(directory["owner"]), str(directory["group"])) == ("2049", "2049")
    assert not int(directory["mode"], 8) & 0o002, directory


def test_rewriting_the_inventory_keeps_the_clusters_state(tmp_path):
    """`make lab` rewrites the inventory on every run; the state directory beside it (the identity
    record and the server token that day-2 and restores read, docs/k3s.md) must survive, or a
    no-op re-run records the identity again (changed) and a restore loses the token (issue 42)."""
    env = dict(os.environ, LAB_STATE=str(tmp_path))
    subprocess.run(["bash", "lab/lab.sh", "inventory"], cwd=REPO, env=env, check=True, capture_output=True)
    record = tmp_path / "inventory" / ".gpu-cluster" / "cluster-id"
    record.parent.mkdir()
    record.write_text("0123456789abcdef0123456789abcdef\n")
    subprocess.run(["bash", "lab/lab.sh", "inventory"], cwd=REPO, env=env, check=True, capture_output=True)
    assert record.read_text() == "0123456789abcdef0123456789abcdef\n"
    assert (tmp_path / "inventory" / "hosts.yml").is_file()
