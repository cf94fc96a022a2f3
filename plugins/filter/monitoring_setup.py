# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter monitoring_setup: the steps of the monitoring phase (role gpu_monitoring: the stack's
values, the GPU alert rule, the DCGM ServiceMonitor, the dashboards, the logs), over the private
Python of plugins/plugin_utils/gpu_monitoring.py and cluster_logs.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

cluster_logs = deferred("cluster_logs")
gpu_monitoring = deferred("gpu_monitoring")

STEPS = {
    "values": gpu_monitoring.stack_values,
    "rule": gpu_monitoring.prometheus_rule,
    "service_monitor": gpu_monitoring.dcgm_service_monitor,
    "dashboard": gpu_monitoring.dashboard_configmap,
    "logs_components": cluster_logs.components,
}


class FilterModule(object):
    """monitoring_setup."""

    def filters(self):
        return {"monitoring_setup": phase_filter("monitoring_setup", STEPS)}
