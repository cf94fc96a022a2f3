"""The boundary reads the inventory once and the model is built once per filter call (issue 45).

Each filter that reads the whole inventory turns Ansible's ``groups`` and ``hostvars`` into one
cluster_model.Inventory (cluster_model.inventory) and every feature below it reads that one: the
checks, the pools (judged once), the scheduling proof and the idle-pool warning all take the model
the Inventory builds at most once. Counted here by wrapping cluster_model.build and the Inventory's
constructor, on the Ansible-shaped inventory of the scaling benchmark (per-host copies of every list
and dict, GPU workers in pools, infra and app nodes, several Proxmox hosts).
"""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.filter import cluster as cluster_filters
from ansible_collections.cps.gpu_cluster.plugins.filter import inventory_problems as preflight_filter
from ansible_collections.cps.gpu_cluster.plugins.filter import phase as phase_filters
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, gpu_pools, inventory_checks
from ansible_inventory import inventory


@pytest.fixture(name="counts")
def fixture_counts(monkeypatch):
    """{'build': calls of cluster_model.build, 'inventory': Inventories made, 'pools': pool judgements}."""
    counts = {"build": 0, "inventory": 0, "pools": 0}
    build, init, judge = cluster_model.build, cluster_model.Inventory.__init__, gpu_pools.pool_problems

    def counting_build(*args, **kwargs):
        counts["build"] += 1
        return build(*args, **kwargs)

    def counting_init(self, *args, **kwargs):
        counts["inventory"] += 1
        init(self, *args, **kwargs)

    def counting_judge(*args, **kwargs):
        counts["pools"] += 1
        return judge(*args, **kwargs)

    monkeypatch.setattr(cluster_model, "build", counting_build)
    monkeypatch.setattr(cluster_model.Inventory, "__init__", counting_init)
    monkeypatch.setattr(gpu_pools, "pool_problems", counting_judge)
    return counts


@pytest.fixture(name="ansible_shaped", scope="module")
def fixture_ansible_shaped():
    groups, hostvars = inventory(120, proxmox_hosts=4)
    assert hostvars["cp1"]["gpu_cluster_gpu_pools"] is not hostvars["cp2"]["gpu_cluster_gpu_pools"]
    return groups, hostvars


@pytest.mark.parametrize("call", [
    lambda g, h: preflight_filter.inventory_problems(g, h, secrets_needed=True),
    preflight_filter.inventory_warnings,
    cluster_filters.schedule,
    cluster_filters.cluster_model,
], ids=["inventory_problems", "inventory_warnings", "schedule", "cluster_model"])
def test_one_inventory_and_one_model_per_filter_call(counts, ansible_shaped, call):
    result = call(*ansible_shaped)
    assert result is not None
    # inventory_problems runs the scheduling proof on this sound inventory; inventory_warnings the idle-pool
    # check: each needs the model, and builds it once
    assert counts == {"build": 1, "inventory": 1, "pools": 1}


def test_run_needs_reads_the_inventory_once_and_builds_no_model(counts, ansible_shaped):
    assert phase_filters.run_needs(*ansible_shaped, ["provision"])["phases"] == ["provision"]
    assert counts == {"build": 0, "inventory": 1, "pools": 0}


def test_features_given_one_inventory_share_its_model(counts, ansible_shaped):
    """Preflight's problems and warnings on one Inventory: one model, the pools judged once."""
    inv = cluster_model.inventory(*ansible_shaped)
    assert inventory_checks.inventory_problems(inv) == []
    inventory_checks.inventory_warnings(inv)
    assert cluster_model.inventory(inv) is inv
    assert counts == {"build": 1, "inventory": 1, "pools": 1}


def test_groups_and_hostvars_still_make_their_own_inventory(counts, ansible_shaped):
    """A feature called with Ansible's groups and hostvars (not an Inventory) reads them at its own boundary."""
    assert isinstance(inventory_checks.pool_warnings(*ansible_shaped), list)
    assert counts == {"build": 1, "inventory": 1, "pools": 1}
