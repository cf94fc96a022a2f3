"""nvidia_smi parsing on real ``nvidia-smi -q -x`` XML (tests/fixtures/nvidia-smi, origins in SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    interpret_run,
    parse_query_xml,
    query_argv,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi"

# file: (driver, cuda, product_name, uuid, pci_bus_id, memory MiB, persistence)
CASES = {
    "tesla-t4.xml": ("515.105.01", "11.7", "Tesla T4", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
                     "00000000:00:1E.0", 15360, "Disabled"),
    "rtx-3080-v13.xml": ("595.58.03", "13.2", "NVIDIA GeForce RTX 3080", "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4",
                         "00000000:0C:00.0", 10240, "Disabled"),
    "rtx-3090-v12.xml": ("525.147.05", "12.0", "NVIDIA GeForce RTX 3090", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
                         "00000000:00:10.0", 24576, "Enabled"),
    "quadro-p2000-v12.xml": ("525.125.06", "12.0", "Quadro P2000", "GPU-396caaed-39ca-3199-2e68-717cdb786ec6",
                             "00000000:17:00.0", 5120, "Enabled"),
    # an old driver: no driver/cuda version, persistence mode or pci_bus_id elements
    "gtx-1070-ti.xml": (None, None, "GeForce GTX 1070 Ti", "GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665",
                        "00000000:01:00.0", 4096, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_xml(name):
    driver, cuda, product, uuid, bus_id, memory, persistence = CASES[name]
    facts = parse_query_xml((FIXTURES / name).read_text())
    assert facts["driver_version"] == driver
    assert facts["cuda_version"] == cuda
    assert len(facts["gpus"]) == 1
    gpu = facts["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["product_name"] == product
    assert gpu["uuid"] == uuid
    assert gpu["pci_bus_id"] == bus_id
    assert gpu["memory_total_mib"] == memory
    assert gpu["persistence_mode"] == persistence
    assert gpu["driver_version"] == driver and gpu["cuda_version"] == cuda
    # none of these GPUs can do MIG: N/A becomes null
    assert gpu["mig_mode_current"] is None and gpu["mig_mode_pending"] is None
    assert gpu["mig_devices"] == []


def test_h100_mig_enabled():
    facts = parse_query_xml((FIXTURES / "h100-mig-derived.xml").read_text())
    gpu = facts["gpus"][0]
    assert facts["driver_version"] == "590.48.01" and facts["cuda_version"] == "13.1"
    assert gpu["product_name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["memory_total_mib"] == 81559
    assert gpu["mig_mode_current"] == "Enabled" and gpu["mig_mode_pending"] == "Enabled"
    assert [d["memory_total_mib"] for d in gpu["mig_devices"]] == [40448, 20096, 9984, 9984]
    assert [d["gpu_instance_id"] for d in gpu["mig_devices"]] == [2, 3, 9, 10]
    assert gpu["mig_devices"][0] == {"index": 0, "gpu_instance_id": 2, "compute_instance_id": 0,
                                     "multiprocessor_count": 60, "memory_total_mib": 40448}


def test_two_gpus_are_indexed_in_order():
    one = (FIXTURES / "tesla-t4.xml").read_text()
    start, end = one.index("<gpu id"), one.index("</gpu>") + len("</gpu>")
    second = one[start:end].replace("00000000:00:1E.0", "00000000:00:1F.0").replace(
        "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "GPU-second")
    facts = parse_query_xml(one[:end] + second + one[end:])
    assert [(g["index"], g["pci_bus_id"], g["uuid"]) for g in facts["gpus"]] == [
        (0, "00000000:00:1E.0", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a"),
        (1, "00000000:00:1F.0", "GPU-second"),
    ]


def test_no_gpus_xml():
    facts = parse_query_xml('<?xml version="1.0" ?><nvidia_smi_log><driver_version>590.48.01</driver_version>'
                            "<attached_gpus>0</attached_gpus></nvidia_smi_log>")
    assert facts == {"driver_version": "590.48.01", "cuda_version": None, "gpus": []}


def test_no_devices_found_exit_code():
    facts, message = interpret_run(6, "No devices were found\n", "")
    assert facts["gpus"] == [] and message == "nvidia-smi found no GPUs"


def test_run_failure_and_garbage():
    with pytest.raises(NvidiaSmiError, match="rc 9: NVIDIA-SMI has failed"):
        interpret_run(9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n")
    with pytest.raises(NvidiaSmiError, match="not XML"):
        interpret_run(0, "GPU 0: Tesla T4", "")
    with pytest.raises(NvidiaSmiError, match="expected <nvidia_smi_log>"):
        parse_query_xml("<other/>")


def test_run_ok():
    facts, message = interpret_run(0, (FIXTURES / "tesla-t4.xml").read_text(), "")
    assert message == "nvidia-smi reports 1 GPU(s)" and facts["gpus"][0]["product_name"] == "Tesla T4"


def test_query_argv():
    assert query_argv() == ["nvidia-smi", "-q", "-x"]
    assert query_argv("/usr/local/bin/nvidia-smi") == ["/usr/local/bin/nvidia-smi", "-q", "-x"]
