"""GPU pools: MIG profiles derived from the operator's mig-parted config, validation, capacity,
device-plugin configuration, quotas, node labels and the verify rows."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_pools as gp
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.mig_parted_config import DEFAULT_MIG_PARTED_CONFIGMAP

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
A100_40 = "NVIDIA A100-PCIE-40GB"
A100_80 = "NVIDIA A100 80GB PCIe"
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
A30 = "NVIDIA A30"


def workers(**models):
    """wk-a=(count, model) -> the GPU workers' host variables."""
    return dict((host.replace("_", "-"), {"gpu_cluster_gpu_count": count, "gpu_cluster_gpu_model": model})
                for host, (count, model) in models.items())


def capacity(pools, hosts):
    return dict((p["name"], p) for p in gp.pool_capacity(pools, hosts))


def mig_pool(profile, nodes, name="mig"):
    return {"name": name, "nodes": nodes, "allocation": "mig", "mig_profile": profile}


# ------------------------------------------------------------------ the shipped mig-parted config
def test_shipped_config_is_the_operators():
    fixture = (FIXTURES / "charts" / "gpu-operator-v26.7.0" / "default-mig-parted-config.yaml").read_text()
    shipped, upstream = yaml.safe_load(DEFAULT_MIG_PARTED_CONFIGMAP), yaml.safe_load(fixture)
    assert {k: v for k, v in shipped.items() if k != "data"} == {k: v for k, v in upstream.items() if k != "data"}
    assert yaml.safe_load(shipped["data"]["config.yaml"]) == yaml.safe_load(upstream["data"]["config.yaml"])


def test_device_ids_are_normalised():
    assert gp.normalize_device_id("0x20B510DE") == "10de:20b5"
    assert gp.normalize_device_id("10DE:20B5") == "10de:20b5"
    assert gp.normalize_device_id("20b5") is None
    assert gp.normalize_device_id(None) is None


def test_slices_come_from_the_config_not_a_table():
    """A config edited in the test changes the answer: the counts are read, not remembered."""
    configs = gp.load_mig_configs(DEFAULT_MIG_PARTED_CONFIGMAP)
    assert gp.mig_slices("10de:20b5", "all-1g.10gb", configs) == {"1g.10gb": 7}
    edited = copy.deepcopy(configs)
    edited["all-1g.10gb"][0]["profiles"]["1g.10gb"] = 6
    assert gp.mig_slices("10de:20b5", "all-1g.10gb", edited) == {"1g.10gb": 6}
    del edited[gp.BALANCED]
    assert gp.mig_slices("10de:20b5", "all-1g.10gb", edited) is None


@pytest.mark.parametrize(("model", "profile", "per_gpu"), [
    (A100_40, "all-1g.5gb", {"1g.5gb": 7}),
    (A100_40, "all-1g.10gb", {"1g.10gb": 4}),   # the device-filtered entry for 40GB cards
    (A100_40, "all-3g.20gb", {"3g.20gb": 2}),
    (A100_40, "all-7g.40gb", {"7g.40gb": 1}),
    (A100_80, "all-1g.10gb", {"1g.10gb": 7}),
    (A100_80, "all-1g.20gb", {"1g.20gb": 4}),
    (A100_80, "all-2g.20gb", {"2g.20gb": 3}),
    (A100_80, "all-3g.40gb", {"3g.40gb": 2}),
    (A100_80, "all-balanced", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    (H100, "all-1g.10gb", {"1g.10gb": 7}),
    (H100, "all-7g.80gb", {"7g.80gb": 1}),
    (H200, "all-1g.18gb", {"1g.18gb": 7}),
    (H200, "all-1g.35gb", {"1g.35gb": 4}),
    (H200, "all-3g.71gb", {"3g.71gb": 2}),
    (H200, "all-7g.141gb", {"7g.141gb": 1}),
    (A30, "all-1g.6gb", {"1g.6gb": 4}),
    (A30, "all-2g.12gb", {"2g.12gb": 2}),
    (A30, "all-4g.24gb", {"4g.24gb": 1}),
    (A30, "all-balanced", {"1g.6gb": 2, "2g.12gb": 1}),
])
def test_slices_per_model_and_profile(model, profile, per_gpu):
    assert gp.mig_slices(gp.MODEL_DEVICE_IDS[model], profile) == per_gpu


@pytest.mark.parametrize(("model", "profile"), [
    (A30, "all-1g.10gb"), (A30, "all-1g.12gb"), (A30, "all-3g.20gb"), (A30, "all-7g.80gb"),
    (A100_80, "all-1g.5gb"), (A100_80, "all-2g.10gb"), (A100_80, "all-7g.40gb"), (A100_80, "all-1g.18gb"),
    (A100_40, "all-7g.80gb"), (A100_40, "all-1g.20gb"),
    (H200, "all-1g.10gb"), (H200, "all-7g.144gb"), (H100, "all-3g.47gb"),
    (A100_80, "all-disabled"), (A100_80, "all-enabled"), (A100_80, "no-such-config"),
])
def test_profiles_a_model_does_not_offer(model, profile):
    assert gp.mig_slices(gp.MODEL_DEVICE_IDS[model], profile) is None


@pytest.mark.parametrize("model", ["Tesla T4", "NVIDIA A10G", "NVIDIA L4", "NVIDIA L40S", "NVIDIA GeForce RTX 4090",
                                   "NVIDIA GeForce RTX 3090"])
def test_models_without_mig_offer_nothing(model):
    assert gp.offered_configs(gp.MODEL_DEVICE_IDS[model]) == {}


def test_a30_offers_exactly_its_three_sizes():
    single = sorted(p for name, s in gp.offered_configs(gp.MODEL_DEVICE_IDS[A30]).items() if len(s) == 1 for p in s)
    assert single == ["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"]


def test_resource_names():
    assert gp.mig_resource("1g.10gb") == "nvidia.com/mig-1g.10gb"
    assert gp.mig_resource("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
    assert gp.mig_config_name("1g.10gb") == "all-1g.10gb"
    assert gp.mig_config_name("all-balanced") == "all-balanced"
    assert gp.mig_config_name("9g.1gb") is None


# ------------------------------------------------------------------ capacity
@pytest.mark.parametrize(("model", "profile", "gpus", "resource", "count"), [
    (A100_40, "all-1g.5gb", 2, "nvidia.com/mig-1g.5gb", 14),
    (A100_80, "all-1g.10gb", 2, "nvidia.com/mig-1g.10gb", 14),
    (A100_80, "all-3g.40gb", 4, "nvidia.com/mig-3g.40gb", 8),
    (H100, "all-2g.20gb", 8, "nvidia.com/mig-2g.20gb", 24),
    (H200, "1g.18gb", 1, "nvidia.com/mig-1g.18gb", 7),
    (A30, "all-2g.12gb", 3, "nvidia.com/mig-2g.12gb", 6),
])
def test_mig_capacity(model, profile, gpus, resource, count):
    result = capacity([mig_pool(profile, ["wk-1"])], workers(wk_1=(gpus, model)))["mig"]
    assert (result["resource"], result["count"]) == (resource, count)
    assert result["per_node"] == {"wk-1": {resource: count}}


def test_balanced_mig_pool_has_three_resources():
    result = capacity([mig_pool("all-balanced", ["wk-1", "wk-2"])], workers(wk_1=(2, A100_80), wk_2=(1, H100)))["mig"]
    assert result["resources"] == {"nvidia.com/mig-1g.10gb": 6, "nvidia.com/mig-2g.20gb": 3, "nvidia.com/mig-3g.40gb": 3}


def test_timeslicing_on_two_rtx_4090():
    pools = [{"name": "notebooks", "nodes": ["desk"], "allocation": "timeslice", "replicas": 4}]
    hosts = workers(desk=(2, "NVIDIA GeForce RTX 4090"))
    assert capacity(pools, hosts)["notebooks"]["resources"] == {"nvidia.com/gpu": 8}
    pools[0]["renameByDefault"] = True
    assert capacity(pools, hosts)["notebooks"]["resources"] == {"nvidia.com/gpu.shared": 8}


def test_mixed_pools():
    pools = [
        {"name": "training", "nodes": ["wk-gpu1", "wk-gpu2"], "allocation": "exclusive"},
        {"name": "notebooks", "node_selector": {"gpu-class": "consumer"}, "allocation": "timeslice", "replicas": 3},
        mig_pool("all-1g.6gb", ["wk-a30"], name="inference"),
    ]
    hosts = workers(wk_gpu1=(2, A100_80), wk_gpu2=(4, H100), wk_4090=(2, "NVIDIA GeForce RTX 4090"), wk_a30=(1, A30))
    hosts["wk-4090"]["gpu_cluster_node_labels"] = ["gpu-class=consumer"]
    hosts["wk-a30"]["gpu_cluster_node_name"] = "a30.lan"
    result = capacity(pools, hosts)
    assert (result["training"]["resource"], result["training"]["count"]) == ("nvidia.com/gpu", 6)
    assert result["training"]["per_node"] == {"wk-gpu1": {"nvidia.com/gpu": 2}, "wk-gpu2": {"nvidia.com/gpu": 4}}
    assert result["notebooks"]["nodes"] == ["wk-4090"]
    assert result["notebooks"]["count"] == 6
    assert result["inference"] == {
        "name": "inference", "allocation": "mig", "resource": "nvidia.com/mig-1g.6gb", "count": 4,
        "resources": {"nvidia.com/mig-1g.6gb": 4}, "per_node": {"a30.lan": {"nvidia.com/mig-1g.6gb": 4}},
        "nodes": ["a30.lan"]}


def test_capacity_takes_a_list_of_hostvars():
    hostvars = [dict(v, inventory_hostname=k) for k, v in workers(wk_1=(2, A100_80)).items()]
    assert gp.pool_capacity([mig_pool("all-1g.10gb", ["wk-1"])], hostvars)[0]["count"] == 14


def test_capacity_refuses_bad_pools():
    with pytest.raises(gp.PoolError, match="has no MIG"):
        gp.pool_capacity([mig_pool("all-1g.10gb", ["wk-1"])], workers(wk_1=(1, "Tesla T4")))


# ------------------------------------------------------------------ validation (every refusal of the issue)
HOSTS = workers(wk_gpu1=(2, A100_80), wk_gpu2=(2, A100_80), wk_a30=(1, A30), wk_t4=(1, "Tesla T4"),
                wk_4090=(2, "NVIDIA GeForce RTX 4090"))


def problems(pools, hosts=None):
    return gp.pool_problems(pools, gp.workers_view(HOSTS if hosts is None else hosts))


def one(pools, hosts=None):
    found = problems(pools, hosts)
    assert len(found) == 1, found
    return found[0]


def test_the_homelab_example_is_sound():
    pools = yaml.safe_load((Path(__file__).resolve().parents[4] / "inventories" / "homelab" / "group_vars" / "all"
                            / "gpu_pools.yml").read_text())["gpu_cluster_gpu_pools"]
    homelab = workers(wk_gpu1=(2, A100_80), wk_gpu2=(2, A100_80), wk_gpu3=(2, A100_80), wk_gpu4=(2, A100_80))
    assert problems(pools, homelab) == []
    assert [p["count"] for p in gp.pool_capacity(pools, homelab)] == [4, 8, 14]


def test_node_in_two_pools():
    assert "node wk-gpu1 is in two GPU pools (a and b)" in one([
        {"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive"},
        {"name": "b", "nodes": ["wk-gpu1", "wk-gpu2"], "allocation": "exclusive"}])


def test_unknown_node():
    assert "node wk-gpu9 is not a host of gpu_workers" in one([{"name": "a", "nodes": ["wk-gpu9"], "allocation": "exclusive"}])


def test_pool_without_nodes():
    assert "the pool has no node (nodes is empty)" in one([{"name": "a", "nodes": [], "allocation": "exclusive"}])
    assert "matches no GPU worker" in one([{"name": "a", "node_selector": {"x": "y"}, "allocation": "exclusive"}])


@pytest.mark.parametrize("host", ["wk-t4", "wk-4090"])
def test_mig_on_a_model_without_mig(host):
    assert "which has no MIG" in one([mig_pool("all-1g.10gb", [host])])


@pytest.mark.parametrize("model", ["NVIDIA A10G", "NVIDIA L4", "NVIDIA L40S", "NVIDIA GeForce RTX 3090"])
def test_mig_on_other_models_without_mig(model):
    assert "which has no MIG" in one([mig_pool("all-1g.10gb", ["x"])], workers(x=(1, model)))


def test_profile_the_model_does_not_offer():
    message = one([mig_pool("all-1g.10gb", ["wk-a30"])])
    assert message.endswith("MIG profile all-1g.10gb is not offered by NVIDIA A30 on node wk-a30; its profiles are "
                            "1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb")


def test_unknown_model_needs_a_device_id():
    hosts = workers(x=(1, "NVIDIA Future 1000"))
    assert "set gpu_cluster_gpu_device_id" in one([mig_pool("all-1g.10gb", ["x"])], hosts)
    hosts["x"]["gpu_cluster_gpu_device_id"] = "10de:20b5"
    assert problems([mig_pool("all-1g.10gb", ["x"])], hosts) == []


@pytest.mark.parametrize("replicas", [1, 0, "4", None, True])
def test_replicas_below_two(replicas):
    assert f"replicas {replicas!r} must be a whole number of at least 2" in one(
        [{"name": "a", "nodes": ["wk-4090"], "allocation": "timeslice", "replicas": replicas}])


def test_duplicate_pool_names():
    assert "pool name a is used twice (entries 0 and 1)" in one([
        {"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive"},
        {"name": "a", "nodes": ["wk-gpu2"], "allocation": "exclusive"}])


def test_contradictory_grants():
    message = one([
        {"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "namespaces": ["team-a"]},
        {"name": "b", "nodes": ["wk-gpu2"], "allocation": "exclusive", "namespaces": ["team-b"]}])
    assert "pools a, b all hand out nvidia.com/gpu but grant it to different namespaces (team-a; team-b)" in message
    # the same grant on both, or different resource names, is not contradictory
    assert problems([
        {"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "namespaces": ["team-a"]},
        {"name": "b", "nodes": ["wk-gpu2"], "allocation": "exclusive", "namespaces": ["team-a"]}]) == []
    assert problems([
        {"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "namespaces": ["team-a"]},
        {"name": "b", "nodes": ["wk-4090"], "allocation": "timeslice", "replicas": 2, "renameByDefault": True,
         "namespaces": ["team-b"]}]) == []


@pytest.mark.parametrize(("pool", "text"), [
    ({"name": "A", "nodes": ["wk-gpu1"], "allocation": "exclusive"}, "must be a DNS label"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "shared"}, "allocation 'shared' must be one of"),
    ({"name": "a", "allocation": "exclusive"}, "set exactly one of nodes"),
    ({"name": "a", "nodes": ["wk-gpu1"], "node_selector": {"a": "b"}, "allocation": "exclusive"}, "set exactly one of nodes"),
    ({"name": "a", "nodes": "wk-gpu1", "allocation": "exclusive"}, "must be a list of gpu_workers host names"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "replicas": 2}, "replicas is only for"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "renameByDefault": True}, "renameByDefault must be"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "mig"}, "mig_profile None is not a configuration"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "mig_profile": "all-1g.10gb"}, "mig_profile is only for"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "namespaces": []}, "non-empty list of namespace"),
    ({"name": "a", "nodes": ["wk-gpu1"], "allocation": "exclusive", "colour": "red"}, "unknown key(s) colour"),
])
def test_entry_problems(pool, text):
    assert text in one([pool])


def test_odd_types_are_messages():
    assert "use a list of pools" in problems({"name": "a"})[0]
    assert "is 'a'; use a mapping" in problems(["a"])[0]
    assert problems(None) == []


def test_inventory_entry_point():
    groups = {"all": ["wk-1"], "gpu_workers": ["wk-1"]}
    hostvars = {"wk-1": {"gpu_cluster_gpu_count": 1, "gpu_cluster_gpu_model": A30, "gpu_cluster_gpu_device_id": "A30",
                         "gpu_cluster_gpu_pools": [mig_pool("all-1g.10gb", ["wk-1"])]}}
    found = gp.inventory_pool_problems(groups, hostvars)
    assert found[0] == "wk-1: gpu_cluster_gpu_device_id is 'A30'; use the PCI vendor:device id lspci -nn shows for the GPU, like 10de:20b5"
    assert gp.inventory_pool_problems(groups, {"wk-1": {}}) == []


# ------------------------------------------------------------------ GPU Operator objects
DEVICE_PLUGIN_SCHEMA = FIXTURES / "k8s-device-plugin-v0.20.0" / "config-v1.schema.json"


def test_device_plugin_configmap_matches_the_plugin_format():
    schema = json.loads(DEVICE_PLUGIN_SCHEMA.read_text())
    pools = [{"name": "ts", "nodes": ["wk-4090"], "allocation": "timeslice", "replicas": 4, "renameByDefault": True},
             {"name": "x", "nodes": ["wk-gpu1"], "allocation": "exclusive"}, mig_pool("all-1g.10gb", ["wk-gpu2"])]
    configmap = gp.device_plugin_configmap(pools, HOSTS)
    assert sorted(configmap["data"]) == ["default", "mig", "ts", "x"]
    for text in configmap["data"].values():
        jsonschema.validate(yaml.safe_load(text), schema)
    # failRequestsGreaterThanOne: a container asking two slices is refused, never handed two slices of one GPU
    assert yaml.safe_load(configmap["data"]["ts"])["sharing"]["timeSlicing"] == {
        "renameByDefault": True, "failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    assert yaml.safe_load(configmap["data"]["mig"])["flags"]["migStrategy"] == "mixed"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}}, schema)


def test_operator_values_and_strategy():
    assert gp.operator_values([]) == {}
    assert gp.operator_values([{"name": "a"}]) == {"devicePlugin": {"config": {"name": "gpu-pools-device-plugin", "default": "default"}},
                                                   "mig": {"strategy": "mixed"}}
    assert gp.mig_strategy([]) == "single"
    assert gp.mig_strategy([{"name": "a"}]) == "mixed"


def test_node_labels():
    pools = [{"name": "ts", "node_selector": {"gpu-class": "consumer"}, "allocation": "timeslice", "replicas": 2},
             mig_pool("1g.10gb", ["wk-gpu2"])]
    assert gp.pool_node_labels(pools, "wk-gpu2") == {"gpu-cluster.cps/gpu-pool": "mig", "nvidia.com/device-plugin.config": "mig",
                                                     "nvidia.com/mig.config": "all-1g.10gb"}
    assert gp.pool_node_labels(pools, "wk-4090", {"gpu_cluster_node_labels": ["gpu-class=consumer"]}, as_list=True) == [
        "gpu-cluster.cps/gpu-pool=ts", "nvidia.com/device-plugin.config=ts"]
    assert gp.pool_node_labels(pools, "wk-gpu1") == {}


def test_quotas_grant_and_zero():
    pools = [{"name": "open", "nodes": ["wk-gpu1"], "allocation": "exclusive"},
             mig_pool("all-1g.10gb", ["wk-gpu2"], name="llm"),
             {"name": "ts", "nodes": ["wk-4090"], "allocation": "timeslice", "replicas": 2, "renameByDefault": True,
              "namespaces": ["lab"]}]
    pools[1]["namespaces"] = ["llm", "lab"]
    quotas = dict((q["metadata"]["namespace"], q["spec"]["hard"]) for q in gp.resource_quotas(pools, HOSTS))
    assert quotas == {
        "default": {"requests.nvidia.com/gpu.shared": "0", "requests.nvidia.com/mig-1g.10gb": "0"},
        "lab": {"requests.nvidia.com/gpu.shared": "4", "requests.nvidia.com/mig-1g.10gb": "14"},
        "llm": {"requests.nvidia.com/gpu.shared": "0", "requests.nvidia.com/mig-1g.10gb": "14"},
    }
    assert [c["name"] for c in gp.quota_components(pools, HOSTS)] == ["gpu-quota-default", "gpu-quota-lab", "gpu-quota-llm"]
    assert gp.resource_quotas(pools[:1], HOSTS) == []


# ------------------------------------------------------------------ verify rows
def a100_node():
    return json.loads((FIXTURES / "k8s-node" / "node__a100-sxm4-40gb__mig-mixed-7g.40gb.json").read_text())


def test_report_rows_on_a_real_mig_node():
    node = a100_node()
    name = node["metadata"]["name"]
    hosts = {name: {"gpu_cluster_gpu_count": 1, "gpu_cluster_gpu_model": "NVIDIA A100-SXM4-40GB"}}
    pools = [mig_pool("all-7g.40gb", [name])]
    assert gp.capacity_report(pools, hosts, [node]) == [{
        "check": "gpu pool capacity", "target": "mig (nvidia.com/mig-7g.40gb)", "status": "ok",
        "detail": f"1 of 1 expected nvidia.com/mig-7g.40gb allocatable on {name}"}]
    hosts[name]["gpu_cluster_gpu_count"] = 2
    row = gp.capacity_report(pools, hosts, [node])[0]
    assert row["status"] == "failed"
    assert "1 of 2 expected" in row["detail"] and "has 1 allocatable nvidia.com/mig-7g.40gb, expected 2" in row["detail"]


def test_report_rows_for_a_missing_node():
    row = gp.capacity_report([mig_pool("all-1g.10gb", ["wk-gpu1"])], HOSTS, [a100_node()])[0]
    assert row["status"] == "failed"
    assert "node wk-gpu1 is expected to offer 14 nvidia.com/mig-1g.10gb but is not in the cluster" in row["detail"]


@pytest.mark.parametrize("pool, resource", [
    ({"name": "a", "allocation": "exclusive"}, "nvidia.com/gpu"),
    ({"name": "a"}, "nvidia.com/gpu"),
    ({"name": "a", "allocation": "timeslice", "replicas": 4}, "nvidia.com/gpu"),
    ({"name": "a", "allocation": "timeslice", "replicas": 4, "renameByDefault": True}, "nvidia.com/gpu.shared"),
    ({"name": "a", "allocation": "mig", "mig_profile": "all-1g.10gb"}, "nvidia.com/mig-1g.10gb"),
    ({"name": "a", "allocation": "mig", "mig_profile": "2g.20gb"}, "nvidia.com/mig-2g.20gb"),
])
def test_pool_resource_from_the_entry_alone(pool, resource):
    assert gp.pool_resource(pool) == resource
