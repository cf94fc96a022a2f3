"""playbooks/verify.yml on a one-worker inventory whose "GPU worker" is this machine (no GPUs).

Without ``gpu_cluster_lab`` the worker's missing GPUs are a FAIL that names the numbers, the parts
that cannot reach a cluster (no kubeconfig) are NOT VERIFIED with the reason, the report says FAIL and
the phase fails; with the same worker declaring no GPUs the result is NOT VERIFIED (never PASS: capacity
and the smoke Jobs did not run) and the phase still fails. With ``gpu_cluster_lab: true`` the same
parts are SKIPPED, the phase carries on, and the result is still NOT VERIFIED, not PASS (issue 19).
The guest view (vCPUs, NUMA nodes, hugepages) of the worker is read for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_verify(tmp_path, lab, unreachable=False, *extra):
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
        + ("                wk-local:\n                  ansible_host: 127.0.0.1\n                  ansible_port: 1\n"
           if unreachable else "                wk-local:\n                  ansible_connection: local\n") +
        f"                  ansible_python_interpreter: {sys.executable}\n"
        "                  gpu_cluster_node_ip: 10.0.0.21\n"
        "                  gpu_cluster_gpu_count: 2\n                  gpu_cluster_gpu_model: NVIDIA A100 80GB PCIe\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_FORCE_COLOR="0")
    argv = ["ansible-playbook", str(REPO / "playbooks" / "verify.yml"), "-i", str(inventory),
            "-e", f"gpu_cluster_name=test{'lab' if lab else 'real'}",
            "-e", f"gpu_cluster_kubeconfig={tmp_path}/absent", "-e", f"gpu_cluster_verify_report_dir={tmp_path}",
            "-e", f'{{"gpu_cluster_lab": {str(lab).lower()}}}', *extra]
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
    assert "FAIL verify: GPUs on wk-local: declared 2, PCI 0" in proc.stdout
    report = (tmp_path / "testreal-verify.md").read_text()
    assert "**Result: FAIL**" in report
    assert "| GPUs | wk-local | FAIL | declared 2, PCI 0, nvidia-smi -: PCI shows 0 NVIDIA GPU(s), the inventory declares 2 |" in report
    # no cluster outside a lab: NOT VERIFIED with the reason, never SKIPPED, never PASS
    assert "SKIPPED verify:" not in proc.stdout
    assert f"NOT VERIFIED verify: capacity and nodes Ready: kubeconfig {tmp_path}/absent does not exist" in proc.stdout
    assert "NOT VERIFIED verify: smoke tests and health Jobs" in proc.stdout
    assert f"| capacity | cluster | NOT VERIFIED | kubeconfig {tmp_path}/absent does not exist" in report
    assert "| smoke Jobs | cluster | NOT VERIFIED |" in report


def test_nothing_checked_is_not_verified_and_fails(tmp_path, local_has_no_gpu):
    # the worker is unreachable (so nothing FAILs) and there is no cluster: nothing was checked
    proc = run_verify(tmp_path, lab=False, unreachable=True)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "PASS verify" not in proc.stdout
    assert "NOT VERIFIED verify: GPUs on wk-local: host unreachable" in proc.stdout
    assert "NOT VERIFIED verify: GPUs on wk-local (host unreachable" in proc.stdout
    report = (tmp_path / "testreal-verify.md").read_text()
    assert report.splitlines()[2].startswith("**Result: NOT VERIFIED**: GPUs on wk-local (host unreachable")
    assert "; capacity (kubeconfig" in report.splitlines()[2] and "; smoke Jobs (kubeconfig" in report.splitlines()[2]


def test_lab_worker_without_gpus_is_skipped_not_passed(tmp_path, local_has_no_gpu):
    proc = run_verify(tmp_path, lab=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.count("SKIPPED verify: GPUs on wk-local: no NVIDIA GPU on the PCI bus") == 1
    assert proc.stdout.count("SKIPPED verify: capacity and nodes Ready: kubeconfig") == 1
    assert '"msg": "FAIL' not in proc.stdout and "NOT VERIFIED verify: capacity and" not in proc.stdout
    report = (tmp_path / "testlab-verify.md").read_text()
    assert "**Result: NOT VERIFIED**" in report and "**Result: PASS**" not in report
    assert "| capacity | cluster | SKIPPED |" in report
    # the guest view is read on the worker for real: this machine's CPUs
    cpus = os.cpu_count()
    assert f"| guest view | wk-local | PASS | {cpus} vCPUs, " in report or \
        "| guest view | wk-local | WARN |" in report, report


def test_check_mode_starts_no_job_and_does_not_pass(tmp_path, local_has_no_gpu):
    proc = run_verify(tmp_path, True, False, "--check")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "SKIPPED verify: smoke tests and health Jobs" in proc.stdout
    assert "PASS verify" not in proc.stdout
