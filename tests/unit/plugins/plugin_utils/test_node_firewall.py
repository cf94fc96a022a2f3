"""The node firewall's ruleset (issue 47; plugin_utils/node_firewall.py). What each port admits, and
from where, is k3s's table of inbound rules (https://docs.k3s.io/installation/requirements#inbound-rules-for-k3s-nodes,
v1.33-v1.36), plus node-exporter's TCP 9100 (host network; kube-prometheus-stack's prometheus-node-exporter
values.yaml ``hostNetwork: true``, port 9100): TCP 2379-2380 servers -> servers (HA with embedded etcd), TCP 6443 agents -> servers (K3s
supervisor and Kubernetes API Server), UDP 8472 all nodes (flannel VXLAN), TCP 10250 all nodes (kubelet
metrics), UDP 51820/51821 all nodes (flannel wireguard-native IPv4/IPv6), TCP 5001 all nodes (embedded
registry, spegel). The nft syntax itself is checked by nft -c in molecule/k3s_ha, and the packets by a
connection from an agent and a server there."""

from __future__ import annotations

import copy
import re

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import node_firewall as fw
from test_inventory_checks import homelab, one

SETTINGS = {"node_network": "10.0.0.0/24", "cluster_cidr": "10.42.0.0/16", "service_cidr": "10.43.0.0/16"}


def rules(host="cp1", **settings):
    groups, hostvars = homelab()
    model = cluster_model.build(groups, hostvars)
    return fw.ruleset(model, host, **{**SETTINGS, **settings})


def set_elements(text, name):
    match = re.search(r"set " + name + r" \{[^}]*elements = \{ ([^}]*) \}", text)
    return match.group(1).split(", ") if match else None


def admitted(text):
    """The accept rules of the input chain, one string each."""
    chain = text.split("chain input {", 1)[1]
    return [line.strip() for line in chain.splitlines() if line.strip().endswith("accept")]


def test_etcd_only_from_the_servers():
    text = rules()
    assert set_elements(text, "servers4") == ["10.0.0.11/32", "10.0.0.12/32", "10.0.0.13/32"]
    assert "ip saddr @servers4 tcp dport 2379-2380 accept" in admitted(text)
    assert not [rule for rule in admitted(text) if "2379" in rule and "@servers4" not in rule]


def test_api_supervisor_kubelet_and_flannel_from_the_nodes():
    text = rules()
    assert set_elements(text, "nodes4") == ["10.0.0.0/24"]
    accepted = admitted(text)
    assert "ip saddr @clients4 tcp dport 6443 accept" in accepted
    assert "ip saddr @nodes4 tcp dport { 10250, 5001, 9100 } accept" in accepted
    assert "ip saddr @nodes4 udp dport { 8472, 51820, 51821 } accept" in accepted


def test_the_chain_drops_what_it_does_not_admit():
    text = rules()
    assert "type filter hook input priority filter; policy drop;" in text
    # its own table only, replaced atomically: never `flush ruleset` (k3s's tables stay)
    assert "flush ruleset" not in text
    assert text.splitlines()[3:6] == ["table inet gpu_cluster", "delete table inet gpu_cluster", "table inet gpu_cluster {"]
    assert admitted(text)[:2] == ['iifname "lo" accept', "ct state established,related accept"]


def test_clients_ssh_and_nodeports():
    text = rules(clients=["192.168.1.0/24", "fd00:1::/64"], ssh_clients=["192.168.1.0/24"])
    assert set_elements(text, "clients4") == ["10.0.0.0/24", "192.168.1.0/24"]
    assert set_elements(text, "clients6") == ["fd00:1::/64"]
    assert "ip6 saddr @clients6 tcp dport 6443 accept" in admitted(text)
    assert set_elements(text, "ssh4") == ["192.168.1.0/24"] and set_elements(text, "ssh6") is None
    assert "ip saddr @clients4 meta l4proto { tcp, udp } th dport 30000-32767 accept" in admitted(text)
    assert not [rule for rule in admitted(rules(nodeports=False)) if "30000" in rule]


def test_ssh_from_anywhere_by_default_and_pods_reach_the_node():
    text = rules()
    assert set_elements(text, "ssh4") == ["0.0.0.0/0"] and set_elements(text, "ssh6") == ["::/0"]
    assert fw.ruleset({}, "x", ssh_clients=None, **SETTINGS) == fw.ruleset({}, "x", ssh_clients=list(fw.ANYWHERE), **SETTINGS)
    assert set_elements(text, "pods4") == ["10.42.0.0/16", "10.43.0.0/16"]
    assert "ip saddr @pods4 meta l4proto { tcp, udp } accept" in admitted(text)


def test_nfs_on_a_node_that_serves_it():
    assert "ip saddr @nodes4 tcp dport 2049 accept" in admitted(rules(nfs_server=True))
    assert not [rule for rule in admitted(rules()) if "2049" in rule]


def test_servers_by_name_fall_back_to_the_node_network():
    groups, hostvars = homelab()
    hostvars["cp2"]["ansible_host"] = "cp2.homelab.lan"
    text = fw.ruleset(cluster_model.build(groups, hostvars), "wk-gpu1", **SETTINGS)
    assert set_elements(text, "servers4") == ["10.0.0.0/24"]


def test_the_ruleset_names_the_node():
    assert "the node firewall of wk-gpu1" in rules("wk-gpu1")


# ---- preflight ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "words"), [
    ("gpu_cluster_firewall_enabled", "yes", "gpu_cluster_firewall_enabled is 'yes'; use true or false"),
    ("gpu_cluster_firewall_nodeports", 1, "gpu_cluster_firewall_nodeports is 1; use true or false"),
    ("gpu_cluster_firewall_clients", ["192.168.1.5/24"], "gpu_cluster_firewall_clients is ['192.168.1.5/24']; use a list of networks"),
    ("gpu_cluster_firewall_clients", "192.168.1.0/24", "use a list of networks in CIDR form"),
    ("gpu_cluster_firewall_ssh_clients", [], "gpu_cluster_firewall_ssh_clients is []; use a non-empty list of networks"),
])
def test_preflight_refuses_bad_firewall_settings(name, value, words):
    groups, hostvars = homelab()
    each_host(hostvars, name, value)
    one(ic.inventory_problems(groups, hostvars, schedule=False), words)


def test_preflight_accepts_firewall_settings():
    groups, hostvars = homelab()
    for name, value in (("gpu_cluster_firewall_enabled", False), ("gpu_cluster_firewall_nodeports", False),
                        ("gpu_cluster_firewall_clients", ["192.168.1.0/24", "fd00:1::/64"]),
                        ("gpu_cluster_firewall_ssh_clients", ["192.168.1.0/24"])):
        for variables in hostvars.values():
            variables[name] = list(value) if isinstance(value, list) else value
    assert ic.inventory_problems(groups, hostvars, schedule=False) == []


def each_host(hostvars, name, value):
    """``name`` on every host, each its own copy (as Ansible hands each host its variables)."""
    for variables in hostvars.values():
        variables[name] = copy.deepcopy(value)
