"""vfio_passthrough's configure_cmdline.yml for real (ansible-playbook on localhost) against
boot-loader files of the test's own: what systemd-boot's /etc/kernel/cmdline and GRUB's
/etc/default/grub hold afterwards, idempotence, check mode, and which handlers are notified
(proxmox-boot-tool and update-grub are stand-ins on PATH that record their calls; the reboot
handler is switched off). Nothing on this machine is modified (issue 19)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.vfio_passthrough
        tasks_from: configure_cmdline.yml
"""

# A Proxmox VE 8 ZFS-on-root install booted by systemd-boot: its /etc/kernel/cmdline.
PVE_ZFS_CMDLINE = "root=ZFS=rpool/ROOT/pve-1 boot=zfs"
GRUB_DEFAULT = 'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n'


def run_configure(tmp_path, *, bootloader, vendor="intel", extra_args=(), check=False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls.log"
    for tool in ("proxmox-boot-tool", "update-grub"):
        stub = bin_dir / tool
        stub.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n')
        stub.chmod(0o755)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    extra = {
        "ansible_python_interpreter": sys.executable,
        "vfio_passthrough_reboot": False,
        "vfio_passthrough_extra_kernel_args": list(extra_args),
        "__vfio_passthrough_cpu_vendor": vendor,
        "__vfio_passthrough_bootloader": bootloader,
        "__vfio_passthrough_pbt_loader": "systemd-boot" if bootloader == "systemd-boot" else "",
        "__vfio_passthrough_kernel_cmdline_file": str(tmp_path / "kernel-cmdline"),
        "__vfio_passthrough_grub_default_file": str(tmp_path / "default-grub"),
    }
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
               PATH=f"{bin_dir}:{os.environ.get('PATH', '')}")
    argv = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"), "-e", json.dumps(extra)]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    recorded = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return output, recorded


def changed_count(output):
    recap = [line for line in output.splitlines() if line.startswith("localhost")][-1]
    return int(recap.split("changed=")[1].split()[0])


@pytest.mark.parametrize("vendor, expected", [
    ("intel", "root=ZFS=rpool/ROOT/pve-1 boot=zfs intel_iommu=on iommu=pt\n"),
    ("amd", "root=ZFS=rpool/ROOT/pve-1 boot=zfs amd_iommu=on iommu=pt\n"),
])
def test_systemd_boot_kernel_cmdline_gets_the_iommu_arguments(tmp_path, vendor, expected):
    cmdline = tmp_path / "kernel-cmdline"
    cmdline.write_text(PVE_ZFS_CMDLINE + "\n")
    output, calls = run_configure(tmp_path, bootloader="systemd-boot", vendor=vendor)
    assert cmdline.read_text() == expected
    assert calls == ["proxmox-boot-tool refresh"], output
    assert not (tmp_path / "default-grub").exists()

    output, calls = run_configure(tmp_path, bootloader="systemd-boot", vendor=vendor)
    assert cmdline.read_text() == expected
    assert changed_count(output) == 0 and calls == [], output


def test_systemd_boot_replaces_a_wrong_vendor_and_iommu_off_and_keeps_the_rest(tmp_path):
    cmdline = tmp_path / "kernel-cmdline"
    cmdline.write_text("root=ZFS=rpool/ROOT/pve-1 amd_iommu=on iommu=off boot=zfs quiet\n")
    run_configure(tmp_path, bootloader="systemd-boot", extra_args=["pcie_acs_override=downstream"])
    assert cmdline.read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs quiet intel_iommu=on iommu=pt pcie_acs_override=downstream\n"


def test_systemd_boot_check_mode_changes_nothing(tmp_path):
    cmdline = tmp_path / "kernel-cmdline"
    cmdline.write_text(PVE_ZFS_CMDLINE + "\n")
    output, calls = run_configure(tmp_path, bootloader="systemd-boot", check=True)
    assert cmdline.read_text() == PVE_ZFS_CMDLINE + "\n"
    assert changed_count(output) == 1 and calls == [], output


def test_grub_default_gets_the_iommu_arguments(tmp_path):
    grub = tmp_path / "default-grub"
    grub.write_text(GRUB_DEFAULT)
    output, calls = run_configure(tmp_path, bootloader="grub")
    assert grub.read_text() == GRUB_DEFAULT.replace('"quiet"', '"quiet intel_iommu=on iommu=pt"')
    assert calls == ["update-grub "], output
    assert not (tmp_path / "kernel-cmdline").exists()
    output, calls = run_configure(tmp_path, bootloader="grub")
    assert changed_count(output) == 0 and calls == [], output
