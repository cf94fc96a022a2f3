# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verify phase (thin wrappers over module_utils.verify)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_perf_verdict
author: cps.gpu_cluster contributors
version_added: 0.1.0
short_description: Judge one GPU's performance probe output against its model's expected figures
description:
  - Takes one JSON object printed by the verify role's GPU probe (C(roles/verify/files/gpu_probe.py)) and
    compares each metric with the model's data-sheet peak (dense matmul TFLOP/s in bf16, fp16, tf32 and
    fp32, device memory bandwidth, pinned host-to-device and device-to-host bandwidth against the PCIe
    link), the PCIe link against the card's maximum, clocks under load, the power limit, the temperature,
    ECC errors, retired or remapped pages and recent Xid errors.
  - Returns PASS, WARN or FAIL with the reason per metric and overall (the worst metric). A metric the probe
    could not measure is SKIPPED with the probe's reason and does not count.
  - Thresholds are fractions of peak (C(docs/verify.md)); a PCIe link below the card's maximum is FAIL naming
    the likely cause (slot, riser, passthrough configuration); ECC, pending page retirement or row
    remapping and Xid errors are FAIL.
  - The same plugin file provides the verify role's other filters (C(verify_*)), each a thin wrapper over
    C(plugins/module_utils/verify.py).
options:
  _input:
    description: One GPU object of the probe's output (a dict, or its JSON text).
    type: raw
    required: true
  model:
    description:
      - The GPU model name as nvidia-smi prints it (like C(NVIDIA H100 80GB HBM3)), or a dict of expected
        figures (C(bf16), C(fp16), C(tf32), C(fp32) TFLOP/s, C(mem_gbs), C(pcie_gen), C(pcie_width)).
      - Default the probe's own C(name).
    type: raw
  models:
    description: Table entries that add to or override the built-in per-model figures, by model name.
    type: dict
  thresholds:
    description:
      - Overrides of the thresholds, per key (C(matmul), C(memory), C(host_link), C(sm_clock), C(power_limit),
        C(allreduce) with C(pass) and C(fail) fractions; C(temperature_c) with C(warn) and C(fail) degrees).
    type: dict
"""

EXAMPLES = r"""
- name: Judge a probe result
  ansible.builtin.debug:
    msg: "{{ probe_json | cps.gpu_cluster.gpu_perf_verdict('NVIDIA H100 80GB HBM3') }}"
  vars:
    probe_json: '{"probe": "gpu", "index": 0, "name": "NVIDIA H100 80GB HBM3", "matmul_bf16_tflops": 791.7}'
"""

RETURN = r"""
_value:
  description:
    - C(gpu), C(index), C(uuid), C(model) (the table entry used), C(status) (PASS, WARN or FAIL), C(summary)
      (the reasons of the worst metrics, one line) and C(metrics), a list of C(metric), C(measured),
      C(expected), C(unit), C(fraction), C(status) and C(reason).
  type: dict
"""

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.module_utils import verify


class FilterModule(object):
    """gpu_perf_verdict and the verify_* filters of roles/verify."""

    def filters(self):
        functions = {
            "gpu_perf_verdict": verify.gpu_perf_verdict,
            "verify_row": verify.row,
            "verify_cannot_run": verify.cannot_run,
            "verify_cluster_skip_reason": verify.cluster_skip_reason,
            "verify_worker_gpus": verify.worker_gpus,
            "verify_worker_spec": verify.worker_spec,
            "verify_guest_view": verify.guest_view,
            "verify_guest_row": verify.guest_row,
            "verify_expected_capacity": verify.expected_capacity,
            "verify_capacity_rows": verify.capacity_rows,
            "verify_pool_rows": verify.pool_rows,
            "verify_etcd_row": verify.etcd_row,
            "verify_plan_jobs": verify.plan_jobs,
            "verify_plan_manifests": verify.plan_manifests,
            "verify_job_manifests": verify.job_manifests,
            "verify_judge_job": verify.judge_job,
            "verify_build_report": verify.build_report,
            "verify_report_markdown": verify.report_markdown,
            "verify_report_lines": verify.report_lines,
        }
        return {name: _wrap(function, name) for name, function in functions.items()}
