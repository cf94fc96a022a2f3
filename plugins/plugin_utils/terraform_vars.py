# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The terraform/proxmox variables an inventory describes (pure functions).

playbooks/provision.yml passes ``terraform_vars(groups, hostvars, keys)`` to
the Terraform module; the module writes back an inventory with the same groups
and variables (terraform/proxmox/inventory.yml.tftpl).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, input_checks, node_vars

SCRATCH_BY_ID = re.compile(r"^/dev/disk/by-id/virtio-([A-Za-z0-9_-]{1,20})\Z")

# Inventory variable -> GPU worker field of the Terraform module.
WORKER_FIELDS = (
    ("gpu_cluster_vm_preset", "preset"),
    ("gpu_cluster_vm_cores", "cores"),
    ("gpu_cluster_vm_memory_mb", "memory_mb"),
    ("gpu_cluster_vm_disk_gb", "disk_gb"),
    ("gpu_cluster_scratch_disk_gb", "scratch_disk_gb"),
    ("gpu_cluster_gpu_count", "gpus"),
    ("gpu_cluster_gpu_model", "gpu_model"),
    ("gpu_cluster_gpu_pci_mappings", "gpu_mappings"),
)
CONTROL_PLANE_FIELDS = (
    ("gpu_cluster_vm_cores", "cores"),
    ("gpu_cluster_vm_memory_mb", "memory_mb"),
    ("gpu_cluster_vm_disk_gb", "disk_gb"),
)
# Proxmox host variable -> module variable.
PROXMOX_FIELDS = (
    ("gpu_cluster_proxmox_api_url", "proxmox_endpoint"),
    ("gpu_cluster_proxmox_node", "proxmox_node"),
    ("gpu_cluster_proxmox_template_id", "template_vm_id"),
    ("gpu_cluster_proxmox_storage", "vm_storage"),
    ("gpu_cluster_proxmox_scratch_storage", "scratch_storage"),
    ("gpu_cluster_proxmox_bridge", "bridge"),
)
CLUSTER_FIELDS = (
    ("gpu_cluster_name", "cluster_name"),
    ("gpu_cluster_domain", "domain"),
    ("gpu_cluster_node_network", "node_network"),
    ("gpu_cluster_gateway", "gateway"),
    ("gpu_cluster_dns_servers", "dns_servers"),
    ("ansible_user", "ssh_user"),
)


def members(groups, group):
    """The hosts of a group (empty when the group is absent)."""
    return list(groups.get(group) or [])


def node_ip(variables):
    """A host's node IP: gpu_cluster_node_ip, else ansible_host."""
    return node_vars.node_address(variables) or None


def copy_fields(variables, fields):
    """The module fields for the inventory variables that are set."""
    return dict((target, variables[source]) for source, target in fields if variables.get(source) is not None)


def shared_variables(hosts, hostvars):
    """Variables (gpu_cluster_*) every host has with the same value: the cluster-wide ones."""
    if not hosts:
        return {}
    first = hostvars[hosts[0]]
    shared = {}
    for name in sorted(first):
        if not name.startswith("gpu_cluster_"):
            continue
        if all(name in hostvars[h] and hostvars[h][name] == first[name] for h in hosts[1:]):
            shared[name] = first[name]
    return shared


def vault_reference(name, value):
    """What the generated inventory holds for a variable: its value, or for a secret
    (input_checks.is_secret) a reference to ``vault_<name>`` (docs/gitops.md, docs/provision.md), so
    that no secret is passed to Terraform (-var, its plan and state) or written to the inventory."""
    if not input_checks.is_secret(name, value):
        return value
    if isinstance(value, str):
        return "{{ vault_%s | default('') }}" % name
    return "{{ vault_%s }}" % name


def proxmox_host(inv):
    """Name of the Proxmox host the VMs go to (``inv``: a cluster_model.Inventory); ValueError when the
    inventory has none."""
    hosts = inv.hosts("proxmox_hosts")
    if not hosts:
        raise ValueError("the inventory has no host in proxmox_hosts: add the Proxmox VE server the VMs run on")
    return hosts[0]


def terraform_vars(inventory, hostvars=None, ssh_public_keys=()):
    """The terraform/proxmox variables (a dict for tfvars JSON) the inventory describes.

    inventory: a cluster_model.Inventory, or Ansible's ``groups`` (group name -> host names) with
    hostvars (host -> variables); ssh_public_keys: public key lines cloud-init installs.
    """
    inv = cluster_model.inventory(inventory, hostvars)
    hostvars = inv.hostvars
    pve = proxmox_host(inv)
    pve_vars = hostvars[pve]
    misplaced = input_checks.provision_placement_problems(inv.hosts("proxmox_hosts"), inv.hosts("gpu_workers"), hostvars,
                                                          inv.placement)
    if misplaced:
        raise ValueError(misplaced[0])
    servers = inv.hosts("k3s_servers")
    workers = inv.hosts("gpu_workers")
    if not servers:
        raise ValueError("the inventory has no host in k3s_servers: add the control-plane VMs to create")
    first_server = hostvars[servers[0]]

    result = {}
    result.update(copy_fields(pve_vars, PROXMOX_FIELDS))
    result["proxmox_host_address"] = node_ip(pve_vars) or pve
    result.update(copy_fields(first_server, CLUSTER_FIELDS))
    result["ssh_public_keys"] = list(ssh_public_keys)

    result["control_planes"] = dict((name, {"ip": node_ip(hostvars[name])}) for name in servers)
    size = copy_fields(first_server, CONTROL_PLANE_FIELDS)
    if size:
        result["control_plane_size"] = size

    result["gpu_workers"] = dict(
        (name, dict({"ip": node_ip(hostvars[name])}, **copy_fields(hostvars[name], WORKER_FIELDS))) for name in workers
    )
    if workers:
        first_worker = hostvars[workers[0]]
        if first_worker.get("gpu_cluster_gpu_model"):
            result["gpu_model"] = first_worker["gpu_cluster_gpu_model"]
        match = SCRATCH_BY_ID.match(first_worker.get("gpu_cluster_scratch_device") or "")
        if match:
            result["scratch_disk_serial"] = match.group(1)

    everyone = inv.hosts("all") or list(hostvars)
    cluster_wide = shared_variables(everyone, hostvars)
    proxmox_only = dict(
        (name, value) for name, value in sorted(pve_vars.items())
        if (name.startswith("gpu_cluster_") or name == "ansible_user")
        and name not in cluster_wide
    )
    result["inventory_vars"] = dict(
        (group, dict((name, vault_reference(name, value)) for name, value in variables.items()))
        for group, variables in (("all", cluster_wide), ("proxmox_hosts", proxmox_only)))
    return result
