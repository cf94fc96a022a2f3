"""roles/verify/files/gpu_probe.py without a GPU: its pure helpers (nvidia-smi CSV parsing, clock
reasons, Xid lines, arithmetic, the JSON record with a reason for every null) and its behaviour
without PyTorch; and its real output on an H200 VM (tests/fixtures/gpu_probe, scripts/device-capture.sh)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import verify

REPO = Path(__file__).resolve().parents[3]
PROBE = REPO / "roles" / "verify" / "files" / "gpu_probe.py"
FIXTURES = REPO / "tests" / "fixtures" / "gpu_probe"
spec = importlib.util.spec_from_file_location("gpu_probe", PROBE)
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def test_arithmetic():
    # the reference micro-benchmark's 8192^3 bf16 matmul: 791.7 TFLOP/s is 1.389 ms per matmul
    assert probe.tflops(8192, 0.0013888 * 20, 20) == pytest.approx(791.7, abs=0.1)
    assert probe.gbs(2 << 30, 0.0007165) == pytest.approx(2997.3, abs=1)
    assert probe.tflops(8192, 0) is None and probe.gbs(1, -1) is None


def test_parse_h100_query():
    values, reasons = probe.parse_smi_csv(probe.SMI_FIELDS, (FIXTURES / "h100-query-gpu.csv").read_text())
    gpu = values[0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["pci_bus_id"] == "00000000:00:06.0"
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_width_current"], gpu["pcie_width_max"]) == (5, 5, 16, 16)
    assert (gpu["sm_clock_max_mhz"], gpu["power_limit_w"], gpu["temperature_c"]) == (1980, 700.0, 46)
    assert gpu["ecc_uncorrected"] == 0 and gpu["remapped_rows_pending"] is False
    assert gpu["retired_pages"] is None and reasons[0]["retired_pages"] == "nvidia-smi reports [N/A]"
    assert gpu["retired_pages_pending"] is None and "[N/A]" in reasons[0]["retired_pages_pending"]
    assert gpu["clock_event_reasons"] == ["gpu_idle"]


def test_parse_h200_query_captured_on_the_card():
    """The probe's own nvidia-smi query, run on a real H200 VM (scripts/device-capture.sh)."""
    values, reasons = probe.parse_smi_csv(probe.SMI_FIELDS, (FIXTURES / "h200-query-gpu.csv").read_text())
    gpu = values[0]
    assert gpu["name"] == "NVIDIA H200" and gpu["driver_version"] == "580.159.04"
    assert (gpu["pcie_gen_max"], gpu["pcie_width_max"], gpu["sm_clock_max_mhz"], gpu["power_limit_w"]) == (5, 16, 1980, 700.0)
    assert gpu["retired_pages"] is None and "[N/A]" in reasons[0]["retired_pages"]
    assert gpu["clock_event_reasons"] == ["gpu_idle"]


def test_the_probe_run_on_a_real_h200_is_judged_as_expected():
    """gpu_probe.py itself, run on an H200 VM (torch 2.11, driver 580.159.04): every field measured or
    null with its reason, and the verdict against the H200's datasheet figures is PASS."""
    parsed = verify.parse_probe_log((FIXTURES / "gpu-probe__h200__torch-2.11.jsonl").read_text())
    assert parsed["errors"] == [] and len(parsed["gpus"]) == 1
    gpu, node = parsed["gpus"][0], parsed["node"]
    assert node["gpus"] == 1 and node["allreduce_busbw_gbs"] is None and "fewer than 2 GPUs" in node["unavailable"]["allreduce"]
    for key, value in gpu.items():
        if value is None:
            assert key in gpu["unavailable"], key
    verdict = verify.gpu_perf_verdict(gpu)
    assert verdict["model"] == "NVIDIA H200" and verdict["status"] == "PASS", verdict["summary"]
    measured = {m["metric"]: m for m in verdict["metrics"]}
    assert measured["matmul_bf16_tflops"]["measured"] > 0.6 * 989  # the pass line of THRESHOLDS["matmul"]
    assert measured["pcie_link"]["status"] == "PASS"
    # the same card with its power limit halved (nvidia-smi -pl 350) is flagged, naming the limit (below
    # THRESHOLDS["power_limit"]["pass"] of the default: WARN)
    verdict = verify.gpu_perf_verdict(dict(gpu, power_limit_w=350.0))
    assert verdict["status"] == "WARN" and "power_limit_w" in {m["metric"] for m in verdict["metrics"] if m["status"] == "WARN"}


@pytest.mark.parametrize("mask, names", [
    ("0x0000000000000000", []), ("0x0000000000000004", ["sw_power_cap"]),
    ("0x0000000000000048", ["hw_slowdown", "hw_thermal_slowdown"]), ("[N/A]", None),
])
def test_clock_reasons(mask, names):
    assert probe.clock_reasons(mask) == names


@pytest.mark.parametrize("cell, kind, value", [
    ("5", int, 5), ("700.00", float, 700.0), ("Yes", "yesno", True), ("No", "yesno", False),
    ("[N/A]", int, None), ("[Not Supported]", int, None), ("N/A", str, None), ("abc", int, None),
])
def test_smi_value(cell, kind, value):
    assert probe.smi_value(cell, kind)[0] == value


def test_parse_skips_malformed_lines():
    values = probe.parse_smi_csv(["index", "clocks.sm"], "0, 1755\n1, 1980, extra\nx, 1\n\n")[0]
    assert values == {0: {"sm_clock_mhz": 1755}}


def test_parse_xid():
    log = ("[  12.1] NVRM: Xid (PCI:0000:00:06): 79, pid=123, GPU has fallen off the bus.\n"
           "[  13.0] NVRM: Xid (PCI:0000:01:00): 13, pid=9, Graphics Exception\n")
    assert probe.parse_xid(log) == [79, 13]
    assert probe.parse_xid(log, "00000000:00:06.0") == [79]
    assert probe.parse_xid("", None) == []


def test_record_has_a_reason_for_every_null():
    values, reasons = probe.parse_smi_csv(probe.SMI_FIELDS, (FIXTURES / "h100-query-gpu.csv").read_text())
    # the sample under load: the SM clock up from the idle 345 MHz, a power-saving link trained up again
    loaded = probe.parse_smi_csv(["index", "clocks.sm", "pcie.link.gen.current", "clocks_event_reasons.active"],
                                 "0, 1755, 5, 0x0000000000000000\n")[0]
    smi = probe.apply_load_sample(dict(values[0], pcie_gen_current=1), loaded[0])
    assert (smi["sm_clock_mhz"], smi["pcie_gen_current"], smi["clock_event_reasons"]) == (1755, 5, [])
    record = probe.merge_record(0, {"matmul_bf16_tflops": 791.7, "device_copy_gbs": 2997.0, "h2d_pinned_gbs": 42.1},
                                smi, reasons[0], {"xid_recent": "the kernel log is not readable"})
    nulls = [key for key, value in record.items() if value is None]
    assert nulls and set(nulls) == set(record["unavailable"])
    assert record["unavailable"]["xid_recent"] == "the kernel log is not readable"
    assert record["unavailable"]["matmul_fp32_tflops"] == "not measured"
    # what the probe prints is what the verdict reads: this record (reference numbers) passes
    line = json.dumps(record)
    parsed = verify.parse_probe_log("some warning\n" + line + "\n")
    assert verify.gpu_perf_verdict(parsed["gpus"][0])["status"] == "PASS"
    assert verify.gpu_perf_verdict(dict(record, pcie_width_current=4))["status"] == "FAIL"
    # the idle snapshot alone would read as a slow clock: the probe never judges it
    assert verify.gpu_perf_verdict(dict(record, sm_clock_mhz=345))["status"] == "FAIL"


def test_without_torch_prints_a_node_error(tmp_path):
    # a Python without PyTorch and without nvidia-smi: one JSON line with the reason, exit 2
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(tmp_path)}
    (tmp_path / "torch.py").write_text("raise ImportError('no torch here')\n")
    proc = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 2
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["probe"] == "node" and "PyTorch is missing: no torch here" in out["error"]
