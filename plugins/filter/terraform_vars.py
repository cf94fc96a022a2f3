# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter terraform_vars: the terraform/proxmox variables an inventory describes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: terraform_vars
author: cps.gpu_cluster contributors
version_added: 0.1.0
short_description: The terraform/proxmox variables a cps.gpu_cluster inventory describes
description:
  - Turns the inventory (groups and hostvars) into the variables of the C(terraform/proxmox) module
    (C(docs/provision.md)) - Proxmox node, storage, template, bridge, control planes and GPU workers
    with their IPs, sizes and GPU mappings, and the variables to copy into the generated inventory.
  - Cluster-wide variables are the C(gpu_cluster_*) variables every host has with the same value.
options:
  _input:
    description: Ansible's C(groups).
    type: dict
    required: true
  hostvars:
    description: Ansible's C(hostvars).
    type: dict
    required: true
  ssh_public_keys:
    description: SSH public key lines cloud-init installs on every VM.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Write the Terraform variables
  ansible.builtin.copy:
    content: "{{ groups | cps.gpu_cluster.terraform_vars(hostvars, [lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub')]) | to_nice_json }}"
    dest: /tmp/cluster.tfvars.json
    mode: "0600"
"""

RETURN = r"""
_value:
  description: The module's variables, ready for a C(.tfvars.json) file or community.general.terraform's complex_vars.
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, plain_inventory, refuse_failures, wrap

_terraform = deferred("terraform_vars")
_model = deferred("cluster_model")


def _wanted(name):
    return name in ("ansible_host", "ansible_user") or name.startswith("gpu_cluster_")


def terraform_vars(groups, hostvars, ssh_public_keys):
    """The terraform/proxmox variables of the inventory described by groups and hostvars."""
    if not isinstance(groups, Mapping) or not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("terraform_vars: use it as groups | cps.gpu_cluster.terraform_vars(hostvars, ssh_public_keys)")
    plain_groups, plain_hostvars, failures = plain_inventory("terraform_vars", groups, hostvars, _wanted)
    refuse_failures("terraform_vars", failures)
    return _terraform.terraform_vars(_model.inventory(plain_groups, plain_hostvars, shared=True), ssh_public_keys=list(ssh_public_keys or []))


class FilterModule(object):
    """cps.gpu_cluster Terraform helpers."""

    def filters(self):
        return {"terraform_vars": wrap(terraform_vars, "terraform_vars")}
