"""inventory_checks: the preflight rules as pure functions, on a homelab-shaped
inventory built in Python (groups + hostvars as Ansible would give them)."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import inventory_checks as ic

CLUSTER_VARS = {
    "gpu_cluster_name": "homelab",
    "gpu_cluster_domain": "homelab.lan",
    "gpu_cluster_node_network": "10.0.0.0/24",
    "gpu_cluster_gateway": "10.0.0.1",
    "gpu_cluster_dns_servers": ["10.0.0.1"],
    "gpu_cluster_api_vip": "10.0.0.100",
    "gpu_cluster_cluster_cidr": "10.42.0.0/16",
    "gpu_cluster_service_cidr": "10.43.0.0/16",
    "gpu_cluster_nfs_server": "10.0.0.30",
    "gpu_cluster_nfs_path": "/export/k3s",
    "gpu_cluster_k3s_version": "v1.33.5+k3s1",
    "gpu_cluster_gpu_operator_version": "v26.7.0",
    "gpu_cluster_delivery": "direct",
}


def homelab():
    """(groups, hostvars) of the reference homelab."""
    servers = {"cp1": "10.0.0.11", "cp2": "10.0.0.12", "cp3": "10.0.0.13"}
    workers = {f"wk-gpu{i}": f"10.0.0.2{i}" for i in range(1, 5)}
    groups = {
        "all": ["pve1", *servers, *workers],
        "ungrouped": [],
        "proxmox_hosts": ["pve1"],
        "k3s_cluster": [*servers, *workers],
        "k3s_servers": list(servers),
        "k3s_agents": list(workers),
        "gpu_workers": list(workers),
        "infra_nodes": [],
        "app_nodes": [],
    }
    hostvars = {
        "pve1": {
            **CLUSTER_VARS,
            "ansible_host": "10.0.0.2",
            "gpu_cluster_gpu_pci_ids": ["10de:20b5"],
            "gpu_cluster_gpu_pci_devices": [{"name": f"a100-{i}", "address": f"0000:{0x17 + i:02x}:00.0"} for i in range(8)],
        },
    }
    for host, ip in servers.items():
        hostvars[host] = {**CLUSTER_VARS, "ansible_host": ip, "gpu_cluster_vm_cores": 4}
    for index, (host, ip) in enumerate(workers.items()):
        hostvars[host] = {
            **CLUSTER_VARS,
            "ansible_host": ip,
            "gpu_cluster_gpu_count": 2,
            "gpu_cluster_gpu_model": "NVIDIA A100 80GB PCIe",
            "gpu_cluster_gpu_pci_mappings": [f"a100-{2 * index}", f"a100-{2 * index + 1}"],
        }
    return groups, hostvars


def problems_after(change):
    groups, hostvars = homelab()
    change(groups, hostvars)
    return ic.inventory_problems(groups, hostvars)


def set_all(hostvars, name, value):
    for variables in hostvars.values():
        variables[name] = value


def one(problems, needle):
    """The first problem containing needle; fails when none does."""
    matching = [p for p in problems if needle in p]
    assert matching, f"no problem mentions {needle!r} in {problems!r}"
    return matching[0]


def test_homelab_is_sound():
    groups, hostvars = homelab()
    assert ic.inventory_problems(groups, hostvars) == []


def test_single_server_is_allowed():
    def change(groups, hostvars):
        groups["k3s_servers"] = ["cp1"]
        groups["k3s_cluster"].remove("cp2")
        groups["k3s_cluster"].remove("cp3")
    assert problems_after(change) == []


@pytest.mark.parametrize("servers,needle", [
    (["cp1", "cp2"], "2 servers (cp1, cp2) give no etcd quorum"),
    (["cp1", "cp2", "cp3", "cp4"], "4 servers (cp1, cp2, cp3, cp4) is an even number"),
    ([], "k3s_servers: the group is empty"),
])
def test_server_count_must_be_odd(servers, needle):
    def change(groups, hostvars):
        groups["k3s_servers"] = servers
        hostvars.setdefault("cp4", {**CLUSTER_VARS, "ansible_host": "10.0.0.14"})
    assert one(problems_after(change), needle).startswith("k3s_servers:")


def test_every_problem_is_reported_not_only_the_first():
    def change(groups, hostvars):
        groups["k3s_servers"] = ["cp1", "cp2"]
        groups["k3s_cluster"].remove("cp3")
        set_all(hostvars, "gpu_cluster_k3s_version", "latest")
        hostvars["wk-gpu1"]["gpu_cluster_gpu_count"] = 0
    problems = problems_after(change)
    assert len(problems) == 3
    one(problems, "no etcd quorum")
    one(problems, "'latest', a channel")
    one(problems, "wk-gpu1: gpu_cluster_gpu_count is 0")


@pytest.mark.parametrize("cluster,service,node,needle", [
    ("10.43.0.0/16", "10.43.0.0/16", "10.0.0.0/24", "gpu_cluster_cluster_cidr 10.43.0.0/16 overlaps gpu_cluster_service_cidr 10.43.0.0/16"),
    ("10.0.0.0/8", "10.43.0.0/16", "10.0.0.0/24", "gpu_cluster_node_network 10.0.0.0/24 overlaps gpu_cluster_cluster_cidr 10.0.0.0/8"),
    ("10.42.0.0/16", "10.0.0.0/23", "10.0.0.0/24", "gpu_cluster_node_network 10.0.0.0/24 overlaps gpu_cluster_service_cidr 10.0.0.0/23"),
])
def test_networks_must_be_disjoint(cluster, service, node, needle):
    def change(groups, hostvars):
        set_all(hostvars, "gpu_cluster_cluster_cidr", cluster)
        set_all(hostvars, "gpu_cluster_service_cidr", service)
        set_all(hostvars, "gpu_cluster_node_network", node)
    one(problems_after(change), needle)


@pytest.mark.parametrize("value", ["10.42.0.1/16", "10.42.0.0", "10.42.0.0/33", "ten", 42])
def test_cidr_must_be_a_network(value):
    problems = problems_after(lambda g, h: set_all(h, "gpu_cluster_cluster_cidr", value))
    one(problems, f"gpu_cluster_cluster_cidr is {value!r}, not a network in CIDR form")


def test_ipv6_networks_do_not_overlap_ipv4():
    problems = problems_after(lambda g, h: set_all(h, "gpu_cluster_service_cidr", "fd00:43::/112"))
    assert problems == []


@pytest.mark.parametrize("vip,needle", [
    ("10.0.1.100", "gpu_cluster_api_vip 10.0.1.100 is outside gpu_cluster_node_network 10.0.0.0/24"),
    ("10.0.0.12", "cp2: node IP 10.0.0.12 equals gpu_cluster_api_vip"),
    ("10.0.0.1", "gpu_cluster_api_vip 10.0.0.1 equals gpu_cluster_gateway"),
    ("10.0.0.255", "gpu_cluster_api_vip 10.0.0.255 is the network or broadcast address"),
    ("api.homelab.lan", "gpu_cluster_api_vip is 'api.homelab.lan', not an IP address"),
])
def test_vip(vip, needle):
    one(problems_after(lambda g, h: set_all(h, "gpu_cluster_api_vip", vip)), needle)


def test_gateway_inside_node_network():
    problems = problems_after(lambda g, h: set_all(h, "gpu_cluster_gateway", "192.168.1.1"))
    one(problems, "gpu_cluster_gateway 192.168.1.1 is outside gpu_cluster_node_network")


def test_node_ip_prefers_gpu_cluster_node_ip():
    assert ic.node_ip({"ansible_host": "lab-cp1", "gpu_cluster_node_ip": "10.0.0.11"}) == "10.0.0.11"
    assert ic.node_ip({"ansible_host": "10.0.0.11"}) == "10.0.0.11"
    assert ic.node_ip({}) is None


def test_container_names_with_node_ips_are_sound():
    def change(groups, hostvars):
        for host in groups["all"]:
            hostvars[host]["gpu_cluster_node_ip"] = hostvars[host]["ansible_host"]
            hostvars[host]["ansible_host"] = "lab-" + host
    assert problems_after(change) == []


@pytest.mark.parametrize("change,needle", [
    (lambda g, h: h["wk-gpu2"].update(ansible_host="10.0.0.21"), "wk-gpu1, wk-gpu2: share the IP 10.0.0.21"),
    (lambda g, h: h["pve1"].update(ansible_host="10.0.0.11"), "pve1, cp1: share the IP 10.0.0.11"),
    (lambda g, h: h["cp1"].update(gpu_cluster_node_ip="10.1.0.11"), "cp1: node IP 10.1.0.11 is outside gpu_cluster_node_network"),
    (lambda g, h: h["cp1"].update(ansible_host="cp1.lan"), "cp1: node IP 'cp1.lan' (from ansible_host) is not an IP address"),
    (lambda g, h: h["cp1"].pop("ansible_host"), "cp1: has no node IP"),
    (lambda g, h: h["cp1"].update(ansible_host="10.0.0.0"), "cp1: node IP 10.0.0.0 is the network or broadcast address"),
    (lambda g, h: h["cp1"].update(ansible_host="10.0.0.1"), "cp1: node IP 10.0.0.1 equals gpu_cluster_gateway"),
])
def test_node_ips(change, needle):
    one(problems_after(change), needle)


def test_host_names_are_dns_labels_and_unique_ignoring_case():
    def change(groups, hostvars):
        for name, ip in (("Wk_App1", "10.0.0.31"), ("CP1", "10.0.0.32")):
            groups["all"].append(name)
            groups["k3s_cluster"].append(name)
            groups["k3s_agents"].append(name)
            groups["app_nodes"].append(name)
            hostvars[name] = {**CLUSTER_VARS, "ansible_host": ip}
    problems = problems_after(change)
    one(problems, "Wk_App1: the host name becomes the Kubernetes node name")
    one(problems, "cp1, CP1: host names differ only in case")


def test_group_overlaps_are_refused():
    def change(groups, hostvars):
        groups["gpu_workers"].append("cp1")
        groups["k3s_agents"].append("cp1")
        groups["app_nodes"].append("wk-gpu1")
        groups["k3s_cluster"].append("pve1")
        groups["infra_nodes"].append("pve1")
    problems = problems_after(change)
    one(problems, "cp1: is in both k3s_servers and k3s_agents and gpu_workers")
    one(problems, "wk-gpu1: is in both gpu_workers and app_nodes")
    one(problems, "pve1: is in both proxmox_hosts and k3s_cluster")
    one(problems, "pve1: is in infra_nodes but not in k3s_agents")


@pytest.mark.parametrize("name,value,needle", [
    ("gpu_cluster_name", "Home_Lab", "gpu_cluster_name is 'Home_Lab'; use a DNS label"),
    ("gpu_cluster_name", "a" * 64, "use a DNS label"),
    ("gpu_cluster_domain", "Home Lab", "gpu_cluster_domain is 'Home Lab'; use a lowercase DNS domain"),
    ("gpu_cluster_dns_servers", "10.0.0.1", "gpu_cluster_dns_servers is '10.0.0.1'; use a list of IP addresses"),
    ("gpu_cluster_nfs_server", "nfs server", "gpu_cluster_nfs_server is 'nfs server'; use an IP address or a DNS name"),
    ("gpu_cluster_nfs_path", "export/k3s", "gpu_cluster_nfs_path is 'export/k3s'; use an absolute path"),
    ("gpu_cluster_delivery", "helm", "gpu_cluster_delivery is 'helm'; use one of direct, fleet"),
    ("gpu_cluster_lab", "yes", "gpu_cluster_lab is 'yes'; use true or false"),
    ("gpu_cluster_k3s_version", "latest", "gpu_cluster_k3s_version is 'latest', a channel, not a release"),
    ("gpu_cluster_k3s_version", "Stable", "gpu_cluster_k3s_version is 'Stable', a channel"),
    ("gpu_cluster_k3s_version", "v1.33.5", "pin a K3s release tag like v1.33.5+k3s1"),
    ("gpu_cluster_k3s_version", "v1.31.5+k3s1", "older than the oldest supported v1.31.6"),
    ("gpu_cluster_k3s_version", "v1.30.10+k3s1", "older than the oldest supported v1.31.6"),
    ("gpu_cluster_gpu_operator_version", "latest", "gpu_cluster_gpu_operator_version is 'latest', which is not pinned"),
    ("gpu_cluster_gpu_operator_version", ">=v25.0.0", "pin an exact release number"),
])
def test_cluster_variable_types(name, value, needle):
    one(problems_after(lambda g, h: set_all(h, name, value)), needle)


@pytest.mark.parametrize("version", ["v1.31.6+k3s1", "v1.33.5+k3s1", "v1.40.0+k3s2"])
def test_supported_k3s_versions(version):
    assert problems_after(lambda g, h: set_all(h, "gpu_cluster_k3s_version", version)) == []


def test_parse_k3s_version():
    assert ic.parse_k3s_version("v1.33.5+k3s1") == (1, 33, 5, 1)
    assert ic.parse_k3s_version("1.33.5") is None
    assert ic.parse_k3s_version(None) is None


@pytest.mark.parametrize("name", sorted(n for n, (required, _kind) in ic.CLUSTER_VARIABLES.items() if required))
def test_required_cluster_variables(name):
    def change(groups, hostvars):
        for variables in hostvars.values():
            variables.pop(name, None)
    one(problems_after(change), f"k3s_cluster: {name} is not set")


def test_optional_cluster_variables_may_be_absent():
    def change(groups, hostvars):
        for variables in hostvars.values():
            for name in ("gpu_cluster_domain", "gpu_cluster_dns_servers", "gpu_cluster_nfs_server", "gpu_cluster_nfs_path", "gpu_cluster_delivery"):
                variables.pop(name)
    assert problems_after(change) == []


def test_gpu_operator_version_required_only_with_gpu_workers():
    def drop(groups, hostvars):
        for variables in hostvars.values():
            variables.pop("gpu_cluster_gpu_operator_version")
    one(problems_after(drop), "gpu_cluster_gpu_operator_version is not set but gpu_workers has hosts")

    def cpu_only(groups, hostvars):
        drop(groups, hostvars)
        groups["app_nodes"], groups["gpu_workers"] = groups["gpu_workers"], []
        for host in groups["app_nodes"]:
            for name in ("gpu_cluster_gpu_count", "gpu_cluster_gpu_model", "gpu_cluster_gpu_pci_mappings"):
                hostvars[host].pop(name)
    assert problems_after(cpu_only) == []


def test_nfs_server_and_path_go_together():
    problems = problems_after(lambda g, h: [v.pop("gpu_cluster_nfs_path") for v in h.values()])
    one(problems, "set both gpu_cluster_nfs_server and gpu_cluster_nfs_path, or neither")


def test_cluster_variables_must_agree():
    problems = problems_after(lambda g, h: h["wk-gpu3"].update(gpu_cluster_service_cidr="10.44.0.0/16"))
    message = one(problems, "gpu_cluster_service_cidr differs between hosts")
    assert "on wk-gpu3" in message


def test_other_versions_must_be_pinned():
    problems = problems_after(lambda g, h: set_all(h, "gpu_cluster_nfs_provisioner_version", "latest"))
    assert problems == ["pve1: gpu_cluster_nfs_provisioner_version is 'latest', which is not pinned; "
                        "pin an exact release (like v1.2.3) so every run installs the same thing"]


@pytest.mark.parametrize("value", [0, -1, "4", True, 2.5])
def test_sizes_are_positive_integers(value):
    one(problems_after(lambda g, h: h["cp2"].update(gpu_cluster_vm_cores=value)), f"cp2: gpu_cluster_vm_cores is {value!r}; use a positive integer")


@pytest.mark.parametrize("count,needle", [
    (0, "wk-gpu1: gpu_cluster_gpu_count is 0; use a positive integer"),
    ("2", "wk-gpu1: gpu_cluster_gpu_count is '2'; use a positive integer"),
    (True, "wk-gpu1: gpu_cluster_gpu_count is True"),
    (None, "wk-gpu1: gpu_cluster_gpu_count is not set"),
])
def test_gpu_count(count, needle):
    def change(groups, hostvars):
        hostvars["wk-gpu1"]["gpu_cluster_gpu_count"] = count
        if count is None:
            del hostvars["wk-gpu1"]["gpu_cluster_gpu_count"]
    one(problems_after(change), needle)


@pytest.mark.parametrize("model,needle", [(None, "wk-gpu2: gpu_cluster_gpu_model is not set"), ("  ", "wk-gpu2: gpu_cluster_gpu_model is '  '")])
def test_gpu_model(model, needle):
    def change(groups, hostvars):
        hostvars["wk-gpu2"]["gpu_cluster_gpu_model"] = model
        if model is None:
            del hostvars["wk-gpu2"]["gpu_cluster_gpu_model"]
    one(problems_after(change), needle)


@pytest.mark.parametrize("ids,needle", [
    (["10de-20b5"], "entry '10de-20b5' is not in vvvv:dddd form"),
    (["10de:20b"], "entry '10de:20b' is not in vvvv:dddd form"),
    (["10de:20bg"], "entry '10de:20bg' is not in vvvv:dddd form"),
    (["0x10de:0x20b5"], "is not in vvvv:dddd form"),
    ("10de:20b5", "gpu_cluster_gpu_pci_ids is '10de:20b5'; use a list"),
    (["10de:20b5", "10DE:20B5"], "gpu_cluster_gpu_pci_ids lists an id twice"),
])
def test_pci_ids(ids, needle):
    one(problems_after(lambda g, h: h["pve1"].update(gpu_cluster_gpu_pci_ids=ids)), needle)


def test_pci_ids_accept_several_functions():
    assert problems_after(lambda g, h: h["pve1"].update(gpu_cluster_gpu_pci_ids=["10de:2236", "10de:1aef"])) == []


@pytest.mark.parametrize("device,needle", [
    ({"name": "a100-0", "address": "17:00"}, "a100-0 address '17:00' is not a PCI address"),
    ({"name": "a100-0", "address": "0000:17:00.8"}, "is not a PCI address"),
    ({"name": "0bad", "address": "0000:17:00.0"}, "name '0bad' is not a valid Proxmox mapping id"),
    ({"name": "a100-0"}, "needs a name and an address"),
    ({"name": "a100-0", "address": "0000:18:00.0"}, "PCI address 0000:18:00.0 is declared twice"),
    ({"name": "a100-1", "address": "0000:17:00.0"}, "PCI device name a100-1 is declared twice"),
])
def test_pci_devices(device, needle):
    def change(groups, hostvars):
        hostvars["pve1"]["gpu_cluster_gpu_pci_devices"][0] = device
    one(problems_after(change), needle)


def test_short_pci_address_is_accepted():
    assert problems_after(lambda g, h: h["pve1"]["gpu_cluster_gpu_pci_devices"][0].update(address="17:00.0")) == []


def test_pci_mappings():
    def change(groups, hostvars):
        hostvars["wk-gpu1"]["gpu_cluster_gpu_pci_mappings"] = ["a100-0", "a100-9"]
        hostvars["wk-gpu2"]["gpu_cluster_gpu_pci_mappings"] = ["a100-0", "a100-3"]
        hostvars["wk-gpu4"]["gpu_cluster_gpu_pci_mappings"] = ["a100-6"]
        hostvars["wk-gpu3"]["gpu_cluster_gpu_pci_mappings"] = "a100-4"
    problems = problems_after(change)
    one(problems, "wk-gpu1: gpu_cluster_gpu_pci_mappings names 'a100-9', which no Proxmox host declares")
    one(problems, "wk-gpu2: PCI device a100-0 is already assigned to wk-gpu1")
    one(problems, "wk-gpu4: gpu_cluster_gpu_pci_mappings lists 1 devices but gpu_cluster_gpu_count is 2")
    one(problems, "wk-gpu3: gpu_cluster_gpu_pci_mappings is 'a100-4'; use a list")


def test_pci_mappings_are_optional():
    def change(groups, hostvars):
        for host in groups["gpu_workers"]:
            del hostvars[host]["gpu_cluster_gpu_pci_mappings"]
    assert problems_after(change) == []


def test_input_is_not_modified():
    groups, hostvars = homelab()
    before = copy.deepcopy((groups, hostvars))
    ic.inventory_problems(groups, hostvars)
    assert (groups, hostvars) == before


def test_empty_inventory_says_what_is_missing():
    problems = ic.inventory_problems({"all": [], "ungrouped": []}, {})
    one(problems, "k3s_servers: the group is empty")
    one(problems, "k3s_cluster: gpu_cluster_name is not set")
