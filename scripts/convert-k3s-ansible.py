#!/usr/bin/env python3
"""Convert a k3s-io/k3s-ansible or techno-tim/k3s-ansible inventory into a cps.gpu_cluster
inventory directory (docs/migrating.md).

  scripts/convert-k3s-ansible.py SOURCE OUTDIR [--name NAME] [--vip IP] [--network CIDR] [--gateway IP]

SOURCE is anything `ansible-inventory -i` reads (k3s-io's inventory.yml, techno-tim's
inventory/<name>/hosts.ini with its group_vars/). Groups server/master become k3s_servers,
agent/node become k3s_agents (app_nodes; move GPU machines to gpu_workers by hand). Hosts are
renamed server1.., agent1.. (Kubernetes node names) with their address as ansible_host.
Variables: k3s_version -> gpu_cluster_k3s_version; api_endpoint/apiserver_endpoint ->
gpu_cluster_api_vip (when it is an address of its own: k3s-io's default points at the first
server, and then --vip names a free address for kube-vip); extra_server_args/extra_agent_args and
server_config_yaml/agent_config_yaml -> k3s_node_config_extra of k3s_servers/k3s_agents;
cluster_cidr/service_cidr, ansible_user, ansible_port, flannel_iface as they are. The token is
never written: keep it in an ansible-vault file as k3s_token (printed advice). Everything not
converted is listed on stderr. Run preflight on the result:
  ansible-playbook cps.gpu_cluster.preflight -i OUTDIR
"""

import argparse
import ipaddress
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

SERVER_GROUPS = ("server", "master")
AGENT_GROUPS = ("agent", "node")
TOKEN_VARS = ("token", "k3s_token")
VIP_VARS = ("api_endpoint", "apiserver_endpoint")
# connection settings copied as they are (when every node has the same)
CONNECTION_VARS = ("ansible_user", "ansible_port", "ansible_become", "ansible_become_method", "ansible_ssh_private_key_file",
                   "ansible_ssh_common_args", "ansible_python_interpreter")
CONSUMED = {
    "k3s_version", "api_endpoint", "apiserver_endpoint", "extra_server_args", "extra_agent_args", "server_config_yaml",
    "agent_config_yaml", "cluster_cidr", "service_cidr", "ansible_user", "ansible_port", "flannel_iface", "ansible_host",
    *TOKEN_VARS, *CONNECTION_VARS,
}
# inventory magic Ansible adds itself
IGNORED = {"inventory_file", "inventory_dir", "ansible_local"}  # ansible-inventory --list adds ansible_local: {}


class ConversionError(Exception):
    """The source cannot be converted as it is; the message says what to pass or change."""


def args_to_config(args):
    """k3s CLI flags ('--disable traefik --tls-san=x --node-label a=b --node-label c=d') -> config.yaml keys.

    A flag given twice becomes a list; a flag without a value is true."""
    config = {}
    words = shlex.split(args or "")
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            raise ConversionError(f"cannot read {word!r} in the extra args {args!r}: every argument must be a --flag")
        key, sep, value = word[2:].partition("=")
        if not sep and i + 1 < len(words) and not words[i + 1].startswith("--"):
            value, i = words[i + 1], i + 1
        elif not sep:
            value = True
        if key in config:
            config[key] = (config[key] if isinstance(config[key], list) else [config[key]]) + [value]
        else:
            config[key] = value
        i += 1
    return config


def _merge(config, extra_yaml, where):
    if not extra_yaml:
        return config
    extra = yaml.safe_load(extra_yaml)
    if not isinstance(extra, dict):
        raise ConversionError(f"{where} is not a YAML mapping of k3s config.yaml keys")
    merged = dict(config)
    merged.update(extra)
    return merged


def _ip(value):
    try:
        return ipaddress.ip_address(str(value))
    except ValueError:
        return None


def read_inventory(source):
    """(groups, hostvars) as `ansible-inventory --list` resolves them."""
    binary = shutil.which("ansible-inventory")
    if binary is None:
        raise ConversionError("no ansible-inventory on PATH (pip install -r requirements.txt)")
    # the memory cache: facts a jsonfile fact cache holds for these hosts are no inventory variables
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory")
    done = subprocess.run([binary, "-i", str(source), "--list"], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ConversionError(f"ansible-inventory could not read {source}: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    groups = {}

    def hosts_of(group):
        entry = data.get(group) or {}
        found = list(entry.get("hosts") or [])
        for child in entry.get("children") or []:
            found += [h for h in hosts_of(child) if h not in found]
        return found

    for group in data:
        if group != "_meta":
            groups[group] = hosts_of(group)
    return groups, hostvars


def convert(groups, hostvars, *, name="k3s", vip=None, network=None, gateway=None):
    """(files {relative path: YAML data}, notes [str]) of the cps.gpu_cluster inventory."""
    servers = next((groups[g] for g in SERVER_GROUPS if groups.get(g)), [])
    agents = next((groups[g] for g in AGENT_GROUPS if groups.get(g)), [])
    if not servers:
        raise ConversionError("no servers: the source has no host in a group named {}".format(" or ".join(SERVER_GROUPS)))
    first = hostvars.get(servers[0], {})
    common = {k: v for k, v in first.items() if all(hostvars.get(h, {}).get(k) == v for h in servers + agents)}
    notes = []

    def address(host):
        return str(hostvars.get(host, {}).get("ansible_host") or host)

    renamed = {}
    for index, host in enumerate(servers, 1):
        renamed[host] = (f"server{index}", address(host))
    for index, host in enumerate(agents, 1):
        renamed[host] = (f"agent{index}", address(host))

    version = common.get("k3s_version")
    if not version:
        raise ConversionError("the source sets no k3s_version; pin one (like v1.36.4+k3s1) in it or in the result")
    endpoint = next((common[v] for v in VIP_VARS if common.get(v)), "")
    node_addresses = {a for _, a in renamed.values()}
    if vip is None:
        if not endpoint or "{{" in str(endpoint) or str(endpoint) in node_addresses or _ip(endpoint) is None:
            raise ConversionError(
                f"the API endpoint {endpoint!r} is a server's own address (k3s-ansible's default) or not an IP; cps.gpu_cluster "
                "serves the API on a VIP (kube-vip): pass --vip with a free address of the node network")
        vip = str(endpoint)
    first_ip = _ip(renamed[servers[0]][1])
    if network is None:
        if first_ip is None:
            raise ConversionError(f"the first server's address {renamed[servers[0]][1]!r} is not an IP: pass --network and --gateway")
        network = str(ipaddress.ip_network(f"{first_ip}/24", strict=False))
        notes.append(f"gpu_cluster_node_network {network} is the /24 of the first server: check it")
    if gateway is None:
        gateway = str(next(ipaddress.ip_network(network).hosts()))
        notes.append(f"gpu_cluster_gateway {gateway} is the first address of the node network: check it")

    main = {
        "gpu_cluster_name": name,
        "gpu_cluster_node_network": network,
        "gpu_cluster_gateway": gateway,
        "gpu_cluster_api_vip": vip,
        "gpu_cluster_cluster_cidr": str(common.get("cluster_cidr") or "10.42.0.0/16"),
        "gpu_cluster_service_cidr": str(common.get("service_cidr") or "10.43.0.0/16"),
        "gpu_cluster_k3s_version": str(version),
        "gpu_cluster_delivery": "direct",
        # the machines exist already: no Proxmox VMs to create
        "gpu_cluster_provision_enabled": False,
    }
    for key in CONNECTION_VARS:
        if key in common:
            main[key] = common[key]
    if any(common.get(t) for t in TOKEN_VARS):
        notes.append("the source's token is not copied: put it in an ansible-vault file as k3s_token "
                     "(ansible-vault create group_vars/all/vault.yml) so the existing cluster keeps it")
    server_config = _merge(args_to_config(common.get("extra_server_args")), common.get("server_config_yaml"), "server_config_yaml")
    agent_config = _merge(args_to_config(common.get("extra_agent_args")), common.get("agent_config_yaml"), "agent_config_yaml")

    files = {
        "hosts.yml": {"all": {"children": {"k3s_cluster": {"children": {
            "k3s_servers": {"hosts": {renamed[h][0]: {"ansible_host": renamed[h][1]} for h in servers}},
            "k3s_agents": {"children": {
                "gpu_workers": {"hosts": {}},
                "infra_nodes": {"hosts": {}},
                "app_nodes": {"hosts": {renamed[h][0]: {"ansible_host": renamed[h][1]} for h in agents}},
            }},
        }}}}},
        "group_vars/all/main.yml": main,
    }
    if server_config:
        files["group_vars/k3s_servers.yml"] = {"k3s_node_config_extra": server_config}
    if agent_config:
        files["group_vars/k3s_agents.yml"] = {"k3s_node_config_extra": agent_config}
    if common.get("flannel_iface"):
        files["group_vars/k3s_cluster.yml"] = {"k3s_node_flannel_iface": common["flannel_iface"]}
    left = sorted({k for h in servers + agents for k in hostvars.get(h, {})} - CONSUMED - IGNORED)
    if left:
        notes.append("not converted (set the cps.gpu_cluster equivalent by hand, docs/migrating.md): " + ", ".join(left))
    return files, notes


def write(files, outdir):
    out = Path(outdir)
    if out.exists() and any(out.iterdir()):
        raise ConversionError(f"{out} exists and is not empty; name a new directory")
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\n# converted by scripts/convert-k3s-ansible.py (docs/migrating.md)\n"
                        + yaml.safe_dump(data, sort_keys=False, default_flow_style=False))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("outdir")
    parser.add_argument("--name", default="k3s", help="gpu_cluster_name (a DNS label)")
    parser.add_argument("--vip", help="API VIP (a free address of the node network) when the source has none")
    parser.add_argument("--network", help="node network CIDR (default: the /24 of the first server)")
    parser.add_argument("--gateway", help="node network gateway (default: its first address)")
    args = parser.parse_args(argv)
    try:
        groups, hostvars = read_inventory(args.source)
        files, notes = convert(groups, hostvars, name=args.name, vip=args.vip, network=args.network, gateway=args.gateway)
        write(files, args.outdir)
    except ConversionError as exc:
        print(f"convert-k3s-ansible: {exc}", file=sys.stderr)
        return 1
    for note in notes:
        print("NOTE: " + note, file=sys.stderr)
    print(f"wrote {args.outdir}; now run: ansible-playbook cps.gpu_cluster.preflight -i {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
