"""nvidia_smi parsing on real ``nvidia-smi -q -x`` XML (tests/fixtures/nvidia-smi, origins in SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    decode_output,
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
# Captured on a real H200 VM (scripts/device-capture.sh, tests/fixtures/SOURCES.md): a MIG-capable card
# with MIG off, so its modes read Disabled (not N/A) and it has no MIG devices.
MIG_CAPABLE = {
    "h200-580.159.04.xml": ("580.159.04", "13.0", "NVIDIA H200", "GPU-bbe438d2-ee1a-686c-6be6-60c223913a12",
                            "00000000:00:06.0", 143771, "Enabled"),
}


@pytest.mark.parametrize("name", sorted(MIG_CAPABLE))
def test_real_xml_of_a_mig_capable_gpu_with_mig_off(name):
    driver, cuda, product, uuid, bus_id, memory, persistence = MIG_CAPABLE[name]
    facts = parse_query_xml((FIXTURES / name).read_text())
    assert (facts["driver_version"], facts["cuda_version"]) == (driver, cuda)
    (gpu,) = facts["gpus"]
    assert (gpu["product_name"], gpu["uuid"], gpu["pci_bus_id"]) == (product, uuid, bus_id)
    assert gpu["product_architecture"] == "Hopper"
    assert gpu["memory_total_mib"] == memory and gpu["persistence_mode"] == persistence
    assert (gpu["mig_mode_current"], gpu["mig_mode_pending"], gpu["mig_devices"]) == ("Disabled", "Disabled", [])


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


def test_query_argv_under_timeout():
    assert query_argv("/usr/bin/nvidia-smi", 30, "/usr/bin/timeout") == [
        "/usr/bin/timeout", "--kill-after=5", "30", "/usr/bin/nvidia-smi", "-q", "-x"]
    assert query_argv("nvidia-smi", 0, "/usr/bin/timeout") == ["nvidia-smi", "-q", "-x"]
    assert query_argv("nvidia-smi", 30, None) == ["nvidia-smi", "-q", "-x"]


@pytest.mark.parametrize("rc", [124, 137, -9])
def test_timed_out_run_names_the_command_and_the_limit(rc):
    with pytest.raises(NvidiaSmiError, match=r"nvidia-smi -q -x did not answer within 30 seconds \(timeout\)"):
        interpret_run(rc, b"", b"", timeout=30)


def test_rc_124_without_timeout_is_an_ordinary_failure():
    with pytest.raises(NvidiaSmiError, match="failed with rc 124"):
        interpret_run(124, b"", b"boom", timeout=0)


def test_non_utf8_output_is_decoded_with_replacement_and_parsed():
    """The real T4 capture with its product name in Latin-1 (as a misconfigured locale would print)."""
    raw = (FIXTURES / "tesla-t4.xml").read_bytes().replace(b"<product_name>Tesla T4", b"<product_name>Tesla T4 \xe9\xff")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    facts, message = interpret_run(0, raw, b"\xff warning\n")
    assert message == "nvidia-smi reports 1 GPU(s)"
    assert facts["gpus"][0]["product_name"] == "Tesla T4 \ufffd\ufffd"
    assert facts["gpus"][0]["uuid"].startswith("GPU-")


def test_non_utf8_error_message_is_reported():
    with pytest.raises(NvidiaSmiError, match="rc 9: NVIDIA-SMI has failed \ufffd"):
        interpret_run(9, b"", b"NVIDIA-SMI has failed \xe9\n")
    assert decode_output(None) == "" and decode_output("text") == "text"
