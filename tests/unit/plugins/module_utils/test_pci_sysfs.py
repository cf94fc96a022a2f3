"""pci_sysfs: GPUs, drivers and IOMMU groups read from sysfs trees built from real layouts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import pci_sysfs

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
_spec = importlib.util.spec_from_file_location("sysfs_tree", FIXTURES / "sysfs" / "sysfs_tree.py")
sysfs_tree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sysfs_tree)


@pytest.fixture
def tree(tmp_path):
    return lambda name: str(sysfs_tree.build(name, tmp_path / name))


def test_two_gpus_each_in_own_group_bound_to_vfio(tree):
    gpus, enabled = pci_sysfs.gpu_facts(tree("host_2gpu_vfio"))
    assert enabled is True
    assert [g["address"] for g in gpus] == ["0000:07:00.0", "0000:08:00.0"]
    first = gpus[0]
    assert first["vendor_id"] == "10de" and first["device_id"] == "15fc"
    assert first["class"] == "0300" and first["class_name"] == "VGA compatible controller"
    assert first["driver"] == "vfio-pci"
    assert first["iommu_group"] == 30
    assert first["numa_node"] == 0 and gpus[1]["numa_node"] == 1
    assert first["subsystem_id"] == "10de:1195"
    assert first["functions"] == ["0000:07:00.0", "0000:07:00.1"]
    assert [(d["address"], d["class"], d["driver"]) for d in first["group_devices"]] == [
        ("0000:07:00.0", "0300", "vfio-pci"),
        ("0000:07:00.1", "0403", "vfio-pci"),
    ]
    assert first["group_isolated"] is True and first["group_foreign_devices"] == []


def test_gpu_sharing_group_with_bridge_neighbour(tree):
    gpus, enabled = pci_sysfs.gpu_facts(tree("host_shared_group"))
    assert enabled is True
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu["iommu_group"] == 14
    assert gpu["group_isolated"] is False
    assert gpu["group_foreign_devices"] == ["0000:0d:00.0"]
    nic = next(d for d in gpu["group_devices"] if d["address"] == "0000:0d:00.0")
    assert nic["driver"] == "igb" and nic["class"] == "0200"


def test_bridge_in_group_is_fine_endpoint_on_same_bus_other_slot_is_not(tree):
    """Group 20: GPU + its PCIe root port (a bridge the host keeps) is isolated; group 21: GPU +
    a NIC on the same bus (43) in another slot (01) is not (issue 19)."""
    gpus, _enabled = pci_sysfs.gpu_facts(tree("host_group_bridge_and_slot"))
    by_address = {g["address"]: g for g in gpus}
    assert sorted(by_address) == ["0000:41:00.0", "0000:43:00.0"]
    behind_port = by_address["0000:41:00.0"]
    assert [d["address"] for d in behind_port["group_devices"]] == ["0000:40:01.1", "0000:41:00.0", "0000:41:00.1"]
    assert behind_port["group_foreign_devices"] == []
    assert behind_port["group_isolated"] is True
    same_bus = by_address["0000:43:00.0"]
    assert same_bus["functions"] == ["0000:43:00.0", "0000:43:00.1"]
    assert same_bus["group_foreign_devices"] == ["0000:43:01.0"]
    assert same_bus["group_isolated"] is False


@pytest.mark.parametrize("pci_class, bridge", [("0604", True), ("0680", False), ("0600", False), ("0300", False), (None, False)])
def test_is_pci_bridge(pci_class, bridge):
    """Only PCI-to-PCI bridges (root/switch ports) are allowed; NVSwitch (0680) is an endpoint."""
    assert pci_sysfs.is_pci_bridge({"class": pci_class}) is bridge


def test_vm_with_gpus_bound_to_nvidia(tree):
    gpus, enabled = pci_sysfs.gpu_facts(tree("vm_gpus_nvidia"))
    assert enabled is False
    assert [(g["address"], g["driver"], g["class"]) for g in gpus] == [
        ("0000:01:00.0", "nvidia", "0302"),
        ("0000:02:00.0", "nvidia", "0302"),
    ]
    assert all(g["iommu_group"] is None and g["group_devices"] == [] for g in gpus)
    assert all(g["numa_node"] is None for g in gpus)
    assert all(g["group_isolated"] is False for g in gpus)


def test_machine_without_iommu(tree):
    gpus, enabled = pci_sysfs.gpu_facts(tree("host_no_iommu"))
    assert enabled is False
    assert pci_sysfs.iommu_enabled(tree("host_no_iommu")) is False
    assert len(gpus) == 1 and gpus[0]["driver"] == "nouveau" and gpus[0]["iommu_group"] is None


def test_machine_without_nvidia(tree):
    gpus, enabled = pci_sysfs.gpu_facts(tree("host_no_nvidia"))
    assert enabled is True
    assert gpus == []


def test_dgx1_eight_v100_not_nvswitch(tree):
    gpus, _enabled = pci_sysfs.gpu_facts(tree("host_dgx1_v100_x8_vfio"))
    assert len(gpus) == 8
    assert {g["device_id"] for g in gpus} == {"1db1"}
    assert all(g["driver"] == "vfio-pci" and g["group_isolated"] for g in gpus)


def test_unbound_device_reports_none(tmp_path):
    root = sysfs_tree.build("host_2gpu_vfio", tmp_path / "sys")
    (root / "devices/pci0000:00/0000:08:00.0/driver").unlink()
    gpus, _enabled = pci_sysfs.gpu_facts(str(root))
    assert gpus[1]["driver"] == "none"


def test_missing_tree_is_empty(tmp_path):
    assert pci_sysfs.gpu_facts(str(tmp_path / "absent")) == ([], False)


def test_parse_lspci_dgx1():
    text = (FIXTURES / "lspci" / "lspci-nnk-d_10de-1db1__vfio-pci__dgx1-v100-x8__deepops.txt").read_text()
    devices = pci_sysfs.parse_lspci_nnk(text)
    assert len(devices) == 8
    assert devices[0] == {
        "address": "0000:08:00.0", "vendor_id": "10de", "device_id": "1db1", "class": "0302",
        "class_name": "3D controller", "name": "NVIDIA Corporation Device", "driver": "vfio-pci",
        "kernel_modules": ["nvidiafb", "nouveau", "nvidia_drm", "nvidia_vgpu_vfio", "nvidia"],
        "subsystem_id": "10de:1212",
    }


def test_parse_lspci_gpu_audio_pairs_without_driver():
    text = (FIXTURES / "lspci" / "lspci-nnk_grep-NVIDIA__no-driver-lines__gp100-x4__deepops.txt").read_text()
    devices = pci_sysfs.parse_lspci_nnk(text)
    assert [d["class"] for d in devices] == ["0300", "0403"] * 4
    assert {d["driver"] for d in devices} == {"none"}
    gpus = [d for d in devices if pci_sysfs.is_nvidia_gpu(d)]
    assert len(gpus) == 4


def test_parse_lspci_nvswitch_is_not_a_gpu():
    text = (FIXTURES / "lspci" / "lspci-nnk-d_10de-1ac1__vfio-pci__nvswitch__deepops.txt").read_text()
    devices = pci_sysfs.parse_lspci_nnk(text)
    assert len(devices) == 3 and not any(pci_sysfs.is_nvidia_gpu(d) for d in devices)


def test_merge_lspci_adds_names_and_unseen_gpus(tree):
    gpus, _enabled = pci_sysfs.gpu_facts(tree("host_2gpu_vfio"))
    text = (FIXTURES / "lspci" / "lspci-nnk_grep-NVIDIA__no-driver-lines__gp100-x4__deepops.txt").read_text()
    merged = pci_sysfs.merge_lspci(gpus, pci_sysfs.parse_lspci_nnk(text))
    assert [g["address"] for g in merged] == ["0000:07:00.0", "0000:08:00.0", "0000:0e:00.0", "0000:0f:00.0"]
    assert merged[0]["driver"] == "vfio-pci" and merged[0]["name"] == "NVIDIA Corporation Device"
    assert merged[2]["functions"] == ["0000:0e:00.0", "0000:0e:00.1"]


@pytest.mark.parametrize(("ids", "bad"), [
    (["10de:20b5", "10DE:1aef"], []),
    (["10de-20b5", "10de:20b", 7], ["10de-20b5", "10de:20b", 7]),
])
def test_validate_pci_ids(ids, bad):
    assert pci_sysfs.validate_pci_ids(ids) == bad
