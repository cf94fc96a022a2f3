# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify phase as three filters (role verify): verify_plan (what to check, from the cluster model
and the inventory), verify_judge (what was seen, as report rows of one shape) and verify_report (the
report), over the private Python of plugins/plugin_utils/verify.py. Rows are found by their
``check``, never by position."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

cluster_workloads = deferred("cluster_workloads")
gpu_inventory = deferred("gpu_inventory")
verify = deferred("verify")


def verify_workers(model, hosts=None):
    """The GPU workers verify plans its Jobs for, from the model (only ``hosts`` when given)."""
    workers = cluster_workloads.verify_workers(model)
    if hosts is None:
        return workers
    names = set(node["name"] for node in model["nodes"] if node["host"] in set(hosts))
    return [w for w in workers if w["node"] in names]


PLAN = {
    "workers": verify_workers,
    "worker_spec": verify.worker_spec,
    "expected_capacity": verify.expected_capacity,
    "jobs": verify.plan_jobs,
    "manifests": verify.plan_manifests,
    "job_manifests": verify.job_manifests,
    "skip_reason": verify.cluster_skip_reason,
    "cannot_run": verify.cannot_run,
    "gpu_inventory_configmap": gpu_inventory.inventory_configmap,
}

JUDGE = {
    "row": verify.row,
    "worker_gpus": verify.worker_gpus,
    "guest_view": verify.guest_view,
    "guest_row": verify.guest_row,
    "capacity_rows": verify.capacity_rows,
    "pool_rows": verify.pool_rows,
    "etcd_row": verify.etcd_row,
    "job": verify.judge_job,
    "gpu_inventory": gpu_inventory.node_inventory,
}

REPORT = {
    "build": verify.build_report,
    "markdown": verify.report_markdown,
    "lines": verify.report_lines,
}


class FilterModule(object):
    """verify_plan, verify_judge, verify_report."""

    def filters(self):
        return {
            "verify_plan": phase_filter("verify_plan", PLAN),
            "verify_judge": phase_filter("verify_judge", JUDGE),
            "verify_report": phase_filter("verify_report", REPORT),
        }
