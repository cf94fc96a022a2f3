"""failure_domains: each VM's Proxmox host in the cluster model, and what losing a host costs (issue 46).

The quorum rule is etcd's: a cluster of n members needs floor(n/2)+1 of them to elect a leader and
accept writes (etcd docs, FAQ "What is failure tolerance?": 3 members tolerate 1 failure, 5 tolerate 2;
raft's majority). The inventories are the preflight tests' homelab (tests of inventory_checks) spread
over several Proxmox hosts, each host declaring the A100s of the workers placed on it.
"""

from __future__ import annotations

import copy

import pytest
from ansible_collections.cps.gpu_cluster.plugins.filter.cluster import schedule
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import failure_domains as fd
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.terraform_vars import terraform_vars
from test_inventory_checks import homelab

QWEN_2 = {"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 2}


def spread(servers_on, workers_on, **cluster):
    """The homelab with Proxmox hosts pve1.. (as many as named): ``servers_on`` / ``workers_on`` give each
    server / GPU worker its host (gpu_cluster_proxmox_host); each host declares its workers' GPUs."""
    groups, hostvars = homelab()
    pve = hostvars.pop("pve1")
    names = sorted(set(servers_on) | set(workers_on))
    hosts = sorted(set(names) | {"pve1"})
    groups["proxmox_hosts"] = hosts
    groups["all"] = hosts + [h for h in groups["all"] if h != "pve1"]
    for index, host in enumerate(hosts):
        variables = copy.deepcopy(pve)
        variables["ansible_host"] = f"10.0.0.{2 + index * 50}"
        variables["gpu_cluster_gpu_pci_devices"] = []
        hostvars[host] = variables
    for server, host in zip(groups["k3s_servers"], servers_on):
        hostvars[server]["gpu_cluster_proxmox_host"] = host
    for index, (worker, host) in enumerate(zip(groups["gpu_workers"], workers_on)):
        hostvars[worker]["gpu_cluster_proxmox_host"] = host
        for slot in (2 * index, 2 * index + 1):
            hostvars[host]["gpu_cluster_gpu_pci_devices"].append({"name": f"a100-{slot}", "address": f"0000:{0x17 + slot:02x}:00.0"})
    for host in hosts:
        if not hostvars[host]["gpu_cluster_gpu_pci_devices"]:  # no GPU here: vfio-pci claims nothing
            del hostvars[host]["gpu_cluster_gpu_pci_ids"], hostvars[host]["gpu_cluster_gpu_pci_devices"]
    for variables in hostvars.values():
        variables.update(copy.deepcopy(cluster))
    return groups, hostvars


def rows_by_host(groups, hostvars, proofs=True):
    return {row["host"]: row for row in fd.host_losses(cluster_model.inventory(groups, hostvars), proofs=proofs)}


def test_quorum_is_a_majority_of_the_members():
    # etcd FAQ: 1 member tolerates 0 failures, 3 tolerate 1, 5 tolerate 2
    assert [members - fd.quorum(members) for members in (1, 2, 3, 4, 5)] == [0, 0, 1, 1, 2]


def test_the_model_carries_each_nodes_proxmox_host():
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"])
    model = cluster_model.build(groups, hostvars)
    assert {node["name"]: node["proxmox_host"] for node in model["nodes"]} == {
        "cp1": "pve1", "cp2": "pve2", "cp3": "pve3", "wk-gpu1": "pve1", "wk-gpu2": "pve2", "wk-gpu3": "pve3", "wk-gpu4": "pve1"}


def test_defaults_one_host_for_all_and_a_workers_gpu_host():
    """One Proxmox host: every VM on it. Several, nothing named: a GPU worker on the host of its GPUs, the rest on the first."""
    groups, hostvars = homelab()
    assert set(node["proxmox_host"] for node in cluster_model.build(groups, hostvars)["nodes"]) == {"pve1"}
    groups, hostvars = spread(["pve1", "pve1", "pve1"], ["pve1", "pve2", "pve1", "pve2"])
    for host in hostvars.values():
        host.pop("gpu_cluster_proxmox_host", None)
    placed = cluster_model.inventory(groups, hostvars).placement
    assert placed["wk-gpu2"] == "pve2" and placed["wk-gpu4"] == "pve2"
    assert placed["cp3"] == "pve1" and placed["wk-gpu1"] == "pve1"


def test_three_servers_on_three_hosts_survive_any_one_host():
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"])
    rows = rows_by_host(groups, hostvars)
    assert all(row["quorum"] and row["servers_left"] == 2 for row in rows.values())
    assert [row["unplaced"] for row in rows.values()] == [[], [], []]
    inv = cluster_model.inventory(groups, hostvars)
    assert fd.loss_warnings(inv) == []
    assert ic.inventory_problems(groups, hostvars) == []
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"], gpu_cluster_host_failure_tolerance=1)
    assert ic.inventory_problems(groups, hostvars) == []


def test_three_servers_on_two_hosts_name_the_host_with_two():
    groups, hostvars = spread(["pve1", "pve1", "pve2"], ["pve1", "pve2", "pve1", "pve2"])
    rows = rows_by_host(groups, hostvars, proofs=False)
    assert not rows["pve1"]["quorum"] and rows["pve1"]["servers"] == ["cp1", "cp2"] and rows["pve1"]["servers_left"] == 1
    assert rows["pve2"]["quorum"] and rows["pve2"]["servers"] == ["cp3"]
    warnings = ic.inventory_warnings(groups, hostvars)
    lost = [w for w in warnings if "losing Proxmox host" in w]
    assert len(lost) == 1 and "pve1" in lost[0] and "cp1, cp2" in lost[0] and "needs 2" in lost[0]
    assert ic.inventory_problems(groups, hostvars) == []  # a warning only, until the user asks to survive it
    groups, hostvars = spread(["pve1", "pve1", "pve2"], ["pve1", "pve2", "pve1", "pve2"], gpu_cluster_host_failure_tolerance=1)
    problems = ic.inventory_problems(groups, hostvars)
    assert len(problems) == 1 and "gpu_cluster_host_failure_tolerance" in problems[0] and "pve1" in problems[0]
    assert "pve2" not in problems[0].split("stops the cluster")[0]


def test_a_workload_without_a_node_after_a_host_loss_is_named():
    """Every GPU worker on pve2: losing it leaves the 2-GPU model (and every GPU workload) without a node."""
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve2", "pve2", "pve2", "pve2"], gpu_cluster_llm_models=[QWEN_2])
    rows = rows_by_host(groups, hostvars)
    assert rows["pve1"]["unplaced"] == [] and rows["pve3"]["unplaced"] == []
    assert any("qwen" in name for name in rows["pve2"]["unplaced"]), rows["pve2"]
    assert rows["pve2"]["quorum"]
    lines = fd.table(list(rows.values()))
    assert any(line.startswith("pve2:") and "NO NODE for" in line and "qwen" in line for line in lines)
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve2", "pve2", "pve2", "pve2"], gpu_cluster_llm_models=[QWEN_2],
                              gpu_cluster_host_failure_tolerance=1)
    problems = ic.inventory_problems(groups, hostvars)
    assert len(problems) == 1 and "losing Proxmox host pve2 leaves no node for" in problems[0] and "qwen" in problems[0]


def test_preflight_refuses_a_vm_whose_host_lacks_its_gpus():
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"])
    hostvars["wk-gpu2"]["gpu_cluster_proxmox_host"] = "pve3"  # its a100-2 and a100-3 are devices of pve2
    problems = ic.inventory_problems(groups, hostvars)
    assert any(p.startswith("wk-gpu2: its VM runs on pve3") and "devices of pve2" in p for p in problems), problems


def test_preflight_refuses_a_host_asked_for_more_gpus_than_it_has():
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"])
    hostvars["wk-gpu4"]["gpu_cluster_gpu_count"] = 4
    hostvars["wk-gpu4"]["gpu_cluster_gpu_pci_mappings"] = ["a100-6", "a100-7", "a100-0", "a100-1"]
    hostvars["wk-gpu1"]["gpu_cluster_gpu_pci_mappings"] = []  # wk-gpu1 gives its two up on paper only
    problems = fd.placement_problems(cluster_model.inventory(groups, hostvars))
    assert [p for p in problems if p.startswith("pve1: its VMs ask for 6 GPU(s) (wk-gpu1 2, wk-gpu4 4) but it declares 4")], problems


@pytest.mark.parametrize("value", ["pve9", 3, ["pve1"]])
def test_preflight_refuses_a_host_not_in_proxmox_hosts(value):
    groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"])
    hostvars["cp1"]["gpu_cluster_proxmox_host"] = value
    problems = ic.inventory_problems(groups, hostvars)
    assert any(p.startswith(f"cp1: gpu_cluster_proxmox_host is {value!r}; name the Proxmox host") for p in problems), problems


@pytest.mark.parametrize("value, hosts, needle", [
    (2, 3, "use 0 (report what losing a Proxmox host costs) or 1"),
    ("1", 3, "use 0 (report what losing a Proxmox host costs) or 1"),
    (1, 1, "the inventory has 1 Proxmox host(s)"),
])
def test_the_tolerance_is_checked(value, hosts, needle):
    if hosts == 1:
        groups, hostvars = homelab()
        for variables in hostvars.values():
            variables["gpu_cluster_host_failure_tolerance"] = value
    else:
        groups, hostvars = spread(["pve1", "pve2", "pve3"], ["pve1", "pve2", "pve3", "pve1"], gpu_cluster_host_failure_tolerance=value)
    problems = ic.inventory_problems(groups, hostvars)
    assert any(needle in p for p in problems), problems


def test_one_host_inventory_keeps_its_preflight():
    """The one-server homelab: no warning about hosts, the model's host is the only one."""
    groups, hostvars = homelab()
    assert not [w for w in ic.inventory_warnings(groups, hostvars) if "Proxmox host" in w]
    assert fd.host_losses(cluster_model.inventory(groups, hostvars), proofs=False)[0]["quorum"] is False  # one host: it is everything


def test_the_schedule_filter_reports_each_host_loss():
    """schedule.yml prints host_loss_table with several Proxmox hosts; with one there is none."""
    result = schedule(*spread(["pve1", "pve1", "pve2"], ["pve1", "pve2", "pve1", "pve2"]))
    assert result["problems"] == [] and [row["host"] for row in result["host_losses"]] == ["pve1", "pve2"]
    assert result["host_loss_table"][0].startswith("pve1: 4 node(s) (servers cp1, cp2); etcd LOSES QUORUM (1 server(s) left)")
    assert result["host_loss_table"][1].startswith("pve2: 3 node(s) (servers cp3); etcd keeps quorum (2 server(s) left)")
    one = schedule(*homelab())
    assert one["host_losses"] == [] and one["host_loss_table"] == [] and one["table"]


def test_provision_refuses_a_vm_placed_on_another_host_until_placement_is_built():
    """provision.yml (the collection's Terraform module, every setting at its default) creates every VM on the
    first Proxmox host: a VM gpu_cluster_proxmox_host places elsewhere is a preflight warning and terraform_vars'
    refusal, naming it; a user who creates the VMs (gpu_cluster_provision_enabled: false) gets neither."""
    groups, hostvars = spread(["pve1", "pve1", "pve2"], ["pve1", "pve1", "pve1", "pve1"])
    warned = [w for w in ic.inventory_warnings(groups, hostvars) if "gpu_cluster_proxmox_host places" in w]
    assert len(warned) == 1 and warned[0].startswith("cp3: gpu_cluster_proxmox_host places it on pve2"), warned
    with pytest.raises(ValueError, match="cp3: gpu_cluster_proxmox_host places it on pve2"):
        terraform_vars(groups, hostvars, ["ssh-ed25519 AAAA k"])
    for variables in hostvars.values():
        variables["gpu_cluster_provision_enabled"] = False
    assert not [w for w in ic.inventory_warnings(groups, hostvars) if "provision.yml" in w]
