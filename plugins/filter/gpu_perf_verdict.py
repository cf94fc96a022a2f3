# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verify phase (thin wrappers over module_utils.verify)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import verify


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
