# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node firewall (issue 47): the nftables ruleset k3s_prereq writes on every K3s node.

One table of its own (``inet gpu_cluster``), an input chain whose policy drops what it does not
admit; k3s's and flannel's own iptables/nftables rules (NAT, forwarding, kube-proxy) are other tables
and stay theirs: the table is replaced atomically (``table``/``delete table``/``table {...}`` in one
``nft -f``), nothing else is flushed. What it admits follows k3s's inbound rules
(https://docs.k3s.io/installation/requirements#inbound-rules-for-k3s-nodes):

- TCP 6443, the Kubernetes API and the k3s supervisor (k3s serves both on one port), from the node
  network (agents joining, the API VIP's servers) and the networks of the API's clients
  (``clients``: workstations, CI);
- TCP 2379-2380, embedded etcd's clients and peers, from the servers only;
- TCP 10250, the kubelet, from the nodes;
- UDP 8472 (flannel VXLAN) and UDP 51820/51821 (flannel wireguard-native, IPv4/IPv6) from the nodes;
- TCP 5001, the embedded registry mirror (spegel) where it is switched on, from the nodes;
- TCP 9100, node-exporter (the monitoring stack's host-network pod), from the nodes: Prometheus scrapes
  it from another node, and flannel masquerades a pod's traffic to a node address to its node's;
- the NodePort range (k3s's default 30000-32767, TCP and UDP) from the node network and the clients,
  when ``nodeports``;
- every port from the pod and service networks (pods reaching host-network pods, the kubelet,
  node-exporter);
- TCP 22 (SSH, how Ansible reaches the node) from ``ssh_clients`` (default anywhere);
- TCP 2049 (NFSv4) from the node network on a node that also serves NFS (group ``nfs_servers``);
- loopback, established and related traffic, ICMP and ICMPv6 (neighbour discovery, path MTU), and
  DHCP's replies to a node that takes its address from DHCP (UDP 67 -> 68).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress

TABLE = "gpu_cluster"
API_PORT = 6443
ETCD_PORTS = "2379-2380"
KUBELET_PORT = 10250
FLANNEL_UDP_PORTS = (8472, 51820, 51821)
REGISTRY_PORT = 5001
NODE_EXPORTER_PORT = 9100
NODEPORT_RANGE = "30000-32767"
SSH_PORT = 22
NFS_PORT = 2049
ANYWHERE = ("0.0.0.0/0", "::/0")


def _networks(values):
    """(IPv4 networks, IPv6 networks) of CIDR strings or addresses, as nft writes them (sorted, unique)."""
    v4, v6 = set(), set()
    for value in values or ():
        network = ipaddress.ip_network(str(value), strict=False)
        (v4 if network.version == 4 else v6).add(network)
    return ([str(n) for n in sorted(v4)], [str(n) for n in sorted(v6)])


def _is_ip(value):
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def _set(name, family, elements):
    kind = "ipv4_addr" if family == 4 else "ipv6_addr"
    return ["\tset %s%d {" % (name, family), "\t\ttype %s" % kind, "\t\tflags interval", "\t\tauto-merge",
            "\t\telements = { %s }" % ", ".join(elements), "\t}"]


def ruleset(model, host, *, node_network, cluster_cidr, service_cidr, clients=(), ssh_clients=None,
            nodeports=True, nfs_server=False):
    """The nft script for one node (``host``, an inventory name of the cluster ``model``).

    ``node_network``: gpu_cluster_node_network; ``cluster_cidr``/``service_cidr``: the pod and service
    networks; ``clients``: networks outside the node network whose machines use the API and the
    NodePorts; ``ssh_clients``: networks SSH is admitted from (None:
    :data:`ANYWHERE`); ``nodeports``: admit the NodePort range;
    ``nfs_server``: this node serves NFS to the nodes. The servers are the model's ``server`` nodes;
    where one has no IP address (a DNS name), etcd is admitted from the node network.
    """
    nodes = list((model or {}).get("nodes") or [])
    servers = [node["address"] for node in nodes if node.get("role") == "server"]
    if not servers or not all(_is_ip(address) for address in servers):
        servers = [node_network]
    sets = {
        "nodes": _networks([node_network]),
        "servers": _networks(servers),
        "clients": _networks([node_network, *clients]),
        "pods": _networks([cluster_cidr, service_cidr]),
        "ssh": _networks(ANYWHERE if ssh_clients is None else ssh_clients),
    }
    me = [node for node in nodes if node.get("host") == host]
    lines = [
        "#!/usr/sbin/nft -f",
        "# Managed by cps.gpu_cluster (role k3s_prereq): the node firewall of %s (docs/k3s.md, Node firewall)."
        % (me[0]["name"] if me else host),
        "# Replaces only its own table; k3s's and flannel's tables are theirs.",
        "table inet %s" % TABLE,
        "delete table inet %s" % TABLE,
        "table inet %s {" % TABLE,
    ]
    for name in ("nodes", "servers", "clients", "pods", "ssh"):
        for family, elements in ((4, sets[name][0]), (6, sets[name][1])):
            if elements:
                lines += _set(name, family, elements)
    rules = [
        'iifname "lo" accept',
        "ct state established,related accept",
        "ct state invalid drop",
        "meta l4proto { icmp, ipv6-icmp } accept",
        "udp sport 67 udp dport 68 accept",
    ]

    def admit(name, match):
        for family, elements in ((4, sets[name][0]), (6, sets[name][1])):
            if elements:
                rules.append("%s saddr @%s%d %s accept" % ("ip" if family == 4 else "ip6", name, family, match))

    admit("ssh", "tcp dport %d" % SSH_PORT)
    admit("pods", "meta l4proto { tcp, udp }")
    admit("clients", "tcp dport %d" % API_PORT)
    admit("servers", "tcp dport %s" % ETCD_PORTS)
    admit("nodes", "tcp dport { %d, %d, %d }" % (KUBELET_PORT, REGISTRY_PORT, NODE_EXPORTER_PORT))
    admit("nodes", "udp dport { %s }" % ", ".join(str(port) for port in FLANNEL_UDP_PORTS))
    if nodeports:
        admit("clients", "meta l4proto { tcp, udp } th dport %s" % NODEPORT_RANGE)
    if nfs_server:
        admit("nodes", "tcp dport %d" % NFS_PORT)
    lines += ["\tchain input {", "\t\ttype filter hook input priority filter; policy drop;"]
    lines += ["\t\t" + rule for rule in rules]
    lines += ["\t}", "}"]
    return "\n".join(lines) + "\n"
