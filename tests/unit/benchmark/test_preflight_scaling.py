"""Preflight's Python checks at 500, 5,000 and 50,000 nodes (issue 25): the cluster model, the
scheduling proof and the inventory checks, each timed on its own, and one preflight run (the three
together, as ``inventory_problems`` runs them). Ansible's own inventory loading is not counted: the
inputs are the plain groups and hostvars a filter hands to module_utils.

Issue 25 asks that building the model and running the proof grow linearly (nodes indexed by name
and by label, never every workload against every node) and that the three together take under 1 s
at 50,000 nodes. (Its "11x per 10x" describes the inventory checks as they were, 2.3 s at 50,000
nodes; it is not a bound.)

Growth is judged against this machine's own linear growth. A reference pass that only reads every
host's variables once (:func:`reference`: no check, nothing built) is linear by construction, yet
on the suite's 2-core machine it takes about 13x as long at 50,000 nodes as at 5,000: 50,000
hosts' variables no longer fit the CPU caches (32 MiB L3), so every pass over them pays memory
latency that 5,000 hosts do not. Each part's growth is therefore reported twice: as measured, and
relative to the reference (``part ratio / reference ratio x 10``: 10 when the part grows exactly
as a single pass over the inventory does). The relative ratio from 5,000 to 50,000 nodes must be at
most 12 (the reference pass's own growth varies from 11 to 12.6 between runs on a busy machine,
so a tighter bound flakes); every measured one at most 16, which still
catches a quadratic regression at either step (about 100 x 1.25). Measured here: model, proof and
checks 11 to 13.5x measured, 9 to 11.6x relative into 50,000 nodes; together about 0.85 s at 50,000
nodes.

The inventory: 3 servers and agents of which every tenth is a GPU worker (2 A100s, in the exclusive
pool), sound, so that the proof runs (preflight runs it on a sound inventory only). Times are this
process's CPU time, best of a few runs, the garbage collector paused.
"""

from __future__ import annotations

import ipaddress
import os

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, cluster_workloads, inventory_checks
from test_scaling_benchmark import best_time, ratio_per_10x

SIZES = (500, 5000, 50000)
REPEATS = {500: 7, 5000: 5, 50000: 3}
REFERENCE_REPEATS = 7  # the reference pass takes milliseconds: more runs, less noise
# Linear growth: relative to the reference pass the parts come out at 9 to 11.6 into 50,000 nodes,
# the reference itself varying 11 to 12.6 from run to run on a busy 2-core machine: 12 is the bound
# that does not flake (see the module docstring: measured growth is 11 to 13.5 here).
MAX_RATIO_PER_10X = 12.0
MAX_MEASURED_RATIO_PER_10X = 16.0  # measured: n log n or quadratic growth still fails
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


def parts(size, built=None):
    """{part: run} for one inventory (``built``: its groups and hostvars when already made): the
    model, the proof given the model, the checks without the proof, and one preflight run (all
    three, as preflight runs them)."""
    groups, hostvars = built or inventory(size)
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


def reference(groups, hostvars):
    """The least any linear preflight does: read every host's variables once (a key count)."""
    return sum(len(hostvars[host]) for host in groups["all"])


class Times(dict):
    """{part: {size: best CPU seconds}} with the reference pass as part ``reference``; ``again``
    measures a part (and the reference) at two sizes once more, keeping the better times."""

    def __init__(self):
        super().__init__()
        self.inputs = {}

    def measure(self, size, names=None):
        groups, hostvars = self.inputs.setdefault(size, inventory(size))
        self._keep("reference", size, best_time(lambda: reference(groups, hostvars), REFERENCE_REPEATS))
        for part, run in parts(size, (groups, hostvars)).items():
            if names is None or part in names:
                self._keep(part, size, best_time(run, REPEATS[size]))

    def _keep(self, part, size, seconds):
        self.setdefault(part, {})[size] = min(seconds, self.get(part, {}).get(size, seconds))

    def ratios(self, part):
        """[(measured, relative, reference)] per step of SIZES."""
        result = []
        for small, large in zip(SIZES, SIZES[1:]):
            measured = ratio_per_10x(small, self[part][small], large, self[part][large])
            machine = ratio_per_10x(small, self["reference"][small], large, self["reference"][large])
            result.append((measured, measured / machine * 10, machine))
        return result


@pytest.fixture(scope="module")
def times():
    for run in parts(50).values():
        run()  # warm up: imports, compiled patterns
    result = Times()
    for size in SIZES:
        result.measure(size)
    return result


def test_the_reference_pass_reads_every_host():
    groups, hostvars = inventory(500)
    assert reference(groups, hostvars) == sum(len(hostvars[host]) for host in hostvars) > 500


def _within(steps):
    # issue 25's bound on the growth into 50,000 nodes, relative to the machine (the step from 500
    # runs for a millisecond or two, where the size of the CPU caches rather than the code decides:
    # it is guarded by the measured bound)
    return max(m for m, _r, _x in steps) <= MAX_MEASURED_RATIO_PER_10X and steps[-1][1] <= MAX_RATIO_PER_10X


@pytest.mark.parametrize("part", ["model", "proof", "inventory checks", "preflight (together)"])
def test_each_part_grows_linearly(capsys, times, part):
    steps = times.ratios(part)
    for _round in range(2):  # a busy machine (the molecule lane beside this one) gets two more tries
        if _within(steps):
            break
        for size in SIZES[1:]:
            times.measure(size, (part,))
        steps = times.ratios(part)
    line = [f"{part}: " + ", ".join(f"{size} nodes {times[part][size]:.3f} s" for size in SIZES)]
    for (small, large), (measured, relative, machine) in zip(zip(SIZES, SIZES[1:]), steps):
        line.append(f"ratio per 10x {small}->{large}: {measured:.1f} measured, {relative:.1f} relative "
                    f"(reference pass {machine:.1f})")
    with capsys.disabled():
        print("\n" + "; ".join(line), end="")
    assert _within(steps), f"{part} grows faster than linear (measured bound {MAX_MEASURED_RATIO_PER_10X}, " \
                           f"relative bound {MAX_RATIO_PER_10X}): {line}"


@pytest.mark.skipif(os.environ.get("GPU_CLUSTER_BENCH") != "1",
                    reason="a wall-clock bound: `make bench` checks it (make test asserts only growth ratios)")
def test_preflight_takes_under_a_second_at_50000_nodes(times):
    together = times["preflight (together)"][50000]
    assert together < MAX_SECONDS_AT_50K, (
        f"model, checks and proof together took {together:.3f} s at 50,000 nodes (limit {MAX_SECONDS_AT_50K} s)")
