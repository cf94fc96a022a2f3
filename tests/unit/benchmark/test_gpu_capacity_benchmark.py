"""Benchmark: 5,000 synthetic GPU nodes through the gpu_capacity evaluator (linear cost).

Prints the time; the bound is generous (2-core CI machines shared by many jobs).
"""

from __future__ import annotations

import time

from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_capacity import evaluate

NODES = 5000
BOUND_S = 10.0


def synthetic_node(index):
    name = f"wk-gpu{index:05d}"
    return {
        "metadata": {"name": name, "labels": {
            "gpu": "true", "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe", "nvidia.com/gpu.count": "2",
            "nvidia.com/gpu.memory": "81920", "kubernetes.io/hostname": name}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]} if index % 10 == 0 else {},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "capacity": {"cpu": "16", "memory": "131072Mi", "pods": "110", "nvidia.com/gpu": "2"},
            "allocatable": {"cpu": "16", "memory": "130000Mi", "pods": "110", "nvidia.com/gpu": "2"},
        },
    }


def test_5000_nodes(capsys):
    nodes = [synthetic_node(i) for i in range(NODES)]
    expected = {"nvidia.com/gpu": 2 * NODES,
                "per_node": {node["metadata"]["name"]: {"nvidia.com/gpu": 2} for node in nodes}}
    start = time.perf_counter()
    result = evaluate(nodes, expected=expected)
    elapsed = time.perf_counter() - start
    with capsys.disabled():
        print(f"\ngpu_capacity evaluator: {NODES} nodes (with per-node expectations) in {elapsed:.3f} s")
    assert result["totals"] == {"nvidia.com/gpu": 2 * NODES}
    assert result["shortfalls"] == []
    assert len(result["nodes"]) == NODES
    assert elapsed < BOUND_S
