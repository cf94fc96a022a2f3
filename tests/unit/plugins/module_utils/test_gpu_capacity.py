"""gpu_capacity evaluation on NodeList fixtures built from real Node objects (tests/fixtures/k8s-node)."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_capacity import (
    MalformedNodeError,
    QuantityError,
    evaluate,
    list_all,
    matches_selector,
    parse_quantity,
    quantity_value,
    summarize_node,
    validate_expected,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "k8s-node"
GPU = "nvidia.com/gpu"
SHARED = "nvidia.com/gpu.shared"


def load(name):
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture
def t4():
    """Real node: 2x Tesla T4 under the GPU Operator (time-slicing replicas label 1)."""
    return load("node__tesla-t4-x2__gpu-operator.json")


@pytest.fixture
def mig_mixed():
    """Real node: A100 in MIG mixed strategy, 2x 1g.5gb + 1x 2g.10gb."""
    return load("node__a100__mig-mixed-3-instances.json")


@pytest.fixture
def mig_7g():
    """Real node: A100 SXM4 40GB in MIG mixed strategy, 1x 7g.40gb."""
    return load("node__a100-sxm4-40gb__mig-mixed-7g.40gb.json")


def renamed(node, name):
    node = copy.deepcopy(node)
    node["metadata"]["name"] = name
    return node


def worker(t4, name, gpus=2):
    node = renamed(t4, name)
    node["status"]["capacity"][GPU] = str(gpus)
    node["status"]["allocatable"][GPU] = str(gpus)
    return node


def set_ready(node, status):
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = status
    return node


def test_all_good(t4, mig_mixed):
    nodes = [worker(t4, "wk-gpu1"), worker(t4, "wk-gpu2"), mig_mixed]
    result = evaluate(nodes, expected={GPU: 4, "per_node": {"wk-gpu1": {GPU: 2}, "wk-gpu2": {GPU: 2}}})
    assert result["shortfalls"] == []
    assert result["totals"] == {GPU: 4, "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1,
                                "nvidia.com/mig-3g.20gb": 0}
    first = result["nodes"][0]
    assert first["name"] == "wk-gpu1"
    assert first["ready"] is True and first["schedulable"] is True
    assert first["taints"] == []
    assert first["capacity"] == {GPU: 2} and first["allocatable"] == {GPU: 2}
    assert first["labels"] == {
        "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.replicas": "1", "nvidia.com/mig.strategy": "mixed",
    }
    # cpu, memory, pods are not GPU resources
    assert "cpu" not in first["allocatable"]


def test_not_ready_node_is_a_shortfall_and_not_counted(t4):
    nodes = [worker(t4, "wk-gpu1"), set_ready(worker(t4, "wk-gpu2"), "Unknown")]
    result = evaluate(nodes, expected={GPU: 4, "per_node": {"wk-gpu2": {GPU: 2}}})
    assert result["nodes"][1]["ready"] is False
    assert result["totals"] == {GPU: 2}
    assert result["shortfalls"] == [
        "node wk-gpu2 is NotReady; it is expected to offer 2 nvidia.com/gpu",
        "cluster has 2 allocatable nvidia.com/gpu on Ready schedulable nodes, expected 4",
    ]


def test_node_without_ready_condition_is_not_ready(t4):
    node = worker(t4, "wk-gpu1")
    node["status"]["conditions"] = [c for c in node["status"]["conditions"] if c["type"] != "Ready"]
    assert summarize_node(node)["ready"] is False


def test_cordoned_node(t4):
    node = worker(t4, "wk-gpu1")
    node["spec"]["unschedulable"] = True
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                               "timeAdded": "2026-01-01T00:00:00Z"}]
    result = evaluate([node], expected={"per_node": {"wk-gpu1": {GPU: 2}}})
    summary = result["nodes"][0]
    assert summary["schedulable"] is False
    assert summary["taints"] == [{"key": "node.kubernetes.io/unschedulable", "value": None, "effect": "NoSchedule"}]
    assert result["totals"] == {GPU: 0}
    assert result["shortfalls"] == ["node wk-gpu1 is cordoned (unschedulable); it is expected to offer 2 nvidia.com/gpu"]
    # without require_ready a Ready cordoned node counts and passes
    relaxed = evaluate([node], expected={"per_node": {"wk-gpu1": {GPU: 2}}}, require_ready=False)
    assert relaxed["totals"] == {GPU: 2}
    assert relaxed["shortfalls"] == []


def test_gpu_labelled_node_without_gpu_resource(t4):
    node = renamed(t4, "wk-gpu3")
    for field in ("capacity", "allocatable"):
        del node["status"][field][GPU]
    node["metadata"]["labels"] = {"gpu": "true", "kubernetes.io/hostname": "wk-gpu3"}
    result = evaluate([node], expected={"per_node": {"wk-gpu3": {GPU: 2}}})
    assert result["nodes"][0]["allocatable"] == {}
    assert result["nodes"][0]["gpu_node_labels"] == ["gpu"]
    assert result["shortfalls"] == [
        "node wk-gpu3 is labelled gpu=true but advertises no allocatable GPU resource "
        "(is the GPU Operator's device plugin running there?)",
        "node wk-gpu3 has 0 allocatable nvidia.com/gpu, expected 2",
    ]


def test_cpu_node_without_labels_is_fine(t4):
    node = renamed(t4, "cp1")
    node["metadata"]["labels"] = {}
    for field in ("capacity", "allocatable"):
        del node["status"][field][GPU]
    assert evaluate([node])["shortfalls"] == []


def test_time_sliced_node_with_replicas_label(t4):
    node = worker(t4, "wk-gpu1", gpus=8)  # 2 GPUs x 4 replicas
    node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "Tesla-T4-SHARED"
    result = evaluate([node], expected={"per_node": {"wk-gpu1": {GPU: 8}}})
    assert result["shortfalls"] == []
    assert result["nodes"][0]["labels"]["nvidia.com/gpu.replicas"] == "4"
    assert result["nodes"][0]["labels"]["nvidia.com/gpu.count"] == "2"
    assert result["totals"] == {GPU: 8}


def test_time_sliced_renamed_shared_resource(t4):
    node = renamed(t4, "wk-gpu1")
    for field in ("capacity", "allocatable"):
        node["status"][field][GPU] = "0"
        node["status"][field][SHARED] = "8"
    result = evaluate([node], expected={SHARED: 8, GPU: 2})
    assert result["nodes"][0]["allocatable"] == {GPU: 0, SHARED: 8}
    assert result["totals"] == {GPU: 0, SHARED: 8}
    assert result["shortfalls"] == [
        "cluster has 0 allocatable nvidia.com/gpu on Ready schedulable nodes, expected 2"]


def test_mig_mixed_strategy_nodes(mig_mixed, mig_7g):
    mig_7g = renamed(mig_7g, "qa-mig-worker-gpu-a100-b")
    result = evaluate([mig_mixed, mig_7g], expected={
        "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-7g.40gb": 1,
        "per_node": {"qa-mig-worker-gpu-a100": {"nvidia.com/mig-2g.10gb": 1}},
    })
    assert result["shortfalls"] == []
    assert result["totals"] == {GPU: 0, "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1,
                                "nvidia.com/mig-3g.20gb": 0, "nvidia.com/mig-7g.40gb": 1}
    assert result["nodes"][0]["labels"]["nvidia.com/mig.strategy"] == "mixed"
    # gpu.present=true but only MIG resources: not a "no GPU resource" shortfall
    assert result["nodes"][0]["gpu_node_labels"] == ["nvidia.com/gpu.present"]


def test_mig_expectation_unmet(mig_mixed):
    result = evaluate([mig_mixed], expected={"per_node": {"qa-mig-worker-gpu-a100": {"nvidia.com/mig-3g.20gb": 2}}})
    assert result["shortfalls"] == ["node qa-mig-worker-gpu-a100 has 0 allocatable nvidia.com/mig-3g.20gb, expected 2"]


def test_resources_option_restricts_and_fills_zero(t4, mig_mixed):
    result = evaluate([t4, mig_mixed], resources=["nvidia.com/mig-1g.5gb", "nvidia.com/mig-1g.10gb"])
    assert result["nodes"][0]["allocatable"] == {"nvidia.com/mig-1g.5gb": 0, "nvidia.com/mig-1g.10gb": 0}
    assert result["totals"] == {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-1g.10gb": 0}


def test_expected_node_missing_and_total_short(t4):
    result = evaluate([worker(t4, "wk-gpu1", gpus=1)],
                      expected={GPU: 8, "per_node": {"wk-gpu1": {GPU: 2}, "wk-gpu4": {GPU: 2}}})
    assert result["shortfalls"] == [
        "node wk-gpu1 has 1 allocatable nvidia.com/gpu, expected 2",
        "node wk-gpu4 is expected to offer 2 nvidia.com/gpu but is not in the cluster",
        "cluster has 1 allocatable nvidia.com/gpu on Ready schedulable nodes, expected 8",
    ]


def test_more_than_expected_is_fine(t4):
    assert evaluate([worker(t4, "wk-gpu1", gpus=4)], expected={GPU: 2})["shortfalls"] == []


@pytest.mark.parametrize("raw", ["two", "1.5", "-1", "", "500m", None, True, [2]])
def test_malformed_quantity_is_a_shortfall_not_a_traceback(t4, raw):
    node = worker(t4, "wk-gpu1")
    node["status"]["allocatable"][GPU] = raw
    result = evaluate([node], expected={"per_node": {"wk-gpu1": {GPU: 2}}})
    assert result["nodes"][0]["errors"]
    assert result["shortfalls"][0].startswith("node wk-gpu1 reports a malformed allocatable quantity for nvidia.com/gpu")
    assert "node wk-gpu1 has 0 allocatable nvidia.com/gpu, expected 2" in result["shortfalls"]


@pytest.mark.parametrize("raw, value", [("2", 2), (2, 2), ("1k", 1000), ("1Ki", 1024), (" 3 ", 3), ("1.5k", 1500),
                                        (4.0, 4), ("1e3", 1000), ("1E3", 1000), ("1e+3", 1000), ("2E", 2 * 10 ** 18),
                                        ("2000m", 2), ("2.", 2), ("+2", 2), ("0", 0), ("-0", 0), ("2.000", 2),
                                        ("1Ei", 2 ** 60), ("1Mi", 2 ** 20), ("1.5Ki", 1536),
                                        ("8", 8), ("1G", 10 ** 9), ("20e-1", 2), ("0.002k", 2)])
def test_parse_quantity(raw, value):
    assert parse_quantity(raw) == value


@pytest.mark.parametrize("raw, value", [
    ("1e3", Fraction(1000)), ("1k", Fraction(1000)), ("500m", Fraction(1, 2)), ("1Ki", Fraction(1024)),
    ("2E", Fraction(2 * 10 ** 18)), ("0.5", Fraction(1, 2)), (".5", Fraction(1, 2)), ("-1", Fraction(-1)),
    ("1.5", Fraction(3, 2)), ("1e-3", Fraction(1, 1000)), ("100m", Fraction(1, 10)), ("1.5Gi", Fraction(3 * 2 ** 29)),
    (3, Fraction(3)), (0.25, Fraction(1, 4)), ("12E-2", Fraction(3, 25)),
])
def test_quantity_value_follows_the_kubernetes_grammar(raw, value):
    assert quantity_value(raw) == value


@pytest.mark.parametrize("raw", ["2x", "e3", "1e", "1ki", "1KI", "1 k", "1.2.3", ".", "", "--1", "1e3.5", "1Ki3",
                                 "1mi", "1K", "5e-1k", "1Eik", "k", "m", "1e99999", None, True, [2], {"a": 1}, float("nan"),
                                 float("inf")])
def test_quantity_value_rejects(raw):
    with pytest.raises(QuantityError):
        quantity_value(raw)


@pytest.mark.parametrize("raw, words", [("1.5", "1.5, not a whole number"), ("500m", "0.5, not a whole number"),
                                        ("0.5", "not a whole number"), ("-2", "negative"), (-2, "negative"),
                                        (2.5, "not a whole number"), ("1.0001k", "not a whole number"),
                                        ("1e-3", "not a whole number"), ("m", "not a Kubernetes quantity"),
                                        ("2x", "not a Kubernetes quantity")])
def test_parse_quantity_rejects(raw, words):
    with pytest.raises(QuantityError, match=words):
        parse_quantity(raw)


@pytest.mark.parametrize("node, words", [
    ("wk-gpu1", "must be a mapping"),
    (["wk-gpu1"], "must be a mapping"),
    ({"metadata": []}, "metadata is a list"),
    ({"metadata": {"name": 3}}, "metadata.name must be a string"),
    ({"metadata": {"name": "wk", "labels": ["gpu=true"]}}, "node wk: metadata.labels is a list"),
    ({"metadata": {"name": "wk"}, "status": "Ready"}, "node wk: status is a str"),
    ({"metadata": {"name": "wk"}, "status": {"allocatable": [GPU]}}, "node wk: status.allocatable is a list"),
    ({"metadata": {"name": "wk"}, "status": {"capacity": "2"}}, "node wk: status.capacity is a str"),
    ({"metadata": {"name": "wk"}, "status": {"conditions": {"type": "Ready"}}}, "node wk: status.conditions must be a list"),
    ({"metadata": {"name": "wk"}, "status": {"conditions": ["Ready"]}}, "status.conditions must be a list of mappings"),
    ({"metadata": {"name": "wk"}, "spec": {"taints": "gpu=true:NoSchedule"}}, "node wk: spec.taints must be a list"),
    ({"metadata": {"name": "wk"}, "spec": []}, "node wk: spec is a list"),
])
def test_malformed_node_is_a_clean_error(node, words):
    with pytest.raises(MalformedNodeError, match=words):
        evaluate([node], expected={GPU: 1})


def test_validate_expected():
    assert validate_expected({GPU: 2, "per_node": {"a": {GPU: "2"}}}) == []
    problems = validate_expected({GPU: "lots", "per_node": {"a": {GPU: -1}, "b": 3}})
    assert problems == [
        "expected.nvidia.com/gpu must be a whole number of devices: 'lots' is not a Kubernetes quantity "
        "(e.g. 2, 1k, 1Ki, 1e3, 500m)",
        "expected.per_node.a.nvidia.com/gpu must be a whole number of devices: -1 is negative",
        "expected.per_node.b must map resources to counts",
    ]
    assert validate_expected({"per_node": ["a"]}) == ["expected.per_node must map node names to {resource: count}"]


def test_empty_and_sparse_nodes():
    result = evaluate([{}, {"metadata": {"name": "bare"}}])
    assert [n["name"] for n in result["nodes"]] == ["<unnamed>", "bare"]
    assert result["totals"] == {} and result["shortfalls"] == []


def test_list_all_follows_continue_tokens():
    pages = {None: (["a", "b"], "t1"), "t1": (["c"], "t2"), "t2": (["d"], "")}
    calls = []

    def list_page(limit, token):
        calls.append((limit, token))
        return pages[token]

    assert list_all(list_page, page_size=2) == ["a", "b", "c", "d"]
    assert calls == [(2, None), (2, "t1"), (2, "t2")]


@pytest.mark.parametrize("selector, matches", [
    (None, True), ("gpu=true", True), ("gpu==true", True), ("gpu=false", False), ("gpu!=true", False),
    ("gpu", True), ("!gpu", False), ("missing", False), ("!missing", True), ("gpu=true,zone=a", True),
    ("gpu=true,zone=b", False),
])
def test_matches_selector(selector, matches):
    node = {"metadata": {"labels": {"gpu": "true", "zone": "a"}}}
    assert matches_selector(node, selector) is matches


@pytest.mark.parametrize("path, bad, words", [
    (("status",), None, None),
    (("status", "allocatable"), ["nvidia.com/gpu"], "status.allocatable is a list"),
    (("status", "capacity"), 2, "status.capacity is a int"),
    (("status", "conditions"), "Ready", "status.conditions must be a list of mappings"),
    (("metadata", "labels"), "gpu=true", "metadata.labels is a str"),
    (("spec",), "unschedulable", "spec is a str"),
])
def test_real_node_with_a_corrupted_field(t4, path, bad, words):
    """The captured T4 node with one field removed or replaced by the wrong type."""
    node = renamed(t4, "wk-gpu1")
    parent = node
    for key in path[:-1]:
        parent = parent[key]
    if bad is None:
        del parent[path[-1]]
        result = evaluate([node], expected={"per_node": {"wk-gpu1": {GPU: 2}}})
        assert result["nodes"][0]["ready"] is False and result["nodes"][0]["allocatable"] == {}
        assert "node wk-gpu1 is NotReady; it is expected to offer 2 nvidia.com/gpu" in result["shortfalls"]
        return
    parent[path[-1]] = bad
    with pytest.raises(MalformedNodeError, match="node wk-gpu1: " + words):
        evaluate([node])


def test_real_node_with_exponent_and_milli_quantities(t4):
    node = renamed(t4, "wk-gpu1")
    node["status"]["allocatable"][GPU] = "2e0"
    node["status"]["capacity"][GPU] = "2000m"
    summary = summarize_node(node)
    assert summary["allocatable"][GPU] == 2 and summary["capacity"][GPU] == 2 and summary["errors"] == []
    node["status"]["allocatable"][GPU] = "1500m"
    assert summarize_node(node)["errors"] == [
        "node wk-gpu1 reports a malformed allocatable quantity for nvidia.com/gpu: '1500m' is 1.5, "
        "not a whole number of devices"]


@pytest.mark.parametrize("zero", ["0", "0m", 0])
def test_gpu_labelled_node_advertising_zero_gpus_is_flagged(t4, zero):
    """The device plugin registered the resource but offers none (allocatable "0"): still a
    shortfall, with no per-node or total expectation to catch it otherwise (issue 19)."""
    node = worker(t4, "wk-gpu4")
    node["status"]["allocatable"][GPU] = zero
    node["metadata"]["labels"] = {"gpu": "true", "kubernetes.io/hostname": "wk-gpu4"}
    result = evaluate([node])
    assert result["nodes"][0]["allocatable"] == {GPU: 0}
    assert result["nodes"][0]["capacity"] == {GPU: 2}
    assert result["shortfalls"] == [
        "node wk-gpu4 is labelled gpu=true but advertises no allocatable GPU resource "
        "(is the GPU Operator's device plugin running there?)",
    ]


def test_gpu_labelled_node_with_one_of_two_resources_at_zero_is_fine(t4, mig_mixed):
    """Only a node offering no GPU resource at all is flagged: a zero next to a non-zero is not."""
    node = worker(t4, "wk-gpu5")
    node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] = "0"
    node["metadata"]["labels"] = {"gpu": "true"}
    assert evaluate([node])["shortfalls"] == []
