"""vfio_passthrough's verification for real (ansible-playbook on localhost) against sysfs
trees built from captured layouts: passes, warns about shared IOMMU groups, or fails naming
what to change. Only the role's verify.yml runs; nothing on this machine is modified."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
_spec = importlib.util.spec_from_file_location("sysfs_tree", REPO / "tests" / "fixtures" / "sysfs" / "sysfs_tree.py")
sysfs_tree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sysfs_tree)

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.vfio_passthrough
        tasks_from: {tasks_from}
"""


def run_verify(tmp_path, layout, devices, *, cmdline="BOOT_IMAGE=/vmlinuz quiet intel_iommu=on iommu=pt",
               tasks_from="verify.yml", pci_ids=("10de:15fc",)):
    sysfs = sysfs_tree.build(layout, tmp_path / "sys")
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    (tmp_path / "play.yml").write_text(PLAYBOOK.format(tasks_from=tasks_from))
    extra = {
        "ansible_python_interpreter": sys.executable,
        "gpu_cluster_gpu_pci_ids": list(pci_ids),
        "vfio_passthrough_pci_devices": devices,
        "vfio_passthrough_sysfs_path": str(sysfs),
        "vfio_passthrough_reboot": False,
        "__vfio_passthrough_proc_cmdline": str(tmp_path / "cmdline"),
        "__vfio_passthrough_kernel_args": ["intel_iommu=on", "iommu=pt"],
        "__vfio_passthrough_modules_result": {"changed": False},
        "__vfio_passthrough_modprobe_result": {"changed": False},
        "__vfio_passthrough_blacklist_result": {"changed": False},
    }
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"), "-e", json.dumps(extra)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


GP100 = [{"name": "gp100-0", "address": "0000:07:00.0"}, {"name": "gp100-1", "address": "0000:08:00.0"}]


def test_two_isolated_vfio_gpus_pass(tmp_path):
    rc, out = run_verify(tmp_path, "host_2gpu_vfio", GP100)
    assert rc == 0, out
    assert "WARNING: " not in out and "SKIPPED" not in out


def test_shared_group_warns_with_devices_and_acs_tradeoff(tmp_path):
    rc, out = run_verify(tmp_path, "host_shared_group", [{"name": "gp100-2", "address": "0000:0e:00.0"}])
    assert rc == 0, out
    assert "0000:0e:00.0 shares IOMMU group 14" in out and "0000:0d:00.0" in out
    assert "pcie_acs_override=downstream" in out


def test_no_iommu_fails_saying_enable_it_in_firmware(tmp_path):
    rc, out = run_verify(tmp_path, "host_no_iommu", GP100[:1])
    assert rc != 0
    assert "The IOMMU is off" in out and "firmware" in out


def test_gpu_on_host_driver_fails_naming_it(tmp_path):
    rc, out = run_verify(tmp_path, "host_2gpu_vfio", [*GP100, {"name": "gp100-9", "address": "0000:0f:00.0"}])
    assert rc != 0
    assert "Not bound to vfio-pci: gp100-9 (0000:0f:00.0" in out and "driver absent" in out


def test_old_kernel_cmdline_skips_with_one_line(tmp_path):
    rc, out = run_verify(tmp_path, "host_no_iommu", GP100, cmdline="BOOT_IMAGE=/vmlinuz quiet")
    assert rc == 0, out
    assert "SKIPPED vfio_passthrough verify: the running kernel lacks intel_iommu=on iommu=pt" in out


def test_preflight_stops_on_bad_ids(tmp_path):
    rc, out = run_verify(tmp_path, "host_2gpu_vfio", GP100, tasks_from="preflight.yml", pci_ids=("10de-15fc", "10de:0fb1"))
    assert rc != 0
    assert "four hex digits" in out and "10de-15fc" in out


@pytest.fixture(autouse=True)
def _needs_ansible():
    if not Path(ANSIBLE_PLAYBOOK).exists():
        pytest.skip("ansible-playbook not found")
