# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node GPU inventory (issue 47): what each GPU worker holds, from the GPU facts modules
(pci_gpu_facts: the PCI bus; nvidia_gpu_facts: the driver's view), published in the cluster as the
ConfigMap ``gpu-inventory`` so a platform team reads every node's GPUs without logging in to it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.cps.gpu_cluster.plugins.module_utils.pci_sysfs import normalize_address

CONFIGMAP_NAME = "gpu-inventory"
CONFIGMAP_NAMESPACE = "gpu-operator"
KEY_SUFFIX = ".json"


def _smi_address(bus_id):
    """nvidia-smi's ``00000000:00:06.0`` (an 8-digit domain) as sysfs writes it, ``0000:00:06.0``."""
    text = str(bus_id or "").strip().lower()
    domain, _sep, rest = text.partition(":")
    if not rest:
        return normalize_address(text) if text else ""
    return "%s:%s" % (domain[-4:].rjust(4, "0"), rest)


def node_inventory(node, pci_gpus, smi=None):
    """One node's GPUs: ``{node, count, models, mig_capable, mig_enabled, driver, pci_addresses, gpus}``.

    ``pci_gpus``: pci_gpu_facts' ``pci_gpus`` (the GPUs on the node's PCI bus, passed through to the
    VM); ``smi``: the registered result of nvidia_gpu_facts (its ``ansible_facts``), or nothing where
    nvidia-smi is not installed (the GPU Operator's driver container). Each GPU is one PCI device; the
    driver's view adds its model, memory, UUID and MIG mode, matched by PCI address. A GPU only
    nvidia-smi sees (no sysfs) is listed too. ``mig_capable``: a GPU whose MIG mode nvidia-smi reports
    (null means the GPU cannot do MIG); ``driver``: the version nvidia-smi reports, else null.
    """
    facts = (smi or {}).get("ansible_facts") or {}
    smi_gpus = [gpu for gpu in facts.get("nvidia_gpus") or [] if isinstance(gpu, dict)]
    by_address = dict((_smi_address(gpu.get("pci_bus_id")), gpu) for gpu in smi_gpus)
    gpus = []
    seen = set()
    for device in sorted((d for d in pci_gpus or [] if isinstance(d, dict)), key=lambda d: str(d.get("address"))):
        address = normalize_address(str(device.get("address") or ""))
        seen.add(address)
        gpus.append(_gpu(address, device, by_address.get(address)))
    for address, gpu in sorted(by_address.items()):
        if address not in seen:
            gpus.append(_gpu(address, None, gpu))
    return {
        "node": str(node),
        "count": len(gpus),
        "models": sorted(set(gpu["model"] for gpu in gpus if gpu["model"])),
        "mig_capable": any(gpu["mig_mode"] is not None for gpu in gpus),
        "mig_enabled": any(gpu["mig_mode"] == "Enabled" for gpu in gpus),
        "driver": facts.get("nvidia_driver_version") or None,
        "pci_addresses": [gpu["pci_address"] for gpu in gpus],
        "gpus": gpus,
    }


def _gpu(address, device, smi_gpu):
    device = device or {}
    smi_gpu = smi_gpu or {}
    pci_id = ("%s:%s" % (device["vendor_id"], device["device_id"])) if device.get("vendor_id") and device.get("device_id") else None
    return {
        "pci_address": address,
        "pci_id": pci_id,
        "model": smi_gpu.get("product_name") or None,
        "memory_mib": smi_gpu.get("memory_total_mib"),
        "uuid": smi_gpu.get("uuid") or None,
        "mig_mode": smi_gpu.get("mig_mode_current"),
        "numa_node": device.get("numa_node"),
        "driver_bound": device.get("driver") or None,
    }


def inventory_configmap(nodes, namespace=CONFIGMAP_NAMESPACE, name=CONFIGMAP_NAME):
    """The ConfigMap of the GPU inventory: one key ``<node>.json`` per node (node_inventory as JSON,
    keys sorted, so an unchanged inventory is an unchanged object and a re-run changes nothing)."""
    data = {}
    for entry in nodes or []:
        data[entry["node"] + KEY_SUFFIX] = json.dumps(entry, sort_keys=True, indent=1)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpu-cluster"},
        },
        "data": dict(sorted(data.items())),
    }
