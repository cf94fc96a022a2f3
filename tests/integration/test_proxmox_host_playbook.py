"""playbooks/proxmox_host.yml on localhost where it must not touch the host: without GPUs it
says so in exactly one SKIPPED line (switched off); without API credentials the mapping part says
SKIPPED in a lab (gpu_cluster_lab) and FAILS with the reason anywhere else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")


# The rest of a valid inventory (preflight runs first); the phase touches only proxmox_hosts.
CLUSTER_VARS = {
    "gpu_cluster_name": "pvetest", "gpu_cluster_node_network": "10.0.0.0/24", "gpu_cluster_gateway": "10.0.0.1",
    "gpu_cluster_api_vip": "10.0.0.100", "gpu_cluster_cluster_cidr": "10.42.0.0/16", "gpu_cluster_service_cidr": "10.43.0.0/16",
    "gpu_cluster_k3s_version": "v1.33.5+k3s1",
}


def run(tmp_path, host_vars):
    inventory = {"all": {"vars": CLUSTER_VARS, "children": {
        "proxmox_hosts": {"hosts": {"pvetest": dict(
            ansible_connection="local", ansible_python_interpreter=sys.executable, ansible_become=False, **host_vars)}},
        "k3s_cluster": {"children": {"k3s_servers": {"hosts": {"cp1": {"ansible_host": "10.0.0.11"}}}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXMOX_")}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), "playbooks/proxmox_host.yml"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def skipped_lines(out):
    return [line.strip() for line in out.splitlines() if '"SKIPPED proxmox_host:' in line]


def test_no_gpus_one_skipped_line(tmp_path):
    rc, out = run(tmp_path, {})
    assert rc == 0, out
    assert skipped_lines(out) == [
        '"msg": "SKIPPED proxmox_host: no GPUs to pass through on pvetest (gpu_cluster_gpu_pci_ids is empty)"']


CREDENTIALLESS = {"gpu_cluster_gpu_pci_devices": [{"name": "a100-0", "address": "0000:17:00.0"}],
                  "gpu_cluster_proxmox_api_url": "https://10.0.0.2:8006/api2/json",
                  "gpu_cluster_proxmox_api_token_id": "terraform@pve!gpu-cluster"}


def test_no_credentials_skips_mappings_in_a_lab(tmp_path):
    rc, out = run(tmp_path, dict(CREDENTIALLESS, gpu_cluster_lab=True))
    assert rc == 0, out
    lines = skipped_lines(out)
    assert len(lines) == 2
    assert "PCI mappings not created on pvetest: no Proxmox API credentials" in lines[1]
    assert "PROXMOX_TOKEN_SECRET" in lines[1]
    assert "FAILED proxmox_host" not in out


def test_no_credentials_fails_outside_a_lab(tmp_path):
    rc, out = run(tmp_path, CREDENTIALLESS)
    assert rc != 0, out
    assert len(skipped_lines(out)) == 1, "only the switched-off passthrough (no gpu_cluster_gpu_pci_ids) is SKIPPED"
    assert ("FAILED proxmox_host: PCI mappings not created on pvetest: no Proxmox API credentials (set "
            "gpu_cluster_proxmox_api_url, gpu_cluster_proxmox_api_token_id and PROXMOX_TOKEN_SECRET)") in out
    assert "Read the GPUs' ids and IOMMU groups on the host" not in out, "nothing runs after the failure"
