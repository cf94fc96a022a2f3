"""numa_placement filter: inventory in, plan/table/tfvars out; bad input is a filter error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.numa_placement import FilterModule
from ansible_collections.cps.gpu_cluster.plugins.filter.vfio_setup import FilterModule as VfioFilters

FILTERS = FilterModule().filters()
VFIO = VfioFilters().filters()["vfio_setup"]
CAPTURE = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "numa"
                      / "two-socket-xeon-gold-6248r-8gpu.pci_gpu_facts.json").read_text())
GROUPS = {"all": ["pve1", "wk-gpu1", "cp1"], "proxmox_hosts": ["pve1"], "gpu_workers": ["wk-gpu1"], "k3s_servers": ["cp1"]}
HOSTVARS = {
    "pve1": {"gpu_cluster_gpu_pci_devices": [{"name": "a100-4", "address": "0000:98:00.0"}],
             "gpu_cluster_numa_hugepages": "1G", "ansible_host": "10.0.0.2"},
    "wk-gpu1": {"gpu_cluster_gpu_pci_mappings": ["a100-4"], "gpu_cluster_vm_cores": 8, "gpu_cluster_vm_memory_mb": 65536},
    "cp1": {},
}


def test_plan_from_a_saved_module_result():
    result = FILTERS["numa_placement"](CAPTURE, GROUPS, HOSTVARS, "pve1")
    assert result["problems"] == []
    assert result["tfvars"]["wk-gpu1"] == {"affinity": "26-29,74-77", "host_node": 1, "hugepages": "1024"}
    assert result["tfvars"]["cp1"]["host_node"] == 0
    assert result["hugepages"] == {"1G": {"1": 64}}
    assert result["hugepages_missing"] == ["node 1 has 0 1G huge pages reserved, the plan needs 64"]
    assert result["table"][0].startswith("NUMA placement on pve1")
    assert VFIO(result["hugepages"], "hugepage_args") == ["hugepagesz=1G", "hugepages=1:64"]


def test_refused_plan_gives_no_tfvars():
    hostvars = dict(HOSTVARS, **{"wk-gpu1": dict(HOSTVARS["wk-gpu1"], gpu_cluster_vm_cores=200)})
    result = FILTERS["numa_placement"](CAPTURE, GROUPS, hostvars, "pve1")
    assert result["problems"] and result["tfvars"] == {}


@pytest.mark.parametrize(("capture", "message"), [({"changed": False}, "no host_numa"), ("text", "a mapping")])
def test_bad_capture_is_a_filter_error(capture, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["numa_placement"](capture, GROUPS, HOSTVARS, "pve1")


def test_bad_reservation_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="one size per host"):
        VFIO({"1G": {"0": 1}, "2M": {"0": 2}}, "hugepage_args")
