# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter gpu_pool_capacity (and the other GPU pool filters): thin wrappers over module_utils.gpu_pools."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_monitoring, gpu_pools


def gpu_pool_problems(pools, workers):
    """Problems of the pools against the workers (empty when they can be realised)."""
    return gpu_pools.pool_problems(pools, gpu_pools.workers_view(workers))


class FilterModule(object):
    """cps.gpu_cluster GPU pool and GPU monitoring filters."""

    def filters(self):
        return {
            "gpu_pool_capacity": _wrap(gpu_pools.pool_capacity),
            "gpu_pool_problems": _wrap(gpu_pool_problems),
            "gpu_pool_node_labels": _wrap(gpu_pools.pool_node_labels),
            "gpu_pool_node_labels_all": _wrap(gpu_pools.node_labels),
            "gpu_pool_configmap": _wrap(gpu_pools.device_plugin_configmap),
            "gpu_pool_operator_values": _wrap(gpu_pools.operator_values),
            "gpu_pool_mig_strategy": _wrap(gpu_pools.mig_strategy),
            "gpu_pool_quota_components": _wrap(gpu_pools.quota_components),
            "gpu_pool_report": _wrap(gpu_pools.capacity_report),
            "gpu_monitoring_values": _wrap(gpu_monitoring.stack_values),
            "gpu_monitoring_rule": _wrap(gpu_monitoring.prometheus_rule),
            "gpu_monitoring_service_monitor": _wrap(gpu_monitoring.dcgm_service_monitor),
            "gpu_monitoring_dashboard": _wrap(gpu_monitoring.dashboard_configmap),
        }
