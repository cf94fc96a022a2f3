"""The gpu_perf_verdict filter and the verify phase's three filters as Ansible calls them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.gpu_perf_verdict import FilterModule
from ansible_collections.cps.gpu_cluster.plugins.filter.verify import FilterModule as VerifyFilters

FILTERS = dict(FilterModule().filters(), **VerifyFilters().filters())
H100 = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "gpu_probe" / "h100-sxm-reference.json").read_text())


def test_reference_passes_and_degraded_fail():
    verdict = FILTERS["gpu_perf_verdict"](H100, "NVIDIA H100 80GB HBM3")
    assert verdict["status"] == "PASS"
    assert {m["status"] for m in verdict["metrics"]} <= {"PASS", "SKIPPED"}
    x4 = FILTERS["gpu_perf_verdict"](dict(H100, pcie_width_current=4), "NVIDIA H100 80GB HBM3")
    assert x4["status"] == "FAIL" and "Gen5 x4 of Gen5 x16" in x4["summary"]
    slow = FILTERS["gpu_perf_verdict"](dict(H100, matmul_bf16_tflops=0.4 * 989), "NVIDIA H100 80GB HBM3")
    assert slow["status"] == "FAIL" and "bf16 395.6 of 989 TFLOP/s (40%)" in slow["summary"]


def test_bad_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match=r"gpu_perf_verdict: .*not JSON"):
        FILTERS["gpu_perf_verdict"]("not json")
    with pytest.raises(AnsibleFilterError, match=r"verify_judge\('row'\): .*status 'GOOD'"):
        FILTERS["verify_judge"]("x", "row", "y", "GOOD", "z")
    with pytest.raises(AnsibleFilterError, match=r"verify_judge: unknown step 'rows'; the steps are capacity_rows, "):
        FILTERS["verify_judge"]("x", "rows")


def test_verify_is_plan_judge_report():
    """Issue 28: the verify role calls three filters, not nineteen."""
    assert {name for name in FILTERS if name.startswith("verify")} == {"verify_plan", "verify_judge", "verify_report"}
    assert FILTERS["verify_report"].steps == ("build", "lines", "markdown")
    assert {"jobs", "manifests", "worker_spec", "expected_capacity"} <= set(FILTERS["verify_plan"].steps)
    assert {"job", "etcd_row", "capacity_rows", "pool_rows", "worker_gpus", "guest_row", "row"} <= set(FILTERS["verify_judge"].steps)
