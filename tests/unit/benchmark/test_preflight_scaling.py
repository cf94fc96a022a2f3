"""Preflight's Python checks at 500, 5,000 and 50,000 nodes (issue 25): the cluster model, the
scheduling proof and the inventory checks, each timed on its own, and one preflight run (the three
together, as ``inventory_problems`` runs them). Ansible's own inventory loading is not counted: the
inputs are the plain groups and hostvars a filter hands to module_utils.

Issue 25 asks for at most 11x per 10x more nodes each and under 1 s together at 50,000 nodes. Where
this stands (measured on the suite's 2-core machine): every part is linear (11 to 12.5x per 10x:
the quadratic pool lookups of the model are gone), and together they take about 1.7 s at 50,000
nodes, most of it the proof planning verify's Jobs for 5,000 GPU workers. The growth assertion
guards against a quadratic regression (100x per 10x) with room for this machine's noise; the 1 s
target is an expected failure, strict, so that the day it holds the marker must go.

The inventory: 3 servers and agents of which every tenth is a GPU worker (2 A100s, in the exclusive
pool), sound, so that the proof runs (preflight runs it on a sound inventory only). Times are this
process's CPU time, best of a few runs at the small sizes, the garbage collector paused.
"""

from __future__ import annotations

import ipaddress

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import cluster_model, cluster_workloads, inventory_checks
from test_scaling_benchmark import best_time, ratio_per_10x

SIZES = (500, 5000, 50000)
REPEATS = {500: 5, 5000: 3, 50000: 1}
MAX_RATIO_PER_10X = 14.0  # issue 25's target is 11 (see the module docstring)
MAX_SECONDS_AT_50K = 1.0


def inventory(size):
    network = ipaddress.ip_network("172.16.0.0/12")
    common = {"gpu_cluster_name": "homelab", "gpu_cluster_node_network": str(network),
              "gpu_cluster_gateway": "172.16.0.1", "gpu_cluster_api_vip": "172.16.0.100",
              "gpu_cluster_cluster_cidr": "10.0.0.0/8", "gpu_cluster_service_cidr": "192.168.0.0/16",
              "gpu_cluster_k3s_version": "v1.36.4+k3s1", "gpu_cluster_gpu_operator_version": "v26.7.0",
              "gpu_cluster_vm_cores": 16, "gpu_cluster_vm_memory_mb": 131072}
    gpu = {"gpu_cluster_gpu_count": 2, "gpu_cluster_gpu_model": "NVIDIA A100 80GB PCIe"}
    servers = ["cp1", "cp2", "cp3"]
    agents = [f"wk{i:05d}" for i in range(size - 3)]
    workers = agents[::10]
    hosts = servers + agents
    hostvars = {host: dict(common, ansible_host=str(network.network_address + 1000 + i)) for i, host in enumerate(hosts)}
    for host in workers:
        hostvars[host].update(gpu)
    pools = [{"name": "training", "nodes": workers, "allocation": "exclusive"}]
    for host in hosts:
        hostvars[host]["gpu_cluster_gpu_pools"] = pools
    groups = {"all": hosts, "k3s_cluster": hosts, "k3s_servers": servers, "k3s_agents": agents, "gpu_workers": workers}
    return groups, hostvars


def parts(size):
    """{part: run} for one inventory: the model, the proof given the model, the checks without the
    proof, and one preflight run (all three, as preflight runs them)."""
    groups, hostvars = inventory(size)
    model = cluster_model.build(groups, hostvars)
    assert len(model["nodes"]) == size and len(cluster_model.gpu_nodes(model)) == len(groups["gpu_workers"])

    def proof():
        result = cluster_workloads.proof(groups, hostvars, model)
        assert result["problems"] == [] and result["rows"]

    def preflight():
        assert inventory_checks.inventory_problems(groups, hostvars) == []

    return {"model": lambda: cluster_model.build(groups, hostvars), "proof": proof,
            "inventory checks": lambda: inventory_checks.inventory_problems(groups, hostvars, schedule=False),
            "preflight (together)": preflight}


@pytest.fixture(scope="module")
def times():
    for run in parts(50).values():
        run()  # warm up: imports, compiled patterns
    result = {}
    for size in SIZES:
        for part, run in parts(size).items():
            result.setdefault(part, {})[size] = best_time(run, REPEATS[size])
    return result


@pytest.mark.parametrize("part", ["model", "proof", "inventory checks", "preflight (together)"])
def test_each_part_grows_linearly(capsys, times, part):
    line = [f"{part}: " + ", ".join(f"{size} nodes {times[part][size]:.3f} s" for size in SIZES)]
    ratios = []
    for small, large in zip(SIZES, SIZES[1:]):
        ratios.append(ratio_per_10x(small, times[part][small], large, times[part][large]))
        line.append(f"ratio per 10x {small}->{large}: {ratios[-1]:.1f}")
    with capsys.disabled():
        print("\n" + "; ".join(line), end="")
    assert max(ratios) <= MAX_RATIO_PER_10X, f"{part} grows faster than linear: {line}"


@pytest.mark.xfail(strict=True, reason="issue 25's 1 s target at 50,000 nodes is not met yet (about 1.7 s)")
def test_preflight_takes_under_a_second_at_50000_nodes(times):
    together = times["preflight (together)"][50000]
    assert together < MAX_SECONDS_AT_50K, (
        f"model, checks and proof together took {together:.3f} s at 50,000 nodes (limit {MAX_SECONDS_AT_50K} s)")
