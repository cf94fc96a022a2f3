"""playbooks/verify.yml on a one-worker inventory whose "GPU worker" is this machine (no GPUs).

Without ``gpu_cluster_lab`` the worker's missing GPUs are a FAIL that names the numbers, the parts
that cannot reach a cluster (no kubeconfig) are FAIL with the reason, the report says FAIL and the
phase fails; with ``gpu_cluster_lab: true`` the same worker and parts are SKIPPED.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_verify(tmp_path, lab):
    inventory = tmp_path / "hosts.yml"
    # A valid inventory (preflight runs first): one server that verify never contacts (no kubeconfig),
    # and the GPU worker on this machine.
    inventory.write_text(
        "all:\n  vars:\n    gpu_cluster_node_network: 10.0.0.0/24\n    gpu_cluster_gateway: 10.0.0.1\n"
        "    gpu_cluster_api_vip: 10.0.0.100\n    gpu_cluster_cluster_cidr: 10.42.0.0/16\n"
        "    gpu_cluster_service_cidr: 10.43.0.0/16\n    gpu_cluster_k3s_version: v1.33.5+k3s1\n"
        "    gpu_cluster_gpu_operator_version: v26.7.0\n"
        "  children:\n    k3s_cluster:\n      children:\n        k3s_servers:\n"
        "          hosts:\n            cp1: {ansible_host: 10.0.0.11}\n"
        "        k3s_agents:\n          children:\n            gpu_workers:\n              hosts:\n"
        f"                wk-local:\n                  ansible_connection: local\n"
        f"                  ansible_python_interpreter: {sys.executable}\n"
        "                  gpu_cluster_node_ip: 10.0.0.21\n"
        "                  gpu_cluster_gpu_count: 2\n                  gpu_cluster_gpu_model: NVIDIA A100 80GB PCIe\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_FORCE_COLOR="0")
    argv = ["ansible-playbook", str(REPO / "playbooks" / "verify.yml"), "-i", str(inventory),
            "-e", f"gpu_cluster_name=test{'lab' if lab else 'real'}",
            "-e", f"gpu_cluster_kubeconfig={tmp_path}/absent", "-e", f"gpu_cluster_verify_report_dir={tmp_path}",
            "-e", f'{{"gpu_cluster_lab": {str(lab).lower()}}}']
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def local_has_no_gpu():
    pci = Path("/sys/bus/pci/devices")
    for device in pci.glob("*") if pci.is_dir() else []:
        if (device / "vendor").read_text().strip() == "0x10de":
            pytest.skip("this machine has an NVIDIA device; the test needs one without")


def test_missing_gpus_fail_with_numbers(tmp_path, local_has_no_gpu):
    proc = run_verify(tmp_path, lab=False)
    assert proc.returncode != 0
    assert "FAIL GPUs on wk-local: declared 2, PCI 0" in proc.stdout
    assert "PCI shows 0 NVIDIA GPU(s), the inventory declares 2" in proc.stdout
    assert "FAIL verify: GPUs on wk-local" in proc.stdout
    report = (tmp_path / "testreal-verify.md").read_text()
    assert "**Result: FAIL**" in report
    assert "- FAIL GPUs on wk-local: PCI shows 0 NVIDIA GPU(s), the inventory declares 2" in report
    # no cluster outside a lab: FAIL with the reason, never SKIPPED
    assert "SKIPPED verify:" not in proc.stdout
    assert f"FAIL capacity and nodes Ready: kubeconfig {tmp_path}/absent does not exist" in proc.stdout
    assert "FAIL smoke tests and health Jobs" in proc.stdout
    assert "capacity, nodes Ready" in proc.stdout.split("FAIL verify:")[-1]
    assert "| smoke tests and health Jobs | FAIL |" in report


def test_lab_worker_without_gpus_is_skipped(tmp_path, local_has_no_gpu):
    proc = run_verify(tmp_path, lab=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("SKIPPED verify: GPUs on wk-local: no NVIDIA GPU on the PCI bus") == 1
    assert proc.stdout.count("SKIPPED verify: capacity and nodes Ready: kubeconfig") == 1
    assert '"msg": "FAIL' not in proc.stdout
    assert "**Result: PASS**" in (tmp_path / "testlab-verify.md").read_text()
