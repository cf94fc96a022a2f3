# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read NVIDIA GPUs, their drivers and IOMMU groups from a sysfs tree (and ``lspci -nnk``).

Pure functions over a sysfs root (``/sys`` or a captured tree), unit-tested without Ansible.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

NVIDIA_VENDOR_ID = "10de"
# PCI base class 0x03: display controllers (0300 VGA, 0302 3D controller).
DISPLAY_BASE_CLASS = "03"
# PCI class 0604: PCI-to-PCI bridge (root ports, switch ports; NVSwitch is 0680, an endpoint).
PCI_BRIDGE_CLASS = "0604"
CLASS_NAMES = {
    "0300": "VGA compatible controller",
    "0302": "3D controller",
    "0380": "Display controller",
    "0403": "Audio device",
    "0604": "PCI bridge",
    "0680": "Bridge",
    "0c03": "USB controller",
    "0c80": "Serial bus controller",
}
PCI_ID_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\Z")
PCI_ADDRESS_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\Z")
LSPCI_DEVICE_RE = re.compile(
    r"^(?P<address>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (?P<class_name>.+?) "
    r"\[(?P<class>[0-9a-f]{4})\]: (?P<name>.*?) \[(?P<vendor_id>[0-9a-f]{4}):(?P<device_id>[0-9a-f]{4})\]"
)


def normalize_address(address):
    """Full ``dddd:bb:ss.f`` form of a PCI address (lspci drops the domain 0000)."""
    address = address.strip().lower()
    if address.count(":") == 1:
        address = "0000:" + address
    return address


def slot_of(address):
    """The card part of an address (``0000:17:00.0`` -> ``0000:17:00``): all functions of one card."""
    return normalize_address(address).rsplit(".", 1)[0]


def _read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return default


def _hex_id(value):
    """``0x10de`` -> ``10de``; None stays None."""
    if value is None:
        return None
    value = value.lower()
    return value[2:] if value.startswith("0x") else value


def _link_name(path):
    """Basename of a symlink's target (``driver`` -> ``vfio-pci``), None when absent."""
    if not os.path.islink(path):
        return None
    return os.path.basename(os.readlink(path).rstrip("/"))


def read_pci_device(sysfs_path, address):
    """One device's identity, class, driver, IOMMU group and NUMA node from sysfs."""
    base = os.path.join(sysfs_path, "bus", "pci", "devices", address)
    pci_class = _hex_id(_read(os.path.join(base, "class"), "0x000000"))[:4]
    group = _link_name(os.path.join(base, "iommu_group"))
    numa = _read(os.path.join(base, "numa_node"))
    sub_vendor = _hex_id(_read(os.path.join(base, "subsystem_vendor")))
    sub_device = _hex_id(_read(os.path.join(base, "subsystem_device")))
    try:
        numa_node = int(numa) if numa is not None else None
    except ValueError:
        numa_node = None
    return {
        "address": address,
        "vendor_id": _hex_id(_read(os.path.join(base, "vendor"))),
        "device_id": _hex_id(_read(os.path.join(base, "device"))),
        "subsystem_id": "%s:%s" % (sub_vendor, sub_device) if sub_vendor and sub_device else None,
        "class": pci_class,
        "class_name": CLASS_NAMES.get(pci_class, "Unknown [%s]" % pci_class),
        "driver": _link_name(os.path.join(base, "driver")) or "none",
        "iommu_group": int(group) if group is not None and group.isdigit() else None,
        "numa_node": numa_node if numa_node is not None and numa_node >= 0 else None,
    }


def list_pci_addresses(sysfs_path):
    """Every PCI address under ``<sysfs>/bus/pci/devices``, sorted."""
    devices = os.path.join(sysfs_path, "bus", "pci", "devices")
    if not os.path.isdir(devices):
        return []
    return sorted(entry.lower() for entry in os.listdir(devices))


def iommu_groups(sysfs_path):
    """``{group number: [addresses]}`` from ``<sysfs>/kernel/iommu_groups``; empty without an IOMMU."""
    root = os.path.join(sysfs_path, "kernel", "iommu_groups")
    groups = {}
    if not os.path.isdir(root):
        return groups
    for name in os.listdir(root):
        devices = os.path.join(root, name, "devices")
        if name.isdigit() and os.path.isdir(devices):
            groups[int(name)] = sorted(entry.lower() for entry in os.listdir(devices))
    return groups


def iommu_enabled(sysfs_path):
    """True when the kernel runs an IOMMU: it has built at least one IOMMU group."""
    return bool(iommu_groups(sysfs_path))


def is_nvidia_gpu(device):
    """An NVIDIA display or 3D controller (not its audio function, not an NVSwitch bridge)."""
    return device.get("vendor_id") == NVIDIA_VENDOR_ID and (device.get("class") or "").startswith(DISPLAY_BASE_CLASS)


def is_pci_bridge(device):
    """A PCI-to-PCI bridge (class 0604: PCIe root port, switch port): allowed in a GPU's IOMMU group."""
    return (device.get("class") or "") == PCI_BRIDGE_CLASS


def _group_member(device):
    return {key: device[key] for key in ("address", "vendor_id", "device_id", "class", "class_name", "driver")}


def sysfs_path_problem(sysfs_path):
    """Why ``sysfs_path`` cannot be read as a sysfs tree, or '' when it can.

    A missing or non-directory root would otherwise read as "no GPUs", which hides a typo or an
    unmounted /sys behind a wrong answer.
    """
    if not os.path.exists(sysfs_path):
        return "sysfs_path %s does not exist" % sysfs_path
    if not os.path.isdir(sysfs_path):
        return "sysfs_path %s is not a directory" % sysfs_path
    devices = os.path.join(sysfs_path, "bus", "pci", "devices")
    if os.path.exists(devices) and not os.path.isdir(devices):
        return "%s is not a directory" % devices
    return ""


def gpu_facts(sysfs_path):
    """``(pci_gpus, iommu_enabled)`` for a sysfs tree.

    Each GPU lists every device of its IOMMU group (``group_devices``) and, in
    ``group_foreign_devices``, those that are not a function of the same card nor a PCI
    bridge (a root or switch port, which the host keeps and VFIO accepts in a group): a
    non-empty list means the group cannot be passed to a VM as it is.
    """
    groups = iommu_groups(sysfs_path)
    devices = {address: read_pci_device(sysfs_path, address) for address in list_pci_addresses(sysfs_path)}
    gpus = []
    for address in sorted(devices):
        device = devices[address]
        if not is_nvidia_gpu(device):
            continue
        members = groups.get(device["iommu_group"], []) if device["iommu_group"] is not None else []
        group_devices = [
            _group_member(devices.get(member) or read_pci_device(sysfs_path, member)) for member in members
        ]
        foreign = [member["address"] for member in group_devices
                   if slot_of(member["address"]) != slot_of(address) and not is_pci_bridge(member)]
        entry = dict(device)
        entry["functions"] = sorted(other for other in devices if slot_of(other) == slot_of(address))
        entry["group_devices"] = group_devices
        entry["group_foreign_devices"] = foreign
        entry["group_isolated"] = device["iommu_group"] is not None and not foreign
        gpus.append(entry)
    return gpus, bool(groups)


def parse_lspci_nnk(text):
    """Devices from ``lspci -nnk`` output: address, ids, class, name, driver and kernel modules."""
    devices = []
    current = None
    for line in text.splitlines():
        match = LSPCI_DEVICE_RE.match(line.strip()) if line and not line[0].isspace() else None
        if match:
            current = {
                "address": normalize_address(match.group("address")),
                "vendor_id": match.group("vendor_id"),
                "device_id": match.group("device_id"),
                "class": match.group("class"),
                "class_name": match.group("class_name"),
                "name": match.group("name"),
                "driver": "none",
                "kernel_modules": [],
                "subsystem_id": None,
            }
            devices.append(current)
            continue
        if current is None or not line[:1].isspace():
            continue
        key, _sep, value = line.strip().partition(":")
        value = value.strip()
        if key == "Kernel driver in use":
            current["driver"] = value
        elif key == "Kernel modules":
            current["kernel_modules"] = [module.strip() for module in value.split(",") if module.strip()]
        elif key == "Subsystem":
            ids = re.search(r"\[([0-9a-f]{4}:[0-9a-f]{4})\]\s*$", value)
            current["subsystem_id"] = ids.group(1) if ids else None
    return devices


def merge_lspci(gpus, lspci_devices):
    """Add lspci's device ``name`` and ``kernel_modules`` to the sysfs entries, and any NVIDIA
    GPU lspci sees that the sysfs tree lacks (with what lspci knows of it)."""
    by_address = {device["address"]: device for device in lspci_devices}
    merged = []
    seen = set()
    for gpu in gpus:
        entry = dict(gpu)
        extra = by_address.get(gpu["address"], {})
        entry["name"] = extra.get("name")
        entry["kernel_modules"] = extra.get("kernel_modules", [])
        merged.append(entry)
        seen.add(gpu["address"])
    for device in lspci_devices:
        if device["address"] in seen or not is_nvidia_gpu(device):
            continue
        entry = dict(device)
        entry.update({
            "iommu_group": None, "numa_node": None, "group_devices": [], "group_foreign_devices": [],
            "group_isolated": False,
            "functions": sorted(d["address"] for d in lspci_devices if slot_of(d["address"]) == slot_of(device["address"])),
        })
        merged.append(entry)
    return sorted(merged, key=lambda gpu: gpu["address"])


def validate_pci_ids(ids):
    """The entries of ``ids`` that are not ``vvvv:dddd`` hex vendor:device ids."""
    return [pci_id for pci_id in ids if not isinstance(pci_id, str) or not PCI_ID_RE.match(pci_id)]
