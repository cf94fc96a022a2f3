# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters numa_placement, hugepage_kernel_args and hugepage_shortfall: NUMA placement of the VMs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: numa_placement
author: cps.gpu_cluster contributors
version_added: 0.1.0
short_description: Place the GPU workers and control planes on the Proxmox host's NUMA nodes
description:
  - Puts every GPU worker on the NUMA node of its GPUs with whole physical cores of that node (SMT
    siblings together), its memory bound to the node and huge pages when C(gpu_cluster_numa_hugepages)
    asks, then the control-plane VMs on the cores left, keeping C(gpu_cluster_numa_host_cores) cores of
    every node for the host (docs/performance.md).
  - Returns the plan, the problems that refuse it, the table printed to the user, the C(placement)
    variable of terraform/proxmox and the huge pages to reserve per node.
  - Also provides C(hugepage_kernel_args) (a reservation -> C(hugepagesz=1G hugepages=0:256,1:256)) and
    C(hugepage_shortfall) (what a host's C(host_numa) lacks of a reservation).
options:
  _input:
    description:
      - The host's topology - the facts of M(cps.gpu_cluster.pci_gpu_facts) (C(host_numa), C(pci_gpus)) or
        a saved result of that module (facts under C(ansible_facts)).
    type: dict
    required: true
  groups:
    description: Ansible's C(groups).
    type: dict
    required: true
  hostvars:
    description: Ansible's C(hostvars).
    type: dict
    required: true
  proxmox_host:
    description: The inventory name of the Proxmox host the VMs go to.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Plan the placement from a captured topology
  ansible.builtin.set_fact:
    placement: >-
      {{ lookup('ansible.builtin.file', 'topology/pve1.json') | from_json
         | cps.gpu_cluster.numa_placement(groups, hostvars, 'pve1') }}

- name: Print it
  ansible.builtin.debug:
    msg: "{{ placement.table }}"

- name: Kernel arguments reserving its huge pages
  ansible.builtin.debug:
    msg: "{{ placement.hugepages | cps.gpu_cluster.hugepage_kernel_args }}"
"""

RETURN = r"""
_value:
  description: >-
    C(plan) (per VM - role, node, vcpus, cpus, affinity, memory_mb, gpus, hugepages; per node - host and free CPUs,
    memory left), C(problems) (list of messages; the plan is refused when not empty), C(table) (lines of text),
    C(tfvars) (terraform/proxmox C(placement) - affinity, host_node, hugepages per VM), C(hugepages)
    (size -> node -> pages to reserve on the host) and C(hugepages_missing) (one message per node whose
    topology shows fewer reserved pages than that).
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleError, AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.module_utils.numa import (
    TopologyError,
    hugepage_kernel_args as _hugepage_kernel_args,
    hugepage_shortfall as _hugepage_shortfall,
    placement_request,
    placement_table,
    placement_tfvars,
    plan_placement,
    topology_from_capture,
)


def _plain_hostvars(hostvars, hosts):
    plain = {}
    for host in hosts:
        variables = hostvars[host]
        values = {}
        for name in list(variables.keys()):
            if name.startswith("gpu_cluster_"):
                try:
                    values[name] = variables[name]
                except AnsibleError as exc:
                    raise AnsibleFilterError("numa_placement: %s: %s cannot be templated: %s" % (host, name, exc)) from exc
        plain[host] = values
    return plain


def numa_placement(capture, groups, hostvars, proxmox_host):
    """The NUMA placement of the inventory's VMs on ``proxmox_host`` with this topology."""
    if not isinstance(groups, Mapping) or not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("numa_placement: use it as topology | cps.gpu_cluster.numa_placement(groups, hostvars, proxmox_host)")
    try:
        topology, gpu_nodes = topology_from_capture(dict(capture) if isinstance(capture, Mapping) else capture)
    except TopologyError as exc:
        raise AnsibleFilterError("numa_placement: %s" % exc) from exc
    plain_groups = dict((name, list(hosts)) for name, hosts in groups.items())
    hosts = [proxmox_host, *plain_groups.get("gpu_workers", []), *plain_groups.get("k3s_servers", [])]
    request = placement_request(plain_groups, _plain_hostvars(hostvars, hosts), proxmox_host)
    try:
        plan, problems = plan_placement(topology, gpu_nodes, request["workers"], request["control_planes"],
                                        host_cores=request["host_cores"], host_memory_mb=request["host_memory_mb"],
                                        hugepages=request["hugepages"], allow_span=request["allow_span"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("numa_placement: the topology or the inventory cannot be planned (%s: %s)"
                                 % (type(exc).__name__, exc)) from exc
    return {
        "plan": plan,
        "problems": problems,
        "table": placement_table(plan, proxmox_host),
        "tfvars": placement_tfvars(plan) if not problems else {},
        "hugepages": plan["hugepages"],
        "hugepages_missing": _hugepage_shortfall(plan["hugepages"], topology),
    }


def hugepage_kernel_args(reservation):
    """``{size: {node: pages}}`` -> the kernel arguments reserving them at boot."""
    try:
        return _hugepage_kernel_args(dict(reservation or {}))
    except (ValueError, AttributeError) as exc:
        raise AnsibleFilterError("hugepage_kernel_args: %s" % exc) from exc


def hugepage_shortfall(reservation, host_numa):
    """What ``host_numa`` (pci_gpu_facts) lacks of the reservation, one message per node."""
    return _hugepage_shortfall(dict(reservation or {}), dict(host_numa or {}))


class FilterModule(object):
    """cps.gpu_cluster NUMA placement."""

    def filters(self):
        return {
            "numa_placement": numa_placement,
            "hugepage_kernel_args": hugepage_kernel_args,
            "hugepage_shortfall": hugepage_shortfall,
        }
