"""playbooks/provision.yml with the NUMA placement (docs/performance.md) on the reference homelab,
planned offline from the captured two-socket layout, against a stand-in terraform that records its
argv: --check prints the placement table and passes it to Terraform as the `placement` variable; a
placement that does not fit, a missing capture or a bad setting stops the run before terraform is
ever called (no VM touched)."""

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
CAPTURE = REPO / "tests" / "fixtures" / "numa" / "two-socket-xeon-gold-6248r-8gpu.pci_gpu_facts.json"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBvBmS0ZtZQwZ7u0Xo0N9c0Gk2j3pNwqKp8Y3mJ1bQ9x ci@test"

FAKE = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_TF_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
if args[:2] == ["version", "-json"]:
    print(json.dumps({"terraform_version": "1.9.8"}))
elif args[:2] == ["workspace", "list"]:
    print("* default")
elif args[:1] == ["plan"]:
    open(args[args.index("-out") + 1], "w").close()
    sys.exit(2)
elif args[:1] == ["show"]:
    print(json.dumps({"resource_changes": []}))
elif args[:1] == ["output"]:
    print(json.dumps({"inventory_path": {"value": "/tmp/generated.yml"}}))
"""


@pytest.fixture()
def provision(tmp_path):
    fake = tmp_path / "terraform"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    log = tmp_path / "terraform.log"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default",
               FAKE_TF_LOG=str(log), PROXMOX_VE_API_TOKEN="terraform@pve!gpu-cluster=00000000")

    def run(**extra):
        variables = {"gpu_cluster_terraform_binary": str(fake), "gpu_cluster_provision_ssh_public_keys": [KEY],
                     "gpu_cluster_numa_placement": True, "gpu_cluster_numa_hugepages": "1G",
                     "gpu_cluster_numa_topology_file": str(CAPTURE), **extra}
        done = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/provision.yml", "-i", str(REPO / "inventories" / "homelab"),
                               "--check", "-e", json.dumps(variables)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        # preflight asks `terraform version -json` (run_needs: the binary is there and new enough); what
        # these tests count is every other call (init, plan, apply)
        calls = [argv for argv in calls if argv != ["version", "-json"]]
        return done, calls

    return run


def placement_var(calls):
    plan = next(argv for argv in calls if argv[0] == "plan")
    return next(plan[i + 1] for i, arg in enumerate(plan) if arg == "-var" and plan[i + 1].startswith("placement="))


def test_check_prints_the_table_and_terraform_gets_the_placement(provision):
    done, calls = provision()
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "NUMA placement on pve1 (2 node(s), SMT on, 2 thread(s) per core):" in out
    for row in ("wk-gpu1  gpu_worker     0     a100-0,a100-1  16     2-9,50-57             128 GiB  1G x128",
                "wk-gpu4  gpu_worker     1     a100-6,a100-7  16     34-41,82-89           128 GiB  1G x128",
                "cp2      control_plane  1     -              4      42-43,90-91           16 GiB   -",
                "huge pages to reserve (1G): node 0: 256, node 1: 256"):
        assert row in out, out
    assert "WARNING numa: node 0 has 0 1G huge pages reserved, the plan needs 256" in out
    assert out.index("NUMA placement on pve1") < out.index("TASK [Plan (check mode) or apply the VMs")
    placement = placement_var(calls)
    assert 'wk-gpu1={affinity="2-9,50-57",host_node=0,hugepages="1024"}' in placement
    assert 'wk-gpu3={affinity="26-33,74-81",host_node=1,hugepages="1024"}' in placement
    assert 'cp1={affinity="18-19,66-67",host_node=0,hugepages=""}' in placement
    assert "Planned (check mode, nothing changed)" in out


def test_without_placement_terraform_gets_none(provision):
    done, calls = provision(gpu_cluster_numa_placement=False, gpu_cluster_numa_hugepages="none")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NUMA placement on" not in done.stdout
    with pytest.raises(StopIteration):
        placement_var(calls)


def test_all_gpus_on_one_socket_is_refused_before_terraform(provision, tmp_path):
    capture = json.loads(CAPTURE.read_text())
    for gpu in capture["ansible_facts"]["pci_gpus"]:
        gpu["numa_node"] = 0
    one_socket = tmp_path / "pve1-one-socket.json"
    one_socket.write_text(json.dumps(capture))
    done, calls = provision(gpu_cluster_numa_topology_file=str(one_socket))
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "NUMA placement on pve1 refused" in out
    assert "NUMA node 0 has 22 physical cores (44 threads) for VMs once 2 are kept for the host" in out
    assert "lower gpu_cluster_vm_cores" in out
    assert calls == [], "terraform must not run on a refused placement"


def test_gpus_spanning_nodes_refused_unless_allowed(provision, tmp_path):
    capture = json.loads(CAPTURE.read_text())
    for gpu in capture["ansible_facts"]["pci_gpus"]:
        if gpu["address"] == "0000:31:00.0":
            gpu["numa_node"] = 1
    mixed = tmp_path / "pve1-mixed.json"
    mixed.write_text(json.dumps(capture))
    done, calls = provision(gpu_cluster_numa_topology_file=str(mixed))
    assert done.returncode != 0 and calls == []
    assert "wk-gpu1: its GPUs sit on different NUMA nodes (a100-0 on node 0, a100-1 on node 1)" in done.stdout + done.stderr
    done, calls = provision(gpu_cluster_numa_topology_file=str(mixed), gpu_cluster_numa_allow_span=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(GPUs span nodes)" in done.stdout and calls


def test_missing_capture_says_how_to_make_one(provision, tmp_path):
    done, calls = provision(gpu_cluster_numa_topology_file=str(tmp_path / "nope.json"))
    assert done.returncode != 0 and calls == []
    assert "-m cps.gpu_cluster.pci_gpu_facts --tree" in done.stdout + done.stderr


def test_preflight_refuses_a_bad_setting(provision):
    done, calls = provision(gpu_cluster_numa_hugepages="1GB")
    assert done.returncode != 0 and calls == []
    assert "pve1: gpu_cluster_numa_hugepages is '1GB'; use none, 1G or 2M" in done.stdout + done.stderr


@pytest.mark.parametrize("live", [False, True], ids=["captured", "live-sysfs"])
def test_proxmox_host_refuses_before_the_role_touches_the_host(tmp_path, live):
    """proxmox_host.yml plans too (it reserves the plan's huge pages): a refused plan stops the play
    before vfio_passthrough runs. Preflight is off: the inventory is only what the phase reads.
    live: no captured file, so pci_gpu_facts reads this machine's own /sys (no NVIDIA GPU here)."""
    devices = [{"name": f"a100-{i}", "address": address} for i, address in enumerate(
        ["0000:17:00.0", "0000:31:00.0", "0000:4b:00.0", "0000:65:00.0", "0000:98:00.0", "0000:b1:00.0"])]
    inventory = {"all": {"vars": {"gpu_cluster_preflight": False}, "children": {
        "proxmox_hosts": {"hosts": {"pvetest": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "gpu_cluster_gpu_pci_ids": ["10de:20b5"], "gpu_cluster_gpu_pci_devices": devices,
            "gpu_cluster_numa_placement": True, **({} if live else {"gpu_cluster_numa_topology_file": str(CAPTURE)})}}},
        "k3s_cluster": {"children": {"k3s_agents": {"children": {"gpu_workers": {"hosts": {
            "wk-gpu1": {"gpu_cluster_gpu_pci_mappings": ["a100-0", "a100-4"], "gpu_cluster_vm_cores": 8},
            "wk-gpu2": {"gpu_cluster_gpu_pci_mappings": ["a100-1", "a100-5"], "gpu_cluster_vm_cores": 8}}}}}}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1")
    done = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), "playbooks/proxmox_host.yml"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    if live:
        assert "TASK [Read the host's NUMA layout and GPUs]" in out
        assert "wk-gpu1: GPU a100-0 (0000:17:00.0) is not in the host's topology" in out
    else:
        assert "NUMA placement on pvetest refused, 2 problem(s)" in out
        assert "wk-gpu1: its GPUs sit on different NUMA nodes (a100-0 on node 0, a100-4 on node 1)" in out
    assert "Detect the CPU vendor" not in out and "vfio_passthrough :" not in out
