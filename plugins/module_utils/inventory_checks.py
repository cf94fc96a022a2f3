# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of a whole cps.gpu_cluster inventory, as pure functions.

``inventory_problems(groups, hostvars)`` returns one message per problem
(an empty list when the inventory is sound). Each message names the host or
group and the variable, and says what to change. The contract it enforces is
documented in docs/inventory.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import re

from ansible_collections.cps.gpu_cluster.plugins.module_utils.vllm import llm_problems

K3S_MIN_VERSION = (1, 31, 6)
K3S_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)\+k3s(\d+)$")
SEMVER_RE = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")
UNPINNED = ("latest", "stable", "testing", "main", "master", "edge", "head")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_NAME_RE = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$")
PCI_ID_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$")
PCI_ADDRESS_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
MAPPING_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
DELIVERY_MODES = ("direct", "fleet")

PROXMOX_HOSTS = "proxmox_hosts"
CLUSTER = "k3s_cluster"
SERVERS = "k3s_servers"
AGENTS = "k3s_agents"
GPU_WORKERS = "gpu_workers"
NODE_ROLE_GROUPS = ("gpu_workers", "infra_nodes", "app_nodes")

# Cluster-wide variables: name -> (required, kind). They are read from the
# k3s_cluster hosts and must have the same value on all of them.
CLUSTER_VARIABLES = {
    "gpu_cluster_name": (True, "dns_label"),
    "gpu_cluster_domain": (False, "dns_name"),
    "gpu_cluster_node_network": (True, "network"),
    "gpu_cluster_gateway": (True, "ip"),
    "gpu_cluster_dns_servers": (False, "ip_list"),
    "gpu_cluster_api_vip": (True, "ip"),
    "gpu_cluster_cluster_cidr": (True, "network"),
    "gpu_cluster_service_cidr": (True, "network"),
    "gpu_cluster_nfs_server": (False, "host"),
    "gpu_cluster_nfs_path": (False, "abs_path"),
    "gpu_cluster_k3s_version": (True, "k3s_version"),
    "gpu_cluster_gpu_operator_version": (False, "version"),
    "gpu_cluster_delivery": (False, "delivery"),
    "gpu_cluster_lab": (False, "bool"),
}

# Per-host sizes: must be positive integers when set.
POSITIVE_INT_VARIABLES = (
    "gpu_cluster_vm_cores",
    "gpu_cluster_vm_memory_mb",
    "gpu_cluster_vm_disk_gb",
    "gpu_cluster_scratch_disk_gb",
    "gpu_cluster_proxmox_template_id",
)


def _is_str(value):
    return isinstance(value, str)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _net(value):
    """An ip_network from a CIDR string, or None when it is not one (host bits must be zero)."""
    if not _is_str(value) or "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError:
        return None


def _ip(value):
    """An ip_address from a string, or None."""
    if not _is_str(value):
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _group(groups, name):
    return list(groups.get(name) or [])


def parse_k3s_version(value):
    """(major, minor, patch, k3s_release) of a K3s release tag like v1.33.5+k3s1, or None."""
    match = K3S_VERSION_RE.match(value) if _is_str(value) else None
    return tuple(int(part) for part in match.groups()) if match else None


def node_ip(hostvars_of_host):
    """The node IP of a host: gpu_cluster_node_ip when set, else ansible_host."""
    value = hostvars_of_host.get("gpu_cluster_node_ip")
    if value is None:
        value = hostvars_of_host.get("ansible_host")
    return value


def _valid_dns_name(value):
    return _is_str(value) and bool(DNS_NAME_RE.match(value))


# kind -> (is the value valid?, what to use instead). k3s_version and version have their own checks.
KINDS = {
    "dns_label": (lambda v: _is_str(v) and bool(DNS_LABEL_RE.match(v)),
                  "use a DNS label: lowercase letters, digits and '-', at most 63 characters (like homelab)"),
    "dns_name": (_valid_dns_name, "use a lowercase DNS domain (like homelab.lan)"),
    "network": (lambda v: _net(v) is not None,
                "not a network in CIDR form; use an address with zero host bits and a prefix length (like 10.42.0.0/16)"),
    "ip": (lambda v: _ip(v) is not None, "not an IP address; use a literal address (like 10.0.0.100)"),
    "ip_list": (lambda v: isinstance(v, list) and bool(v) and all(_ip(item) is not None for item in v),
                "use a list of IP addresses (like [10.0.0.1])"),
    "host": (lambda v: _ip(v) is not None or _valid_dns_name(v), "use an IP address or a DNS name (like 10.0.0.30)"),
    "abs_path": (lambda v: _is_str(v) and v.startswith("/"), "use an absolute path (like /export/k3s)"),
    "delivery": (lambda v: v in DELIVERY_MODES, "use one of %s" % ", ".join(DELIVERY_MODES)),
    "bool": (lambda v: isinstance(v, bool), "use true or false (a YAML boolean, not a string)"),
}


def _check_kind(where, name, kind, value):
    """Problems of one value against its kind (see CLUSTER_VARIABLES)."""
    if kind == "k3s_version":
        return _check_k3s_version(where, name, value)
    if kind == "version":
        return _check_pinned(where, name, value)
    valid, advice = KINDS[kind]
    if valid(value):
        return []
    separator = ", " if advice.startswith("not ") else "; "
    return ["%s: %s is %r%s%s" % (where, name, value, separator, advice)]


def _check_pinned(where, name, value):
    if _is_str(value) and value.strip().lower() in UNPINNED:
        return ["%s: %s is %r, which is not pinned; pin an exact release (like v1.2.3) so every run installs the same thing" % (where, name, value)]
    if not _is_str(value) or not SEMVER_RE.match(value):
        return ["%s: %s is %r; pin an exact release number (like v1.2.3), not a range or channel" % (where, name, value)]
    return []


def _check_k3s_version(where, name, value):
    if _is_str(value) and value.strip().lower() in UNPINNED:
        return ["%s: %s is %r, a channel, not a release; pin a K3s release like v1.33.5+k3s1" % (where, name, value)]
    parsed = parse_k3s_version(value)
    if parsed is None:
        return ["%s: %s is %r; pin a K3s release tag like v1.33.5+k3s1 (vMAJOR.MINOR.PATCH+k3sN)" % (where, name, value)]
    if parsed[:3] < K3S_MIN_VERSION:
        return ["%s: %s is %s, older than the oldest supported v%d.%d.%d; pin v%d.%d.%d+k3s1 or newer" % ((where, name, value) + K3S_MIN_VERSION * 2)]
    return []


def _cluster_values(groups, hostvars):
    """Cluster-wide values read from the k3s_cluster hosts, plus disagreement problems."""
    problems = []
    hosts = _group(groups, CLUSTER) or _group(groups, SERVERS)
    values = {}
    for name in CLUSTER_VARIABLES:
        seen = {}
        for host in hosts:
            if name in hostvars.get(host, {}):
                seen.setdefault(repr(hostvars[host][name]), []).append(host)
        if len(seen) > 1:
            detail = "; ".join("%s on %s" % (value, ", ".join(on)) for value, on in seen.items())
            problems.append("k3s_cluster: %s differs between hosts (%s); set it once for the whole cluster in group_vars/all" % (name, detail))
        for host in hosts:
            if name in hostvars.get(host, {}):
                values[name] = hostvars[host][name]
                break
    return values, problems


def _check_groups(groups):
    problems = []
    servers = _group(groups, SERVERS)
    if not servers:
        problems.append("k3s_servers: the group is empty; add 1 or 3 hosts to k3s_servers (under k3s_cluster)")
    elif len(servers) == 2:
        problems.append(
            "k3s_servers: 2 servers (%s) give no etcd quorum: etcd needs a majority, so losing either server stops the cluster; "
            "use 3 servers for HA (or 1)" % ", ".join(servers))
    elif len(servers) % 2 == 0:
        problems.append(
            "k3s_servers: %d servers (%s) is an even number; etcd quorum needs an odd count, so add or remove one server (use 3 or 5)"
            % (len(servers), ", ".join(servers)))
    agents = set(_group(groups, AGENTS))
    for host in servers:
        if host in agents:
            roles = [g for g in (AGENTS, *NODE_ROLE_GROUPS) if host in _group(groups, g)]
            problems.append(
                "%s: is in both k3s_servers and %s; a node is either a server or an agent, so remove it from one group "
                "(GPU workers must be agents: servers keep etcd and are never drained for GPU driver work)" % (host, " and ".join(roles)))
    for host in _group(groups, PROXMOX_HOSTS):
        if host in _group(groups, CLUSTER):
            problems.append("%s: is in both proxmox_hosts and k3s_cluster; the Proxmox host runs the VMs and is not a K3s node, remove it from one" % host)
    for index, first in enumerate(NODE_ROLE_GROUPS):
        for second in NODE_ROLE_GROUPS[index + 1:]:
            for host in _group(groups, first):
                if host in _group(groups, second):
                    problems.append("%s: is in both %s and %s; an agent has one node role, remove it from one group" % (host, first, second))
    for group in NODE_ROLE_GROUPS:
        for host in _group(groups, group):
            if host not in agents:
                problems.append("%s: is in %s but not in k3s_agents; nest %s under k3s_agents (k3s_cluster > k3s_agents > %s)" % (host, group, group, group))
    return problems


def _check_names(groups):
    problems = []
    seen = {}
    for host in _group(groups, CLUSTER):
        if not DNS_LABEL_RE.match(host):
            problems.append(
                "%s: the host name becomes the Kubernetes node name and must be a DNS label "
                "(lowercase letters, digits and '-'); rename it (like wk-gpu1)" % host)
        seen.setdefault(host.lower(), []).append(host)
    for hosts in seen.values():
        if len(hosts) > 1:
            problems.append("%s: host names differ only in case and would be the same node name; rename one" % ", ".join(hosts))
    return problems


def _check_node_ips(groups, hostvars, network, vip, gateway):
    problems = []
    cluster = _group(groups, CLUSTER)
    owners = {}
    for host in _group(groups, "all") or list(hostvars):
        value = node_ip(hostvars.get(host, {}))
        address = _ip(value)
        if host in cluster:
            if value is None:
                problems.append("%s: has no node IP; set ansible_host or gpu_cluster_node_ip to its address in gpu_cluster_node_network" % host)
                continue
            if address is None:
                source = "gpu_cluster_node_ip" if "gpu_cluster_node_ip" in hostvars.get(host, {}) else "ansible_host"
                problems.append("%s: node IP %r (from %s) is not an IP address; set gpu_cluster_node_ip to the node's address" % (host, value, source))
                continue
            if network is not None and address.version == network.version:
                if address not in network:
                    problems.append("%s: node IP %s is outside gpu_cluster_node_network %s; change the address or the network" % (host, address, network))
                elif network.num_addresses > 2 and address in (network.network_address, network.broadcast_address):
                    problems.append("%s: node IP %s is the network or broadcast address of %s; pick a host address" % (host, address, network))
            elif network is not None:
                problems.append("%s: node IP %s is not of the same IP version as gpu_cluster_node_network %s" % (host, address, network))
            if vip is not None and address == vip:
                problems.append("%s: node IP %s equals gpu_cluster_api_vip; the VIP must be a free address, change one of them" % (host, address))
            if gateway is not None and address == gateway:
                problems.append("%s: node IP %s equals gpu_cluster_gateway; change the node address" % (host, address))
        if address is not None:
            owners.setdefault(address, []).append(host)
    for address, hosts in owners.items():
        if len(hosts) > 1:
            problems.append("%s: share the IP %s; give every host its own address (ansible_host / gpu_cluster_node_ip)" % (", ".join(hosts), address))
    return problems


def _check_networks(values):
    problems = []
    nets = {}
    for name in ("gpu_cluster_node_network", "gpu_cluster_cluster_cidr", "gpu_cluster_service_cidr"):
        if name in values:
            nets[name] = _net(values[name])
    names = [n for n in nets if nets[n] is not None]
    for index, first in enumerate(names):
        for second in names[index + 1:]:
            if nets[first].version == nets[second].version and nets[first].overlaps(nets[second]):
                problems.append(
                    "%s %s overlaps %s %s; they must be disjoint, change one of them (the homelab uses 10.0.0.0/24, 10.42.0.0/16 and 10.43.0.0/16)"
                    % (first, nets[first], second, nets[second]))
    network = nets.get("gpu_cluster_node_network")
    vip = _ip(values.get("gpu_cluster_api_vip"))
    gateway = _ip(values.get("gpu_cluster_gateway"))
    for name, address in (("gpu_cluster_api_vip", vip), ("gpu_cluster_gateway", gateway)):
        if address is None or network is None:
            continue
        if address.version != network.version or address not in network:
            problems.append("%s %s is outside gpu_cluster_node_network %s; pick an address inside the node network" % (name, address, network))
        elif network.num_addresses > 2 and address in (network.network_address, network.broadcast_address):
            problems.append("%s %s is the network or broadcast address of %s; pick a host address" % (name, address, network))
    if vip is not None and vip == gateway:
        problems.append("gpu_cluster_api_vip %s equals gpu_cluster_gateway; the VIP must be a free address in the node network" % vip)
    return problems, network, vip, gateway


def _check_cluster_variables(groups, values):
    problems = []
    for name, (required, kind) in CLUSTER_VARIABLES.items():
        if name not in values or values[name] is None:
            if required:
                problems.append("k3s_cluster: %s is not set; set it in group_vars/all (see docs/inventory.md)" % name)
            continue
        problems.extend(_check_kind("k3s_cluster", name, kind, values[name]))
    if _group(groups, GPU_WORKERS) and values.get("gpu_cluster_gpu_operator_version") is None:
        problems.append("k3s_cluster: gpu_cluster_gpu_operator_version is not set but gpu_workers has hosts; pin a GPU Operator release (like v25.3.0)")
    if ("gpu_cluster_nfs_server" in values) != ("gpu_cluster_nfs_path" in values):
        problems.append("k3s_cluster: set both gpu_cluster_nfs_server and gpu_cluster_nfs_path, or neither")
    return problems


def _check_versions_elsewhere(hostvars, hosts):
    """Every gpu_cluster_*_version on any host is pinned (not only the known ones)."""
    problems = []
    reported = set()
    for host in hosts:
        for name, value in hostvars.get(host, {}).items():
            if name.startswith("gpu_cluster_") and name.endswith("_version") and name not in CLUSTER_VARIABLES and name not in reported:
                found = _check_pinned(host, name, value)
                if found:
                    reported.add(name)
                    problems.extend(found)
    return problems


def _check_sizes(hostvars, hosts):
    problems = []
    for host in hosts:
        for name in POSITIVE_INT_VARIABLES:
            if name in hostvars.get(host, {}):
                value = hostvars[host][name]
                if not _is_int(value) or value <= 0:
                    problems.append("%s: %s is %r; use a positive integer" % (host, name, value))
    return problems


def _check_proxmox_hosts(groups, hostvars):
    """PCI ids and PCI devices of every Proxmox host; returns (problems, {device name: address})."""
    problems = []
    devices = {}
    addresses = {}
    for host in _group(groups, PROXMOX_HOSTS):
        variables = hostvars.get(host, {})
        ids = variables.get("gpu_cluster_gpu_pci_ids")
        if ids is not None:
            if not isinstance(ids, list):
                problems.append("%s: gpu_cluster_gpu_pci_ids is %r; use a list of vendor:device ids like [\"10de:20b5\"]" % (host, ids))
            else:
                for pci_id in ids:
                    if not _is_str(pci_id) or not PCI_ID_RE.match(pci_id):
                        problems.append(
                            "%s: gpu_cluster_gpu_pci_ids entry %r is not in vvvv:dddd form (4 hex digits vendor, ':', 4 hex digits device, "
                            "like 10de:20b5 from `lspci -nn`); fix it" % (host, pci_id))
                if len({str(i).lower() for i in ids}) != len(ids):
                    problems.append("%s: gpu_cluster_gpu_pci_ids lists an id twice; list each vendor:device id once" % host)
        listed = variables.get("gpu_cluster_gpu_pci_devices")
        if listed is None:
            continue
        if not isinstance(listed, list):
            problems.append("%s: gpu_cluster_gpu_pci_devices is %r; use a list of {name: ..., address: ...}" % (host, listed))
            continue
        for device in listed:
            if not isinstance(device, dict) or "name" not in device or "address" not in device:
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices entry %r needs a name and an address (like {name: a100-0, address: \"0000:17:00.0\"})" % (host, device))
                continue
            name, address = device["name"], device["address"]
            if not _is_str(name) or not MAPPING_NAME_RE.match(name):
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices name %r is not a valid Proxmox mapping id; start with a letter, then letters, digits, '-' or '_'"
                    % (host, name))
            if not _is_str(address) or not PCI_ADDRESS_RE.match(address):
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices %s address %r is not a PCI address; use domain:bus:slot.function like 0000:17:00.0 (from `lspci -D`)"
                    % (host, name, address))
            if name in devices:
                problems.append("%s: PCI device name %s is declared twice in gpu_cluster_gpu_pci_devices; names must be unique" % (host, name))
            devices[name] = address
            key = str(address).lower()
            if len(key) == 7:
                key = "0000:" + key
            if key in addresses:
                problems.append("%s: PCI address %s is declared twice (%s and %s); each card once" % (host, address, addresses[key], name))
            addresses[key] = name
    return problems, devices


def _check_gpu_workers(groups, hostvars, devices):
    problems = []
    assigned = {}
    for host in _group(groups, GPU_WORKERS):
        variables = hostvars.get(host, {})
        count = variables.get("gpu_cluster_gpu_count")
        count_ok = _is_int(count) and count > 0
        if count is None:
            problems.append("%s: gpu_cluster_gpu_count is not set; GPU workers declare how many GPUs they have (a positive integer, like 2)" % host)
        elif not count_ok:
            problems.append("%s: gpu_cluster_gpu_count is %r; use a positive integer (the number of GPUs the node must show)" % (host, count))
        model = variables.get("gpu_cluster_gpu_model")
        if model is None:
            problems.append("%s: gpu_cluster_gpu_model is not set; set the model nvidia-smi reports (like NVIDIA A100 80GB PCIe)" % host)
        elif not _is_str(model) or not model.strip():
            problems.append("%s: gpu_cluster_gpu_model is %r; use the model name nvidia-smi reports (like NVIDIA A100 80GB PCIe)" % (host, model))
        mappings = variables.get("gpu_cluster_gpu_pci_mappings")
        if mappings is None:
            continue
        if not isinstance(mappings, list):
            problems.append("%s: gpu_cluster_gpu_pci_mappings is %r; use a list of PCI device names from gpu_cluster_gpu_pci_devices" % (host, mappings))
            continue
        for name in mappings:
            if name not in devices:
                known = ", ".join(sorted(devices)) or "none declared"
                problems.append(
                    "%s: gpu_cluster_gpu_pci_mappings names %r, which no Proxmox host declares in gpu_cluster_gpu_pci_devices (%s); "
                    "fix the name or declare the device"
                    % (host, name, known))
            elif name in assigned:
                problems.append("%s: PCI device %s is already assigned to %s; a GPU can be passed through to one VM only" % (host, name, assigned[name]))
            else:
                assigned[name] = host
        if count_ok and len(mappings) != count:
            problems.append(
                "%s: gpu_cluster_gpu_pci_mappings lists %d devices but gpu_cluster_gpu_count is %d; make them agree"
                % (host, len(mappings), count))
    return problems


def inventory_problems(groups, hostvars):
    """Every problem of an inventory, one message each (empty list: the inventory is sound).

    ``groups`` maps group name -> list of host names (Ansible's ``groups``);
    ``hostvars`` maps host name -> dict of that host's variables.
    """
    problems = []
    problems.extend(_check_groups(groups))
    problems.extend(_check_names(groups))
    values, differ = _cluster_values(groups, hostvars)
    problems.extend(differ)
    problems.extend(_check_cluster_variables(groups, values))
    network_problems, network, vip, gateway = _check_networks(values)
    problems.extend(network_problems)
    problems.extend(_check_node_ips(groups, hostvars, network, vip, gateway))
    everyone = _group(groups, "all") or list(hostvars)
    problems.extend(_check_sizes(hostvars, everyone))
    problems.extend(_check_versions_elsewhere(hostvars, everyone))
    proxmox_problems, devices = _check_proxmox_hosts(groups, hostvars)
    problems.extend(proxmox_problems)
    problems.extend(_check_gpu_workers(groups, hostvars, devices))
    problems.extend(llm_problems(groups, hostvars))
    return problems
