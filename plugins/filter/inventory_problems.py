# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter inventory_problems: every problem of a cps.gpu_cluster inventory."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: inventory_problems
author: cps.gpu_cluster contributors
version_added: 0.1.0
short_description: List every problem of a cps.gpu_cluster inventory
description:
  - Validates a whole inventory against the contract in C(docs/inventory.md) on the control node,
    without contacting any host.
  - Checks the K3s server count (odd, for etcd quorum), host names, unique node IPs, the node network,
    cluster and service CIDRs (valid and disjoint), the API VIP and gateway (inside the node network,
    not a node IP), required variables and their types, pinned versions, the delivery mode, GPU
    counts and models of the GPU workers, PCI ids, PCI addresses and PCI device assignments.
  - Returns one message per problem, each naming the host or group and the variable and saying what to change.
options:
  _input:
    description: The inventory's groups, as Ansible's C(groups) (group name to list of host names).
    type: dict
    required: true
  hostvars:
    description:
      - The variables of every host, as Ansible's C(hostvars).
      - Only C(ansible_host) and the C(gpu_cluster_*) variables are read.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Collect the inventory's problems
  ansible.builtin.set_fact:
    inventory_problems: "{{ groups | cps.gpu_cluster.inventory_problems(hostvars) }}"

- name: Stop when there are any
  ansible.builtin.fail:
    msg: "{{ inventory_problems | join('\n') }}"
  when: inventory_problems | length > 0
"""

RETURN = r"""
_value:
  description: One message per problem; empty when the inventory is sound.
  type: list
  elements: str
  sample:
    - "k3s_servers: 2 servers (cp1, cp2) give no etcd quorum: etcd needs a majority, so losing either server stops the cluster; use 3 servers for HA (or 1)"
"""

from collections.abc import Mapping

from ansible.errors import AnsibleError, AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.module_utils.inventory_checks import inventory_problems as _inventory_problems


def _wanted(name):
    return name == "ansible_host" or name.startswith("gpu_cluster_")


def _host_variables(hostvars, host):
    """The variables the checks read, templated, as a plain dict."""
    variables = hostvars[host]
    result = {}
    for name in list(variables.keys()):
        if _wanted(name):
            try:
                result[name] = variables[name]
            except AnsibleError as exc:
                raise AnsibleFilterError("inventory_problems: %s: %s cannot be templated: %s" % (host, name, exc)) from exc
    return result


def inventory_problems(groups, hostvars):
    """Every problem of the inventory described by groups and hostvars, one message each."""
    if not isinstance(groups, Mapping):
        raise AnsibleFilterError("inventory_problems: the input must be the groups mapping, got %s" % type(groups).__name__)
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("inventory_problems: hostvars must be a mapping, got %s" % type(hostvars).__name__)
    plain_groups = dict((name, list(hosts)) for name, hosts in groups.items())
    hosts = plain_groups.get("all") or list(hostvars.keys())
    plain_hostvars = dict((host, _host_variables(hostvars, host)) for host in hosts)
    return _inventory_problems(plain_groups, plain_hostvars)


class FilterModule(object):
    """cps.gpu_cluster inventory validation."""

    def filters(self):
        return {"inventory_problems": inventory_problems}
