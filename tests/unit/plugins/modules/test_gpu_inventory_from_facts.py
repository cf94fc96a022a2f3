"""The per-node GPU inventory (issue 47) from what the GPU facts modules return on real machines:
pci_gpu_facts run on a sysfs tree built from a real H100 VM's /sys/bus/pci/devices (one GPU
passed through, no IOMMU in the guest) and nvidia_gpu_facts run on that VM's real ``nvidia-smi -q -x``,
and on the real H200 capture (tests/fixtures/SOURCES.md: real-h100/, nvidia-smi/h200-580.159.04.xml)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import kubernetes_validate
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_inventory
from test_nvidia_gpu_facts import ExitJson as SmiExit
from test_nvidia_gpu_facts import run_module as run_smi
from test_nvidia_gpu_facts import stand_in
from test_pci_gpu_facts import ExitJson as PciExit
from test_pci_gpu_facts import run_module as run_pci

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
H100 = FIXTURES / "real-h100"


def sysfs_from_capture(capture, root):
    """A /sys tree with the captured devices' identity files and driver links, as the kernel lays them out."""
    devices = root / "bus" / "pci" / "devices"
    devices.mkdir(parents=True)
    for address, entry in json.loads(capture.read_text())["devices"].items():
        device = root / "devices" / "pci0000:00" / address
        device.mkdir(parents=True)
        for name in ("vendor", "device", "class", "subsystem_vendor", "subsystem_device", "numa_node"):
            (device / name).write_text(str(entry[name]) + "\n")
        if entry["driver"]:
            driver = root / "bus" / "pci" / "drivers" / entry["driver"]
            driver.mkdir(parents=True, exist_ok=True)
            (device / "driver").symlink_to(driver)
        (devices / address).symlink_to(device)
    return root


def smi_result(monkeypatch, tmp_path, xml):
    copy = tmp_path / xml.name
    shutil.copy(xml, copy)
    kind, result = run_smi(monkeypatch, {"nvidia_smi_path": str(stand_in(tmp_path, f'cat "{copy}"\n'))})
    assert kind is SmiExit, result
    return result


def test_h100_vm_inventory(monkeypatch, tmp_path):
    root = sysfs_from_capture(H100 / "sysfs-pci__gpu-vm-h100.json", tmp_path / "sys")
    kind, pci = run_pci(monkeypatch, {"sysfs_path": str(root)})
    assert kind is PciExit, pci
    smi = smi_result(monkeypatch, tmp_path, H100 / "nvidia-smi-q-x__h100-80gb-hbm3__580.159.04.xml")
    inventory = gpu_inventory.node_inventory("wk-gpu1", pci["ansible_facts"]["pci_gpus"], smi)
    # the capture: one H100 (10de:2330) at 0000:00:06.0 bound to nvidia, nvidia-smi's bus id 00000000:00:06.0,
    # driver 580.159.04, MIG Disabled (an H100 can do MIG: the mode is reported, not N/A)
    assert inventory == {
        "node": "wk-gpu1", "count": 1, "models": ["NVIDIA H100 80GB HBM3"], "mig_capable": True, "mig_enabled": False,
        "driver": "580.159.04", "pci_addresses": ["0000:00:06.0"],
        "gpus": [{"pci_address": "0000:00:06.0", "pci_id": "10de:2330", "model": "NVIDIA H100 80GB HBM3",
                  "memory_mib": smi["ansible_facts"]["nvidia_gpus"][0]["memory_total_mib"],
                  "uuid": smi["ansible_facts"]["nvidia_gpus"][0]["uuid"], "mig_mode": "Disabled",
                  "numa_node": None, "driver_bound": "nvidia"}],
    }
    assert inventory["gpus"][0]["memory_mib"] > 80000


def test_driver_container_node_has_pci_only(monkeypatch, tmp_path):
    """With the GPU Operator's driver container there is no nvidia-smi on the node: the PCI bus still
    counts the GPU and names its address; model, driver and MIG are unknown (null), never guessed."""
    root = sysfs_from_capture(H100 / "sysfs-pci__gpu-vm-h100.json", tmp_path / "sys")
    _kind, pci = run_pci(monkeypatch, {"sysfs_path": str(root)})
    inventory = gpu_inventory.node_inventory("wk-gpu1", pci["ansible_facts"]["pci_gpus"], {})
    assert (inventory["count"], inventory["pci_addresses"], inventory["models"], inventory["driver"]) == (
        1, ["0000:00:06.0"], [], None)
    assert inventory["mig_capable"] is False and inventory["gpus"][0]["pci_id"] == "10de:2330"


def test_configmap_of_two_real_nodes_is_a_valid_object(monkeypatch, tmp_path):
    """The H100 VM and the H200 capture (nvidia-smi only) in one ConfigMap, one key per node, validated
    against the Kubernetes schema (kubernetes-validate, strict); the same facts give the same object."""
    root = sysfs_from_capture(H100 / "sysfs-pci__gpu-vm-h100.json", tmp_path / "sys")
    _kind, pci = run_pci(monkeypatch, {"sysfs_path": str(root)})
    h100 = gpu_inventory.node_inventory(
        "wk-gpu1", pci["ansible_facts"]["pci_gpus"],
        smi_result(monkeypatch, tmp_path, H100 / "nvidia-smi-q-x__h100-80gb-hbm3__580.159.04.xml"))
    h200 = gpu_inventory.node_inventory(
        "wk-gpu2", [], smi_result(monkeypatch, tmp_path, FIXTURES / "nvidia-smi" / "h200-580.159.04.xml"))
    assert (h200["count"], h200["models"], h200["pci_addresses"], h200["driver"]) == (
        1, ["NVIDIA H200"], ["0000:00:06.0"], "580.159.04")
    configmap = gpu_inventory.inventory_configmap([h200, h100])
    kubernetes_validate.validate(configmap, "1.33", strict=True)
    assert (configmap["metadata"]["namespace"], configmap["metadata"]["name"]) == ("gpu-operator", "gpu-inventory")
    assert list(configmap["data"]) == ["wk-gpu1.json", "wk-gpu2.json"]
    assert json.loads(configmap["data"]["wk-gpu1.json"]) == h100
    assert gpu_inventory.inventory_configmap([h100, h200]) == configmap
