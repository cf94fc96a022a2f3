# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster model and the scheduling proof as filters: cluster_model, schedule."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, plain_inventory, wrap

_model = deferred("cluster_model")
_workloads = deferred("cluster_workloads")
_domains = deferred("failure_domains")

# What the model and the workload builders read of a host (role defaults are not in hostvars).
_READ = ("ansible_host", "k3s_node_labels", "k3s_node_taints")


def _plain(groups, hostvars, name="cluster_model"):
    """Plain (groups, hostvars) of what the model reads; a value that cannot be templated on the
    control node is left out (preflight names it)."""
    plain_groups, plain_hostvars, _failures = plain_inventory(
        name, groups, hostvars, lambda variable: variable.startswith("gpu_cluster_") or variable in _READ)
    return plain_groups, plain_hostvars


def cluster_model(groups, hostvars):
    """The cluster model of an inventory (plugin_utils/cluster_model.py build)."""
    return _model.inventory(*_plain(groups, hostvars), shared=True).model


def schedule(groups, hostvars):
    """The scheduling proof of an inventory: ``{rows, problems, table}`` (the inventory read once, its
    model built once), and with several Proxmox hosts what losing each costs: ``host_losses``
    (failure_domains.host_losses) and ``host_loss_table`` (its text lines; both [] with one host)."""
    inv = _model.inventory(*_plain(groups, hostvars, "schedule"), shared=True)
    result = _workloads.proof(inv)
    losses = _domains.host_losses(inv) if len(inv.hosts("proxmox_hosts")) > 1 else []
    result["host_losses"] = losses
    result["host_loss_table"] = _domains.table(losses)
    return result


class FilterModule(object):
    """cluster_model, schedule."""

    def filters(self):
        return {
            "cluster_model": wrap(cluster_model, "cluster_model"),
            "schedule": wrap(schedule, "schedule"),
        }
