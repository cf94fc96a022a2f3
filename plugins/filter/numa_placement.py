# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter numa_placement: NUMA placement of the VMs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from collections.abc import Mapping
from importlib import import_module

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import plain_inventory, refuse_failures

NUMA = "ansible_collections.cps.gpu_cluster.plugins.module_utils.numa"


def numa_placement(capture, groups, hostvars, proxmox_host):
    """The NUMA placement of the inventory's VMs on ``proxmox_host`` with this topology."""
    # imported at the first call, not when ansible-core loads this file to resolve the filters after it
    # (plugin_utils/filter_errors.py deferred)
    numa = import_module(NUMA)
    if not isinstance(groups, Mapping) or not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("numa_placement: use it as topology | cps.gpu_cluster.numa_placement(groups, hostvars, proxmox_host)")
    plain_groups = dict((name, list(hosts)) for name, hosts in groups.items())
    hosts = [proxmox_host, *plain_groups.get("gpu_workers", []), *plain_groups.get("k3s_servers", [])]
    plain_groups, plain_hostvars, failures = plain_inventory("numa_placement", groups, hostvars,
                                                             lambda name: name.startswith("gpu_cluster_"), hosts)
    refuse_failures("numa_placement", failures)
    try:
        topology, gpu_nodes = numa.topology_from_capture(dict(capture) if isinstance(capture, Mapping) else capture)
    except numa.TopologyError as exc:
        raise AnsibleFilterError("numa_placement: %s" % exc) from exc
    request = numa.placement_request(plain_groups, plain_hostvars, proxmox_host)
    try:
        plan, problems = numa.plan_placement(topology, gpu_nodes, request["workers"], request["control_planes"],
                                             host_cores=request["host_cores"], host_memory_mb=request["host_memory_mb"],
                                             hugepages=request["hugepages"], allow_span=request["allow_span"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("numa_placement: the topology or the inventory cannot be planned (%s: %s)"
                                 % (type(exc).__name__, exc)) from exc
    return {
        "plan": plan,
        "problems": problems,
        "table": numa.placement_table(plan, proxmox_host),
        "tfvars": numa.placement_tfvars(plan) if not problems else {},
        "hugepages": plan["hugepages"],
        "hugepages_missing": numa.hugepage_shortfall(plan["hugepages"], topology),
    }


class FilterModule(object):
    """numa_placement."""

    def filters(self):
        return {"numa_placement": numa_placement}
