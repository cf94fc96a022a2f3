"""Custom MIG layouts per node (issue 30, item 3): a pool's ``mig_layout`` ({profile: count per GPU})
validated the way the hardware decides (profiles of the model, compute and memory slices, the start
positions each instance size allows, one media extension), realised through the mig-parted
configuration the GPU Operator's chart creates from our values, with the capacity per resource name
computed from it. The layouts of NVIDIA's MIG user guide ("A100 MIG profiles" combinations) are the
accepted cases."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_pools as gp
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import jupyterhub, vllm
from test_gpu_pools import A30, A100_80, H200, workers
from test_gpu_pools import capacity as pool_capacity

A100_ID = gp.MODEL_DEVICE_IDS[A100_80]
MIXED = {"3g.40gb": 1, "2g.20gb": 2}


def layout_pool(layout=None, nodes=("wk-a",), name="mixed", **extra):
    return dict({"name": name, "nodes": list(nodes), "allocation": "mig",
                 "mig_layout": dict(MIXED if layout is None else layout)}, **extra)


@pytest.mark.parametrize("layout", [
    MIXED,  # the example: 3g.40gb only fits at slice 4, so both 2g.20gb go to 0 and 2
    {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1},
    {"4g.40gb": 1, "3g.40gb": 1},
    {"3g.40gb": 2},
    {"2g.20gb": 3, "1g.10gb": 1},
    {"3g.40gb": 1, "1g.20gb": 2},
    {"1g.10gb": 7},
    {"7g.80gb": 1},
    {"1g.10gb+me": 1, "1g.10gb": 6},
])
def test_layouts_the_a100_80gb_allows(layout):
    assert gp.layout_problems(A100_ID, layout) == []


@pytest.mark.parametrize(("layout", "message"), [
    ({"1g.10gb": 8}, "the layout 8 x 1g.10gb needs 8 compute slices; one GPU has 7"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "needs 8 compute slices; one GPU has 7"),
    ({"3g.40gb": 2, "1g.10gb": 1}, "needs 9 memory slices; one GPU has 8"),
    ({"1g.10gb+me": 2}, "2 media-extension (+me) instances; one GPU has one"),
    ({"5g.50gb": 1}, "MIG profile 5g.50gb does not exist on this GPU; its profiles are 1g.10gb"),
    ({"3g.20gb": 1}, "MIG profile 3g.20gb does not exist on this GPU"),
])
def test_layouts_the_a100_80gb_refuses(layout, message):
    problems = gp.layout_problems(A100_ID, layout)
    assert any(message in p for p in problems), problems


def test_placement_respects_the_start_positions():
    # four 2g instances would fit 8 memory slices by size, but a 2g instance never starts at slice 6
    assert gp._placement([(2, 2, "2g.20gb")] * 4, 8, gp.SEVEN_SLICE_STARTS) is None
    # 3g + 2 x 2g only fits with the 3g at slice 4
    placed = gp._placement([(3, 4, "3g.40gb"), (2, 2, "2g.20gb"), (2, 2, "2g.20gb")], 8, gp.SEVEN_SLICE_STARTS)
    assert [start for _item, start in placed] == [4, 0, 2]


def test_a30_has_four_slices():
    a30 = gp.MODEL_DEVICE_IDS[A30]
    assert gp.layout_problems(a30, {"2g.12gb": 1, "1g.6gb": 2}) == []
    assert any("needs 5 compute slices; one GPU has 4" in p for p in gp.layout_problems(a30, {"2g.12gb": 2, "1g.6gb": 1}))


def test_h200_sizes_round_to_memory_slices():
    h200 = gp.MODEL_DEVICE_IDS[H200]
    assert gp.layout_problems(h200, {"3g.71gb": 1, "2g.35gb": 2}) == []
    assert gp.layout_problems(h200, {"4g.71gb": 1, "3g.71gb": 1}) == []


def test_capacity_per_resource_name_from_the_layout():
    hosts = workers(wk_a=(2, A100_80), wk_b=(1, A100_80))
    found = pool_capacity([layout_pool(nodes=["wk-a", "wk-b"])], hosts)["mixed"]
    assert found["resources"] == {"nvidia.com/mig-2g.20gb": 6, "nvidia.com/mig-3g.40gb": 3}
    assert found["per_node"] == {"wk-a": {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-2g.20gb": 4},
                                 "wk-b": {"nvidia.com/mig-3g.40gb": 1, "nvidia.com/mig-2g.20gb": 2}}


def test_nodes_are_labelled_with_the_pools_own_configuration():
    assert gp.member_labels(layout_pool())[gp.MIG_CONFIG_LABEL] == "custom-mixed"
    assert gp.member_labels({"name": "p", "allocation": "mig", "mig_profile": "all-1g.10gb"})[gp.MIG_CONFIG_LABEL] \
        == "all-1g.10gb"


def test_the_mig_parted_config_keeps_the_defaults_and_adds_the_layout():
    pools = [layout_pool(), {"name": "small", "nodes": ["wk-b"], "allocation": "mig", "mig_profile": "all-1g.10gb"}]
    values = gp.operator_values(pools)
    config = values["migManager"]["config"]
    assert config["name"] == gp.MIG_PARTED_CONFIGMAP and config["create"] is True and config["default"] == "all-disabled"
    parsed = gp.load_mig_configs(config["data"]["config.yaml"])
    assert parsed["custom-mixed"] == [{"devices": None, "enabled": True, "profiles": {"2g.20gb": 2, "3g.40gb": 1}}]
    # every default configuration is still there for the other pools' labels
    assert set(gp.mig_configs()) < set(parsed) and parsed["all-1g.10gb"] == gp.mig_configs()["all-1g.10gb"]
    # and mig-parted's own reading gives the layout on the A100
    assert gp.mig_slices(A100_ID, "custom-mixed", parsed) == {"2g.20gb": 2, "3g.40gb": 1}
    assert yaml.safe_load(config["data"]["config.yaml"])["version"] == "v1"
    # no layout, no custom ConfigMap: the homelab's values stay as they were
    assert "migManager" not in gp.operator_values(pools[1:])


def test_preflight_refusals():
    hosts = gp.workers_view(workers(wk_a=(2, A100_80)))
    problems = gp.pool_problems([layout_pool({"4g.40gb": 1, "2g.20gb": 2})], hosts)
    assert problems == ["gpu_cluster_gpu_pools[0] (mixed): node wk-a (NVIDIA A100 80GB PCIe): the layout 1 x 4g.40gb + "
                        "2 x 2g.20gb needs 8 compute slices; one GPU has 7"]
    assert any("set one of mig_profile" in p for p in gp.pool_problems(
        [layout_pool(mig_profile="all-1g.10gb")], hosts))
    assert any("mig_layout is only for allocation: mig" in p for p in gp.pool_problems(
        [{"name": "x", "nodes": ["wk-a"], "allocation": "exclusive", "mig_layout": MIXED}], hosts))
    for bad in ({}, [], {"3g.40gb": 0}, {"big": 1}, {"3g.40gb": "1"}, {"1g.10gb+xx": 1}):
        assert any("mig_layout" in p for p in gp.pool_problems([layout_pool(bad)], hosts)), bad
    assert gp.pool_problems([layout_pool()], hosts) == []


def test_apps_on_a_layout_pool_ask_for_its_largest_instance():
    pool = layout_pool()
    assert gp.pool_resource(pool) == "nvidia.com/mig-3g.40gb"
    resolved = jupyterhub.resolve_pool([pool], "mixed")
    assert resolved["resource"] == "nvidia.com/mig-3g.40gb" and jupyterhub.pool_capacity(resolved, 2) == 2
    spec = vllm.vllm_spec({"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "pool": "mixed"}, [pool])
    assert spec["gpu_resource"] == "nvidia.com/mig-3g.40gb"


# Issue 43: a MIG profile must exist for the card exactly, no tolerance on the memory size. The names
# are NVIDIA's: the GPU Operator's default mig-parted config (plugins/plugin_utils/mig_parted_config.py,
# copied from the operator's chart) has an `all-7g.80gb` config and no `all-7g.79gb`, and an
# `all-7g.141gb` for the H200, whose whole-GPU instance is one GB less than its two 3g.71gb halves
# (NVIDIA MIG user guide, "H200 MIG profiles": 7g.141gb).
@pytest.mark.parametrize(("model", "profile", "exists"), [
    (A100_80, "7g.80gb", True),
    (A100_80, "7g.79gb", False),
    (A100_80, "7g.81gb", False),
    (H200, "7g.141gb", True),
    (H200, "7g.142gb", False),
    (H200, "7g.140gb", False),
])
def test_whole_gpu_profile_must_be_the_cards_own_name(model, profile, exists):
    problems = gp.layout_problems(gp.MODEL_DEVICE_IDS[model], {profile: 1})
    if exists:
        assert problems == []
    else:
        assert problems and f"MIG profile {profile} does not exist on this GPU" in problems[0], problems


def test_whole_gpu_profiles_come_from_the_operators_configs():
    assert {"7g.40gb", "7g.80gb", "7g.141gb"} <= gp.full_gpu_profiles()
    assert "7g.79gb" not in gp.full_gpu_profiles()
    # the all-7g configs a device offers are exactly its own name
    assert [n for n in gp.offered_configs(gp.MODEL_DEVICE_IDS[A100_80]) if n.startswith("all-7g")] == ["all-7g.80gb"]
    assert [n for n in gp.offered_configs(gp.MODEL_DEVICE_IDS[H200]) if n.startswith("all-7g")] == ["all-7g.141gb"]
