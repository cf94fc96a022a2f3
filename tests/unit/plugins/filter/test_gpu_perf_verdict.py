"""The gpu_perf_verdict filter (and the verify_* filters of the same plugin) as Ansible calls them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.gpu_perf_verdict import FilterModule

FILTERS = FilterModule().filters()
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
    with pytest.raises(AnsibleFilterError, match=r"verify_row: .*status 'GOOD'"):
        FILTERS["verify_row"]("x", "y", "GOOD", "z")


def test_every_verify_filter_is_registered():
    assert {"gpu_perf_verdict", "verify_row", "verify_worker_gpus", "verify_worker_spec", "verify_guest_view",
            "verify_guest_row", "verify_capacity_rows", "verify_etcd_row", "verify_plan_jobs", "verify_plan_manifests",
            "verify_job_manifests", "verify_judge_job", "verify_build_report", "verify_report_markdown",
            "verify_report_lines"} <= set(FILTERS)
