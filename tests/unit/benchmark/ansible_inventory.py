"""A large inventory shaped the way ansible-core hands it to a filter (issue 45).

The reference homelab's group_vars (inventories/homelab/group_vars, its vault values from
tests/fixtures/homelab-vault.yml) scaled to ``size`` K3s nodes: 3 servers, GPU workers (every
``GPU_EVERY``-th agent, two A100s each, spread over the three homelab pools), infra nodes (every
``INFRA_EVERY``-th) and app nodes (the rest), on ``proxmox_hosts`` Proxmox hosts (50 by default),
each host holding the A100s of the workers placed on it.

What makes it Ansible's shape, not a test's: a playbook's ``hostvars[host][name]`` is templated per
host, so every host holds **its own copy** of every list and dict it inherits from group_vars (the
pools, the profiles, the models: equal content, other objects), and a group variable reaches every
host of its group. Strings stay shared (they are immutable; a copy would not change any check).
The templates of the homelab (``{{ lookup('ansible.builtin.env', 'HOME') }}``, the vault) are given
the values Ansible would have templated.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
HOMELAB = REPO / "inventories" / "homelab"
VAULT = REPO / "tests" / "fixtures" / "homelab-vault.yml"
GPU_EVERY = 50
INFRA_EVERY = 100
PROXMOX_HOSTS = 50
GPUS_PER_WORKER = 2


def _load(path):
    return yaml.safe_load(path.read_text()) or {}


def _templated(value, vault):
    """The value a homelab template has once Ansible templated it on the control node."""
    if isinstance(value, str) and "{{" in value:
        if "lookup('ansible.builtin.env', 'HOME')" in value:
            return value.replace("{{ lookup('ansible.builtin.env', 'HOME') }}", "/home/user").replace(
                "{{ gpu_cluster_name }}", "homelab")
        for name, secret in vault.items():
            if name in value:
                return secret
        raise AssertionError(f"the benchmark does not know how Ansible templates {value!r}")
    return value


def group_vars(vault=None):
    """{group: {variable: value}} of the homelab's group_vars, templated."""
    vault = vault if vault is not None else _load(VAULT)
    result = {}
    for path in sorted((HOMELAB / "group_vars").iterdir()):
        files = sorted(path.glob("*.yml")) if path.is_dir() else [path]
        values = result.setdefault(path.name.removesuffix(".yml"), {})
        for name in files:
            values.update((k, _templated(v, vault)) for k, v in _load(name).items())
    return result


def copied(value):
    """A host's own copy of ``value``: new lists and dicts all the way down, scalars shared."""
    if isinstance(value, dict):
        return {k: copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copied(v) for v in value]
    return value


def inventory(size, proxmox_hosts=PROXMOX_HOSTS):
    """(groups, hostvars) of ``size`` K3s nodes and ``proxmox_hosts`` Proxmox hosts, as a filter gets them."""
    gvars = group_vars()
    network = ipaddress.ip_network("172.16.0.0/12")
    common = dict(gvars["all"], gpu_cluster_node_network=str(network), gpu_cluster_gateway="172.16.0.1",
                  gpu_cluster_api_vip="172.16.0.100", gpu_cluster_nfs_server="172.16.0.30",
                  gpu_cluster_dns_servers=["172.16.0.1"], gpu_cluster_cluster_cidr="10.0.0.0/8",
                  gpu_cluster_service_cidr="192.168.0.0/16")
    servers = ["cp1", "cp2", "cp3"]
    agents = [f"node{i:05d}" for i in range(size - len(servers))]
    workers = agents[::GPU_EVERY]
    infra = [host for i, host in enumerate(agents) if i % INFRA_EVERY == 1]
    apps = sorted(set(agents) - set(workers) - set(infra))
    pve = [f"pve{i:02d}" for i in range(1, proxmox_hosts + 1)]
    # the homelab's pools over every worker, a third each (training, notebooks, inference)
    pools = gvars["all"]["gpu_cluster_gpu_pools"]
    third = -(-len(workers) // len(pools))
    pools = [dict(pool, nodes=workers[i * third:(i + 1) * third]) for i, pool in enumerate(pools)]
    common["gpu_cluster_gpu_pools"] = pools
    # each worker's GPUs are devices of its Proxmox host (worker i on host i % proxmox_hosts)
    on_host = {host: [] for host in pve}
    mappings = {}
    for i, worker in enumerate(workers):
        host = pve[i % len(pve)]
        names = [f"{host}-a100-{len(on_host[host]) + n}" for n in range(GPUS_PER_WORKER)]
        on_host[host].extend(names)
        mappings[worker] = names
    nodes = servers + agents
    hostvars = {}
    base = int(network.network_address) + 1000
    for i, host in enumerate(nodes):
        variables = copied(common)
        if host in servers:
            variables.update(copied(gvars["k3s_servers"]))
        if host in mappings:
            variables.update(copied(gvars["gpu_workers"]))
            variables["gpu_cluster_gpu_pci_mappings"] = mappings[host]
        variables["ansible_host"] = str(ipaddress.ip_address(base + i))
        hostvars[host] = variables
    for i, host in enumerate(pve):
        variables = copied(common)
        variables.update(copied(gvars["proxmox_hosts"]))
        variables["gpu_cluster_proxmox_node"] = host
        if on_host[host]:
            variables["gpu_cluster_gpu_pci_devices"] = [
                {"name": name, "address": f"0000:{n // 32 + 1:02x}:{n % 32:02x}.0"} for n, name in enumerate(on_host[host])]
        else:  # a host without GPU workers (a small inventory on 50 hosts) runs CPU VMs only
            del variables["gpu_cluster_gpu_pci_devices"], variables["gpu_cluster_gpu_pci_ids"]
        variables["ansible_host"] = str(ipaddress.ip_address(int(network.network_address) + 10 + i))
        variables["gpu_cluster_proxmox_api_url"] = f"https://{variables['ansible_host']}:8006/api2/json"
        hostvars[host] = variables
    groups = {"all": pve + nodes, "ungrouped": [], "proxmox_hosts": pve, "k3s_cluster": nodes, "k3s_servers": servers,
              "k3s_agents": agents, "gpu_workers": workers, "infra_nodes": infra, "app_nodes": apps}
    return groups, hostvars
