"""pci_gpu_facts: the host's NUMA layout (host_numa) next to the GPUs, on the numa/ fixtures."""

from __future__ import annotations

from pathlib import Path

from test_pci_gpu_facts import ExitJson, FailJson, run_module, sysfs_tree

NUMA = Path(__file__).resolve().parents[3] / "fixtures" / "numa"


def test_two_socket_host_numa_and_gpu_nodes(monkeypatch):
    kind, result = run_module(monkeypatch, {"sysfs_path": str(NUMA / "two-socket-xeon-gold-6248r-8gpu" / "sys"),
                                            "_ansible_check_mode": True})
    assert kind is ExitJson and result["changed"] is False
    facts = result["ansible_facts"]
    host = facts["host_numa"]
    assert [node["node"] for node in host["nodes"]] == [0, 1]
    assert host["threads_per_core"] == 2 and host["sockets"] == 2 and host["cpus_online"] == 96
    assert host["nodes"][1]["cores"][0] == [24, 72]
    assert [gpu["numa_node"] for gpu in facts["pci_gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_pci_only_tree_has_no_numa_layout(monkeypatch, tmp_path):
    root = sysfs_tree.build("host_2gpu_vfio", tmp_path / "sys")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(root)})
    assert kind is ExitJson and result["ansible_facts"]["host_numa"] is None


def test_unreadable_cpu_list_fails_with_the_path(monkeypatch, tmp_path):
    online = tmp_path / "devices" / "system" / "cpu" / "online"
    online.parent.mkdir(parents=True)
    online.write_text("garbage\n")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(tmp_path)})
    assert kind is FailJson
    assert result["msg"].startswith(f"Cannot read the NUMA layout under {tmp_path}: not a CPU list")
