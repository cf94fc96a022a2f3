"""numa: the host's NUMA layout read from sysfs trees (checked against `lscpu -p` of the same
layout) and the placement planner on two-socket and single-socket hosts (tests/fixtures/numa/)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import numa, pci_sysfs
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.kernel_cmdline import iommu_args, merge_cmdline

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "numa"
TWO = FIXTURES / "two-socket-xeon-gold-6248r-8gpu"
TWO_NOSMT = FIXTURES / "two-socket-xeon-gold-6248r-8gpu-smt-off"
ONE = FIXTURES / "single-socket-epyc-7313p-2gpu"
CAPTURED = FIXTURES / "cloud-vm-2vcpu-captured"
HOMELAB_DEVICES = {"a100-0": "0000:17:00.0", "a100-1": "0000:31:00.0", "a100-2": "0000:4b:00.0", "a100-3": "0000:65:00.0",
                   "a100-4": "0000:98:00.0", "a100-5": "0000:b1:00.0", "a100-6": "0000:ca:00.0", "a100-7": "0000:e3:00.0"}


def layout(root):
    """(host_numa, {address: node}) of a fixture, read as the module reads it."""
    gpus, _enabled = pci_sysfs.gpu_facts(str(root / "sys"))
    return numa.read_numa_topology(str(root / "sys")), {gpu["address"]: gpu["numa_node"] for gpu in gpus}


def homelab_workers(vcpus=16, memory_mb=131072, mappings=(("a100-0", "a100-1"), ("a100-2", "a100-3"),
                                                          ("a100-4", "a100-5"), ("a100-6", "a100-7"))):
    return [{"name": f"wk-gpu{i + 1}", "vcpus": vcpus, "memory_mb": memory_mb,
             "gpus": [{"name": m, "address": HOMELAB_DEVICES[m]} for m in pair]} for i, pair in enumerate(mappings)]


CONTROL_PLANES = [{"name": f"cp{i}", "vcpus": 4, "memory_mb": 16384} for i in (1, 2, 3)]


def assert_disjoint(plan):
    """No host CPU is given twice, and every VM holds whole cores (both SMT siblings)."""
    seen = {}
    for node in plan["nodes"]:
        for cpu in numa.parse_cpulist(node["host_cpus"]):
            seen[cpu] = "host"
    for name, vm in plan["vms"].items():
        for cpu in vm["cpus"]:
            assert cpu not in seen, f"CPU {cpu} given to {seen[cpu]} and {name}"
            seen[cpu] = name
        for core in vm["cores"]:
            assert set(core) <= set(vm["cpus"])


# ------------------------------------------------------------------ the reader
def test_two_socket_layout_from_sysfs_matches_lscpu():
    topology, gpu_nodes = layout(TWO)
    assert topology["sockets"] == 2 and topology["threads_per_core"] == 2 and topology["smt_active"] is True
    assert topology["cpus_online"] == 96
    node0, node1 = topology["nodes"]
    assert node0["node"] == 0 and numa.format_cpulist(node0["cpus"]) == "0-23,48-71"
    assert numa.format_cpulist(node1["cpus"]) == "24-47,72-95"
    assert node0["cores"][:2] == [[0, 48], [1, 49]] and len(node0["cores"]) == 24
    assert node1["cores"][-1] == [47, 95]
    assert node0["memory_mb"] == 527958692 // 1024 and node1["memory_mb"] == 528449320 // 1024
    assert node0["memory_mb"] + node1["memory_mb"] > 1000 * 1024  # ~1 TiB
    assert node0["hugepages"] == {"1G": {"total": 0, "free": 0}, "2M": {"total": 0, "free": 0}}
    expected = numa.lscpu_layout(numa.parse_lscpu_p((TWO / "lscpu-p.txt").read_text()))
    assert {n["node"]: n["cores"] for n in topology["nodes"]} == expected
    assert sorted(gpu_nodes.values()) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gpu_nodes["0000:4b:00.0"] == 0 and gpu_nodes["0000:98:00.0"] == 1


def test_smt_off_layout():
    topology, _gpus = layout(TWO_NOSMT)
    assert topology["threads_per_core"] == 1 and topology["smt_active"] is False
    assert numa.format_cpulist(topology["nodes"][0]["cpus"]) == "0-23"
    assert topology["nodes"][1]["cores"][0] == [24]
    expected = numa.lscpu_layout(numa.parse_lscpu_p((TWO_NOSMT / "lscpu-p.txt").read_text()))
    assert {n["node"]: n["cores"] for n in topology["nodes"]} == expected


def test_single_socket_layout_with_reserved_1g_pages():
    topology, gpu_nodes = layout(ONE)
    assert topology["sockets"] == 1 and len(topology["nodes"]) == 1
    assert topology["nodes"][0]["cores"][0] == [0, 16]
    assert topology["nodes"][0]["hugepages"]["1G"] == {"total": 64, "free": 64}
    assert gpu_nodes == {"0000:01:00.0": 0, "0000:41:00.0": 0}
    expected = numa.lscpu_layout(numa.parse_lscpu_p((ONE / "lscpu-p.txt").read_text()))
    assert {n["node"]: n["cores"] for n in topology["nodes"]} == expected


def test_captured_cloud_vm_agrees_with_its_own_lscpu():
    """A real capture (the build machine, see SOURCES.md): one node, SMT off."""
    topology = numa.read_numa_topology(str(CAPTURED / "sys"))
    assert len(topology["nodes"]) == 1 and topology["smt_active"] is False and topology["threads_per_core"] == 1
    assert topology["nodes"][0]["memory_mb"] > 1024
    expected = numa.lscpu_layout(numa.parse_lscpu_p((CAPTURED / "lscpu-p.txt").read_text()))
    assert {n["node"]: n["cores"] for n in topology["nodes"]} == expected


def test_no_numa_directory_reads_as_one_node(tmp_path):
    (tmp_path / "devices" / "system" / "cpu" / "cpu0" / "topology").mkdir(parents=True)
    (tmp_path / "devices" / "system" / "cpu" / "cpu1").mkdir()
    (tmp_path / "devices" / "system" / "cpu" / "cpu0" / "topology" / "thread_siblings_list").write_text("0-1\n")
    topology = numa.read_numa_topology(str(tmp_path))
    assert [n["node"] for n in topology["nodes"]] == [0]
    assert topology["nodes"][0]["cores"] == [[0, 1]] and topology["nodes"][0]["memory_mb"] is None
    assert numa.numa_facts(str(tmp_path / "nothing")) is None


@pytest.mark.parametrize(("text", "cpus"), [("0-3,8", [0, 1, 2, 3, 8]), ("", []), ("5", [5]), (" 0-1 , 4-5 ", [0, 1, 4, 5])])
def test_cpulist_round_trip(text, cpus):
    assert numa.parse_cpulist(text) == cpus
    assert numa.parse_cpulist(numa.format_cpulist(cpus)) == cpus


@pytest.mark.parametrize("text", ["a-b", "3-1", "0,,1", "0-"])
def test_cpulist_refuses_garbage(text):
    with pytest.raises(numa.TopologyError):
        numa.parse_cpulist(text)


def test_topology_from_capture_accepts_module_result_and_facts():
    topology, gpu_nodes = layout(TWO)
    facts = {"host_numa": topology, "pci_gpus": [{"address": a, "numa_node": n} for a, n in gpu_nodes.items()]}
    assert numa.topology_from_capture({"changed": False, "ansible_facts": facts}) == (topology, gpu_nodes)
    assert numa.topology_from_capture(facts) == (topology, gpu_nodes)
    for bad, message in (([], "mapping"), ({"pci_gpus": []}, "no host_numa"), ({"host_numa": {"nodes": []}}, "at least one"),
                         ({"host_numa": {"nodes": [{"node": "0"}]}}, "integer node")):
        with pytest.raises(numa.TopologyError, match=message):
            numa.topology_from_capture(bad)


# ----------------------------------------------------------------- the planner
def test_homelab_two_socket_split_4_4():
    topology, gpu_nodes = layout(TWO)
    plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(), CONTROL_PLANES, hugepages="1G")
    assert problems == []
    vms = plan["vms"]
    assert [vms[f"wk-gpu{i}"]["node"] for i in (1, 2, 3, 4)] == [0, 0, 1, 1]
    assert plan["nodes"][0]["host_cpus"] == "0-1,48-49" and plan["nodes"][1]["host_cpus"] == "24-25,72-73"
    assert vms["wk-gpu1"]["affinity"] == "2-9,50-57"
    assert vms["wk-gpu2"]["affinity"] == "10-17,58-65"
    assert vms["wk-gpu3"]["affinity"] == "26-33,74-81"
    assert vms["wk-gpu4"]["affinity"] == "34-41,82-89"
    # control planes on what is left, most free cores first: cp1 node 0, cp2 node 1, cp3 node 0 (tie)
    assert [(vms[c]["node"], vms[c]["affinity"]) for c in ("cp1", "cp2", "cp3")] == [
        (0, "18-19,66-67"), (1, "42-43,90-91"), (0, "20-21,68-69")]
    assert plan["hugepages"] == {"1G": {"0": 256, "1": 256}}
    assert all(not vm["spans"] for vm in vms.values())
    assert_disjoint(plan)
    table = "\n".join(numa.placement_table(plan, "pve1"))
    assert "NUMA placement on pve1 (2 node(s), SMT on, 2 thread(s) per core)" in table
    assert "wk-gpu1" in table and "a100-0,a100-1" in table and "2-9,50-57" in table and "1G x128" in table
    assert "huge pages to reserve (1G): node 0: 256, node 1: 256" in table
    tfvars = numa.placement_tfvars(plan)
    assert tfvars["wk-gpu3"] == {"affinity": "26-33,74-81", "host_node": 1, "hugepages": "1024"}
    assert tfvars["cp2"] == {"affinity": "42-43,90-91", "host_node": 1, "hugepages": ""}


def test_docs_show_the_homelab_table():
    """docs/performance.md prints exactly what the planner prints for the homelab."""
    topology, gpu_nodes = layout(TWO)
    plan, _problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(), CONTROL_PLANES, hugepages="1G")
    docs = (Path(__file__).resolve().parents[4] / "docs" / "performance.md").read_text()
    assert "\n".join(numa.placement_table(plan, "pve1")) in docs


def test_all_gpus_on_one_socket_is_refused_with_what_to_change():
    topology, gpu_nodes = layout(TWO)
    one_socket = dict((address, 0) for address in gpu_nodes)
    plan, problems = numa.plan_placement(topology, one_socket, homelab_workers(), CONTROL_PLANES)
    assert [plan["vms"][f"wk-gpu{i}"]["node"] for i in (1, 2, 3, 4)] == [0, 0, 0, 0]
    cores = [p for p in problems if p.startswith("NUMA node 0 has 22 physical cores")]
    assert cores and "wk-gpu3 (16)" in cores[0] and "lower gpu_cluster_vm_cores" in cores[0]
    memory = [p for p in problems if p.startswith("NUMA node 0 has") and "of memory" in p]
    assert memory and "need 512 GiB" in memory[0]
    # smaller workers fit on the GPUs' socket; control planes go to the other one
    plan, problems = numa.plan_placement(topology, one_socket, homelab_workers(vcpus=8, memory_mb=98304), CONTROL_PLANES)
    assert problems == []
    assert {plan["vms"][c]["node"] for c in ("cp1", "cp2", "cp3")} == {1}
    assert_disjoint(plan)


def test_too_few_cores_names_the_node_and_the_workers():
    topology, gpu_nodes = layout(TWO)
    plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(vcpus=24), CONTROL_PLANES)
    assert len([p for p in problems if "physical cores" in p]) == 2
    assert "wk-gpu2 left without cores" in " ".join(problems) or "wk-gpu2" in problems[0]
    assert plan["vms"]["wk-gpu1"]["affinity"] == "2-13,50-61"
    assert plan["vms"]["wk-gpu2"]["cpus"] == []
    # giving the host fewer cores makes room
    _plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(vcpus=22), [], host_cores=0)
    assert problems == []


def test_smt_off_whole_cores_are_single_cpus():
    topology, gpu_nodes = layout(TWO_NOSMT)
    plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(), CONTROL_PLANES)
    assert any(p.startswith("NUMA node 0 has 22 physical cores (22 threads)") for p in problems), problems
    # 3 control planes of 4 vCPUs need 12 single-thread cores: only 6 + 6 are left, 4 per VM
    _plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(vcpus=8), CONTROL_PLANES)
    assert len(problems) == 1 and "cp3 left without cores" in problems[0]
    small_cps = [dict(cp, vcpus=2) for cp in CONTROL_PLANES]
    plan, problems = numa.plan_placement(topology, gpu_nodes, homelab_workers(vcpus=8), small_cps)
    assert problems == []
    assert plan["vms"]["cp3"]["affinity"] == "20-21"
    assert plan["vms"]["wk-gpu1"]["affinity"] == "2-9" and plan["vms"]["wk-gpu3"]["affinity"] == "26-33"
    assert plan["threads_per_core"] == 1 and not plan["smt_active"]
    assert_disjoint(plan)


def test_single_socket_host():
    topology, gpu_nodes = layout(ONE)
    workers = [{"name": "wk-gpu1", "vcpus": 16, "memory_mb": 131072,
                "gpus": [{"name": "a100-0", "address": "0000:01:00.0"}, {"name": "a100-1", "address": "41:00.0"}]}]
    plan, problems = numa.plan_placement(topology, gpu_nodes, workers, [{"name": "cp1", "vcpus": 4, "memory_mb": 16384}],
                                         hugepages="1G")
    assert problems == []
    assert plan["vms"]["wk-gpu1"]["affinity"] == "2-9,18-25"
    assert plan["vms"]["cp1"]["affinity"] == "10-11,26-27"
    assert plan["hugepages"] == {"1G": {"0": 128}}
    assert numa.hugepage_shortfall(plan["hugepages"], topology) == ["node 0 has 64 1G huge pages reserved, the plan needs 128"]
    assert numa.hugepage_kernel_args(plan["hugepages"]) == ["hugepagesz=1G", "hugepages=0:128"]
    assert_disjoint(plan)


def test_single_node_gpu_without_numa_node_is_placed_on_node_0():
    topology, gpu_nodes = layout(ONE)
    unknown = dict((address, None) for address in gpu_nodes)
    workers = [{"name": "w", "vcpus": 4, "memory_mb": 8192, "gpus": [{"address": "0000:01:00.0"}]}]
    plan, problems = numa.plan_placement(topology, unknown, workers, [])
    assert problems == [] and plan["vms"]["w"]["node"] == 0 and not plan["vms"]["w"]["gpu_node_unknown"]


def test_gpus_spanning_nodes_refused_unless_allowed():
    topology, gpu_nodes = layout(TWO)
    mixed = homelab_workers(mappings=(("a100-0", "a100-4"), ("a100-1", "a100-5")))
    _plan, problems = numa.plan_placement(topology, gpu_nodes, mixed, [])
    assert len(problems) == 2
    assert problems[0].startswith("wk-gpu1: its GPUs sit on different NUMA nodes (a100-0 on node 0, a100-4 on node 1)")
    assert "gpu_cluster_numa_allow_span: true" in problems[0]
    plan, problems = numa.plan_placement(topology, gpu_nodes, mixed, [], allow_span=True)
    assert problems == [] and plan["vms"]["wk-gpu1"]["spans"] is True and plan["vms"]["wk-gpu1"]["node"] == 0
    assert "(GPUs span nodes)" in "\n".join(numa.placement_table(plan))


def test_unknown_gpu_and_odd_hugepage_memory():
    topology, gpu_nodes = layout(TWO)
    workers = [{"name": "w", "vcpus": 4, "memory_mb": 5000, "gpus": [{"name": "ghost", "address": "0000:aa:00.0"}]}]
    _plan, problems = numa.plan_placement(topology, gpu_nodes, workers, [], hugepages="1G")
    assert any("GPU ghost (0000:aa:00.0) is not in the host's topology" in p for p in problems)
    assert any("5000 is not a whole number of 1G huge pages" in p for p in problems)


def test_memory_short_on_a_node():
    topology, gpu_nodes = layout(TWO)
    workers = homelab_workers(vcpus=4, memory_mb=262144)
    _plan, problems = numa.plan_placement(topology, gpu_nodes, workers, [], host_memory_mb=32768)
    assert [p.split(" has")[0] for p in problems] == ["NUMA node 0", "NUMA node 1"]
    assert "32 GiB of it kept for the host" in problems[0]


def test_input_not_mutated():
    topology, gpu_nodes = layout(TWO)
    before = copy.deepcopy(topology)
    numa.plan_placement(topology, gpu_nodes, homelab_workers(), CONTROL_PLANES)
    assert topology == before


# ------------------------------------------------------------- kernel arguments
def test_hugepage_kernel_args():
    assert numa.hugepage_kernel_args({}) == []
    assert numa.hugepage_kernel_args({"1G": {}}) == []
    assert numa.hugepage_kernel_args({"2M": {"1": 1024, "0": 512}}) == ["hugepagesz=2M", "hugepages=0:512,1:1024"]
    for bad in ({"1G": {"0": 1}, "2M": {"0": 1}}, {"4M": {"0": 1}}, {"1G": {"x": 1}}, {"1G": {"0": -1}}):
        with pytest.raises(ValueError):
            numa.hugepage_kernel_args(bad)


# ------------------------------------------------------------- from inventory
def test_placement_request_from_inventory():
    groups = {"proxmox_hosts": ["pve1"], "gpu_workers": ["wk-gpu1", "wk-gpu2"], "k3s_servers": ["cp1"]}
    hostvars = {
        "pve1": {"gpu_cluster_gpu_pci_devices": [{"name": "a100-0", "address": "0000:17:00.0"}],
                 "gpu_cluster_numa_host_cores": 1, "gpu_cluster_numa_hugepages": "2M", "gpu_cluster_numa_allow_span": True},
        "wk-gpu1": {"gpu_cluster_vm_cores": 12, "gpu_cluster_vm_memory_mb": 65536, "gpu_cluster_gpu_pci_mappings": ["a100-0"]},
        "wk-gpu2": {"gpu_cluster_vm_preset": "small"},
        "cp1": {},
    }
    request = numa.placement_request(groups, hostvars, "pve1")
    assert request["workers"] == [
        {"name": "wk-gpu1", "vcpus": 12, "memory_mb": 65536, "gpus": [{"name": "a100-0", "address": "0000:17:00.0"}]},
        {"name": "wk-gpu2", "vcpus": 8, "memory_mb": 65536, "gpus": []}]
    assert request["control_planes"] == [{"name": "cp1", "vcpus": 4, "memory_mb": 16384}]
    assert (request["host_cores"], request["host_memory_mb"], request["hugepages"], request["allow_span"]) == (1, 16384, "2M", True)


def test_numa_problems_preflight():
    groups = {"proxmox_hosts": ["pve1"], "gpu_workers": ["wk"]}
    good = {"pve1": {"gpu_cluster_numa_placement": True, "gpu_cluster_numa_hugepages": "1G",
                     "gpu_cluster_numa_topology_file": "topology/pve1.json", "gpu_cluster_numa_host_cores": 0},
            "wk": {"gpu_cluster_vm_memory_mb": 131072}}
    assert numa.numa_problems(groups, good) == []
    bad = {"pve1": {"gpu_cluster_numa_placement": "yes", "gpu_cluster_numa_hugepages": "1GB",
                    "gpu_cluster_numa_host_cores": -1, "gpu_cluster_numa_host_memory_mb": True,
                    "gpu_cluster_numa_topology_file": "", "gpu_cluster_numa_allow_span": 1}}
    problems = numa.numa_problems(groups, bad)
    assert len(problems) == 6
    assert "pve1: gpu_cluster_numa_hugepages is '1GB'; use none, 1G or 2M (docs/performance.md)" in problems
    off = {"pve1": {"gpu_cluster_numa_hugepages": "1G"}, "wk": {"gpu_cluster_vm_memory_mb": 1500}}
    problems = numa.numa_problems(groups, off)
    assert any("set gpu_cluster_numa_placement: true" in p for p in problems)
    assert any(p.startswith("wk: gpu_cluster_vm_memory_mb 1500 is not a whole number of 1G huge pages") for p in problems)


# ------------------------------------------- the command line vfio_passthrough writes
@pytest.mark.parametrize(("current", "vendor", "reservation", "expected"), [
    ("quiet amd_iommu=on", "intel", {"1G": {"0": 4, "1": 4}}, "quiet intel_iommu=on iommu=pt hugepagesz=1G hugepages=0:4,1:4"),
    ("root=ZFS=rpool/ROOT/pve-1 boot=zfs hugepagesz=1G hugepages=16", "amd", {"2M": {"0": 512}},
     "root=ZFS=rpool/ROOT/pve-1 boot=zfs amd_iommu=on iommu=pt hugepagesz=2M hugepages=0:512"),
    ("quiet hugepagesz=2M hugepages=64", "intel", {}, "quiet hugepagesz=2M hugepages=64 intel_iommu=on iommu=pt"),
])
def test_role_command_line_reserves_and_is_stable(current, vendor, reservation, expected):
    """configure_cmdline.yml: kernel_iommu_args + hugepage_kernel_args merged into the current line
    (the molecule vfio_passthrough hosts' cases); merging again changes nothing."""
    desired = iommu_args(vendor) + numa.hugepage_kernel_args(reservation)
    merged = merge_cmdline(current, desired)
    assert merged == expected
    assert merge_cmdline(merged, desired) == merged
