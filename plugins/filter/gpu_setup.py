# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter gpu_setup: the steps of the GPU phase (role gpu_operator: the operator's values, the
driver, the GPU pools' device plugin configuration, MIG layout and quotas), over the private
Python of plugins/plugin_utils/components.py, gpu_driver.py and gpu_pools.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

components = deferred("components")
gpu_driver = deferred("gpu_driver")
gpu_pools = deferred("gpu_pools")
node_vars = deferred("node_vars")


def gpu_driver_version(workers, current, legacy, override=None):
    """The driver of the GPU nodes from the GPU workers' hostvars (their gpu_cluster_gpu_model):
    ``{version, branch, why}`` (module_utils/gpu_driver.driver_version)."""
    if not isinstance(workers, list):
        raise ValueError("expects the list of the GPU workers' hostvars")
    return gpu_driver.driver_version([node_vars.gpu_model(variables) for variables in workers], current, legacy, override)


def gpu_pool_problems(pools, workers):
    """Problems of the pools against the workers (empty when they can be realised)."""
    return gpu_pools.pool_problems(pools, gpu_pools.workers_view(workers))


STEPS = {
    "operator_values": components.gpu_operator_values,
    "supported_versions": components.supported_versions,
    "driver_version": gpu_driver_version,
    "driver_upgrade_policy": gpu_driver.upgrade_policy,
    "pool_problems": gpu_pool_problems,
    "pool_configmap": gpu_pools.device_plugin_configmap,
    "pool_operator_values": gpu_pools.operator_values,
    "pool_mig_strategy": gpu_pools.mig_strategy,
    "pool_quota_components": gpu_pools.quota_components,
    "pool_node_labels": gpu_pools.node_labels,
}


class FilterModule(object):
    """gpu_setup."""

    def filters(self):
        return {"gpu_setup": phase_filter("gpu_setup", STEPS)}
