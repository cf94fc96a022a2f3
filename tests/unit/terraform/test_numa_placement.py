"""terraform/proxmox with the NUMA placement: the VM resources read affinity, the NUMA block and
huge pages from the `placement` variable, and the homelab's variables planned on the captured
two-socket layout carry them (parsed with python-hcl2; checked against `terraform console` where
a terraform binary exists)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import numa, pci_sysfs
from terraform_helpers import REPO, load_module, resolve, resources, unquote
from test_terraform_console import BASE, console, evaluate

VM = "proxmox_virtual_environment_vm"
CAPTURE = REPO / "tests" / "fixtures" / "numa" / "two-socket-xeon-gold-6248r-8gpu.pci_gpu_facts.json"
TERRAFORM = shutil.which("terraform")


def homelab_placement(homelab_list, hugepages="1G"):
    """What playbooks/tasks/numa_placement.yml computes for the homelab on the captured layout."""
    groups = {name: data.get("hosts", []) for name, data in homelab_list.items() if name != "_meta"}
    groups["gpu_workers"] = sorted(homelab_list["gpu_workers"]["hosts"])
    hostvars = json.loads(json.dumps(homelab_list["_meta"]["hostvars"]))
    hostvars["pve1"]["gpu_cluster_numa_hugepages"] = hugepages
    topology, gpu_nodes = numa.topology_from_capture(json.loads(CAPTURE.read_text()))
    request = numa.placement_request(groups, hostvars, "pve1")
    plan, problems = numa.plan_placement(topology, gpu_nodes, request["workers"], request["control_planes"],
                                         hugepages=request["hugepages"])
    assert problems == []
    return numa.placement_tfvars(plan)


@pytest.fixture(scope="module")
def vms():
    found = resources(load_module())
    return found[(VM, "control_plane")], found[(VM, "gpu_worker")]


def dynamic(vm, label):
    return {name: body for block in vm.get("dynamic", []) for name, body in block.items()}[f'"{label}"']


def test_capture_is_what_the_module_reads_from_the_fixture_tree():
    root = str(REPO / "tests" / "fixtures" / "numa" / "two-socket-xeon-gold-6248r-8gpu" / "sys")
    facts = json.loads(CAPTURE.read_text())["ansible_facts"]
    assert facts["host_numa"] == numa.read_numa_topology(root)
    assert facts["pci_gpus"] == pci_sysfs.gpu_facts(root)[0]


@pytest.mark.parametrize("kind", [0, 1])
def test_vms_pin_cpus_and_bind_memory_to_the_host_node(vms, kind):
    vm = vms[kind]
    cpu = vm["cpu"][0]
    assert cpu["affinity"] == "${each.value.affinity}"
    assert cpu["numa"] == "${each.value.host_node != null}"
    block = dynamic(vm, "numa")
    assert block["for_each"] == "${each.value.host_node != null ? [each.value.host_node] : []}"
    content = block["content"][0]
    assert unquote(content["device"]) == "numa0"
    assert unquote(content["cpus"]) == "0-${each.value.cores - 1}"
    assert content["memory"] == "${each.value.memory_mb}"
    assert content["hostnodes"] == "${tostring(numa.value)}"
    assert unquote(content["policy"]) == "bind"


def test_gpu_worker_hugepages_kept_when_1g(vms):
    memory = vms[1]["memory"][0]
    assert memory["hugepages"] == "${each.value.hugepages}"
    assert memory["keep_hugepages"] == '${each.value.hugepages == "1024"}'


def test_homelab_variables_carry_affinity_and_numa(homelab_list, homelab_tfvars):
    placement = homelab_placement(homelab_list)
    assert set(placement) == {"cp1", "cp2", "cp3", "wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"}
    resolved = resolve(dict(homelab_tfvars, placement=placement))
    workers = resolved["gpu_workers"]
    assert {name: (w["host_node"], w["affinity"], w["hugepages"]) for name, w in workers.items()} == {
        "wk-gpu1": (0, "2-9,50-57", "1024"), "wk-gpu2": (0, "10-17,58-65", "1024"),
        "wk-gpu3": (1, "26-33,74-81", "1024"), "wk-gpu4": (1, "34-41,82-89", "1024")}
    assert resolved["control_planes"]["cp2"]["affinity"] == "42-43,90-91"
    assert resolved["control_planes"]["cp2"]["host_node"] == 1
    # without a plan nothing is pinned and the module-wide hugepages still applies
    plain = resolve(dict(homelab_tfvars, hugepages="2"))
    assert {(w["affinity"], w["host_node"], w["hugepages"]) for w in plain["gpu_workers"].values()} == {(None, None, "2")}
    assert {(c["affinity"], c["host_node"]) for c in plain["control_planes"].values()} == {(None, None)}


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")
def test_terraform_resolves_the_placement_as_the_mirror(homelab_list, homelab_tfvars, tmp_path):
    tfvars = dict(homelab_tfvars, placement=homelab_placement(homelab_list), hugepages="2")
    tfvars["placement"]["cp1"]["hugepages"] = ""
    mirror = resolve(tfvars)
    for local in ("control_planes", "gpu_workers"):
        assert evaluate(tmp_path, tfvars, f"local.{local}") == mirror[local], local


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")
@pytest.mark.parametrize(("placement", "message"), [
    ({"wk": {"affinity": "2-9 50-57", "host_node": 0}}, "must be a host CPU list"),
    ({"wk": {"affinity": "2-9", "host_node": -1}}, "must be a host NUMA node number"),
    ({"wk": {"affinity": "2-9", "host_node": 0, "hugepages": "1G"}}, "must be \\\"1024\\\""),
])
def test_placement_validation_refuses(placement, message, tmp_path):
    done = console(tmp_path, dict(BASE, placement=placement), "local.prefix_length")
    output = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr).replace("│", " ").split())
    assert "Invalid value for variable" in output
    assert message.replace("\\", "") in output.replace("\\", ""), output
