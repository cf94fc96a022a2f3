# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters state_dir and state_dir_problems (thin wrappers over module_utils.state_dir)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: state_dir
author: cps.gpu_cluster contributors
version_added: 0.2.0
short_description: Where cps.gpu_cluster keeps a cluster's state on the control node
description:
  - Returns C(gpu_cluster_state_dir) when it is set (with C(~) expanded), else C(.gpu-cluster) in the
    directory of the first inventory source (a directory source itself, a file source its parent).
  - With O(sub), one of its sub-directories - C(terraform) (Terraform working directory and state),
    C(inventory) (the inventory Terraform generates), C(reports), C(backups) or C(facts).
  - The companion filter C(cps.gpu_cluster.state_dir_problems) returns the problems of a state directory
    (inside the installed collection, not a directory, not writable) as a list of messages.
options:
  _input:
    description: The inventory sources, C(ansible_inventory_sources).
    type: list
    elements: str
    required: true
  configured:
    description: The value of C(gpu_cluster_state_dir); empty for the default.
    type: str
    default: ""
  sub:
    description: A sub-directory to return instead of the state directory itself.
    type: str
    default: ""
    choices: ["", terraform, inventory, reports, backups, facts]
"""

EXAMPLES = r"""
- name: Where the Terraform state goes
  ansible.builtin.debug:
    msg: "{{ ansible_inventory_sources | cps.gpu_cluster.state_dir(gpu_cluster_state_dir | default(''), 'terraform') }}"
"""

RETURN = r"""
_value:
  description: An absolute path on the control node.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.module_utils import state_dir as _state_dir


def state_dir(inventory_sources, configured="", sub=""):
    """The state directory (or one of its sub-directories) of this inventory."""
    try:
        return _state_dir.state_dir(inventory_sources, configured, sub)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """state_dir, state_dir_problems."""

    def filters(self):
        return {
            "state_dir": state_dir,
            "state_dir_problems": _state_dir.state_dir_problems,
        }
