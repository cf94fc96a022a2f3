# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter gpu_pool_capacity (and the other GPU pool filters): thin wrappers over module_utils.gpu_pools."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_pool_capacity
author: cps.gpu_cluster contributors
version_added: 0.3.0
short_description: Expected capacity of every GPU pool of gpu_cluster_gpu_pools
description:
  - Validates the pools against the GPU workers (the messages preflight prints) and computes what each
    pool must advertise, with exclusive = GPUs; timeslice = GPUs x C(replicas) (C(nvidia.com/gpu), or
    C(nvidia.com/gpu.shared) with C(renameByDefault)); mig = slices per GPU x GPUs, the slices of the
    pool's C(mig_profile) on each node's GPU model as the GPU Operator's default mig-parted configuration
    defines them (C(nvidia.com/mig-<profile>), MIG strategy mixed).
  - Fails with every problem, each saying what to change, when the pools cannot be realised.
  - The companion filters in this file are C(gpu_pool_node_labels), C(gpu_pool_node_labels_all), C(gpu_pool_configmap),
    C(gpu_pool_operator_values), C(gpu_pool_mig_strategy), C(gpu_pool_quotas), C(gpu_pool_quota_components),
    C(gpu_pool_problems) and C(gpu_pool_report) (docs/gpu-pools.md).
options:
  _input:
    description: The pools, as C(gpu_cluster_gpu_pools).
    type: list
    elements: dict
    required: true
  workers:
    description:
      - The inventory's GPU workers, as a list of their C(hostvars) (each with C(inventory_hostname)) or a
        mapping of host name to variables.
      - Read are C(gpu_cluster_gpu_count), C(gpu_cluster_gpu_model), C(gpu_cluster_gpu_device_id),
        C(gpu_cluster_node_name) and C(gpu_cluster_node_labels).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Expected capacity of every pool
  ansible.builtin.debug:
    msg: "{{ gpu_cluster_gpu_pools | cps.gpu_cluster.gpu_pool_capacity(groups['gpu_workers'] | map('extract', hostvars) | list) }}"
"""

RETURN = r"""
_value:
  description: One entry per pool, in the order declared.
  type: list
  elements: dict
  contains:
    name:
      description: The pool's name.
      type: str
    allocation:
      description: exclusive, timeslice or mig.
      type: str
    resource:
      description: The pool's resource name (the first, in name order, when a MIG config makes several sizes).
      type: str
    count:
      description: The expected allocatable count of C(resource) over the pool's nodes.
      type: int
    resources:
      description: Every resource the pool hands out, with its expected count.
      type: dict
    per_node:
      description: Kubernetes node name to {resource, count} each node must advertise.
      type: dict
    nodes:
      description: The pool's Kubernetes node names.
      type: list
      elements: str
  sample:
    - name: inference
      allocation: mig
      resource: nvidia.com/mig-1g.10gb
      count: 14
      resources: {nvidia.com/mig-1g.10gb: 14}
      per_node: {wk-gpu4: {nvidia.com/mig-1g.10gb: 14}}
      nodes: [wk-gpu4]
"""

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.module_utils import gpu_monitoring, gpu_pools


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
            "gpu_pool_quotas": _wrap(gpu_pools.resource_quotas),
            "gpu_pool_quota_components": _wrap(gpu_pools.quota_components),
            "gpu_pool_report": _wrap(gpu_pools.capacity_report),
            "gpu_monitoring_values": _wrap(gpu_monitoring.stack_values),
            "gpu_monitoring_rule": _wrap(gpu_monitoring.prometheus_rule),
            "gpu_monitoring_service_monitor": _wrap(gpu_monitoring.dcgm_service_monitor),
            "gpu_monitoring_dashboard": _wrap(gpu_monitoring.dashboard_configmap),
        }
