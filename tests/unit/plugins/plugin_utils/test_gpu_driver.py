"""The GPU driver's lifecycle (issue 30, item 1): the branch the inventory's GPUs need, the operator's
upgradePolicy, the host-driver node label, the upgrade's progress read from Node objects (a real
GPU Operator node capture with the upgrade controller's label), and the preflight refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, components, gpu_driver

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
T4_NODE = json.loads((FIXTURES / "k8s-node" / "node__tesla-t4-x2__gpu-operator.json").read_text())


@pytest.mark.parametrize(("models", "branch", "version"), [
    (["NVIDIA A100 80GB PCIe", "NVIDIA H100 PCIe"], "current", "595.91.07"),
    (["Tesla T4"], "current", "595.91.07"),                       # Turing: still in the current branch
    (["Tesla V100-PCIE-32GB", "NVIDIA A100 80GB PCIe"], "legacy", "580.95.05"),  # one Volta: R580 for all
    (["Tesla P100-PCIE-16GB"], "legacy", "580.95.05"),
    (["Tesla P40"], "legacy", "580.95.05"),
    (["NVIDIA RTX PRO 6000 Blackwell Server Edition"], "current", "595.91.07"),
    ([], "current", "595.91.07"),
])
def test_the_branch_every_gpu_of_the_inventory_supports(models, branch, version):
    decision = gpu_driver.driver_version(models, "595.91.07", "580.95.05")
    assert (decision["branch"], decision["version"]) == (branch, version)
    if branch == "legacy":
        assert "R580 is the last branch for" in decision["why"]


def test_the_inventorys_version_wins():
    assert gpu_driver.driver_version(["Tesla V100-SXM2-32GB"], "595.91.07", "580.95.05", "570.195.03") == {
        "version": "570.195.03", "branch": "inventory", "why": "gpu_cluster_gpu_driver_version"}


def test_the_upgrade_policy_is_node_by_node_and_reaches_the_cluster_policy():
    policy = gpu_driver.upgrade_policy(2)
    assert policy["autoUpgrade"] is True and policy["maxParallelUpgrades"] == 2 and policy["maxUnavailable"] == 2
    assert policy["gpuPodDeletion"]["force"] is False and policy["drain"]["enable"] is False
    with pytest.raises(ValueError, match="at least 1"):
        gpu_driver.upgrade_policy(0)  # the operator reads 0 as no limit: every node at once
    values = components.gpu_operator_values("v1.36.4+k3s1", "v26.7.0", driver_version="595.91.07",
                                            driver_upgrade_policy=policy)
    assert values["driver"] == {"enabled": True, "version": "595.91.07", "upgradePolicy": policy}
    host = components.gpu_operator_values("v1.36.4+k3s1", "v26.7.0", driver_enabled=False, driver_upgrade_policy=policy)
    assert host["driver"] == {"enabled": False}


def labelled(state, name=None):
    node = copy.deepcopy(T4_NODE)
    if name:
        node["metadata"]["name"] = name
    if state is not None:
        node["metadata"]["labels"][gpu_driver.UPGRADE_STATE_LABEL] = state
    return node


def test_upgrade_progress_from_the_nodes():
    name = T4_NODE["metadata"]["name"]
    assert gpu_driver.upgrade_progress([labelled("upgrade-done")], [name])["done"] is True
    assert gpu_driver.upgrade_progress([labelled(None)], [name])["done"] is True  # nothing to upgrade there
    waiting = gpu_driver.upgrade_progress([labelled("upgrade-done"), labelled("pod-deletion-required", "wk-gpu2")],
                                          [name, "wk-gpu2"])
    assert waiting["done"] is False and waiting["pending"] == ["wk-gpu2"]
    failed = gpu_driver.upgrade_progress([labelled("upgrade-failed")], [name])
    assert failed["done"] is False and failed["failed"] == [name]
    gone = gpu_driver.upgrade_progress([], [name])
    assert gone["pending"] == [name] and gone["states"] == {name: "not in the cluster"}


def inventory(**changes):
    hosts = ["cp1", "wk-gpu1", "wk-gpu2"]
    hostvars = {host: {} for host in hosts}
    for host in ("wk-gpu1", "wk-gpu2"):
        hostvars[host].update(gpu_cluster_gpu_count=1, gpu_cluster_gpu_model="NVIDIA A100 80GB PCIe")
    for name, value in changes.items():
        if name == "gpu_cluster_gpu_driver_on_host":
            hostvars["wk-gpu2"][name] = value
        else:
            for host in hosts:
                hostvars[host][name] = value
    groups = {"all": hosts, "k3s_cluster": hosts, "k3s_servers": ["cp1"], "k3s_agents": hosts[1:],
              "gpu_workers": hosts[1:]}
    return groups, hostvars


@pytest.mark.parametrize(("changes", "message"), [
    ({}, None),
    ({"gpu_cluster_gpu_driver_version": "595.91.07"}, None),
    ({"gpu_cluster_gpu_driver_version": 595.91}, "gpu_cluster_gpu_driver_version is 595.91; use an NVIDIA driver version"),
    ({"gpu_cluster_gpu_driver_version": "latest"}, "gpu_cluster_gpu_driver_version is 'latest'"),
    ({"gpu_cluster_gpu_driver_version": "595.91"}, "gpu_cluster_gpu_driver_version is '595.91'"),
    ({"gpu_cluster_gpu_driver_version": "595.91.07\n"}, "gpu_cluster_gpu_driver_version is '595.91.07\\n'"),
    ({"gpu_cluster_gpu_driver_max_parallel_upgrades": 2}, None),
    ({"gpu_cluster_gpu_driver_max_parallel_upgrades": 0}, "gpu_cluster_gpu_driver_max_parallel_upgrades is 0"),
    ({"gpu_cluster_gpu_driver_max_parallel_upgrades": 3}, "from 1 to the number of GPU workers (2)"),
    ({"gpu_cluster_gpu_driver_max_parallel_upgrades": "1"}, "gpu_cluster_gpu_driver_max_parallel_upgrades is '1'"),
    ({"gpu_cluster_gpu_driver_upgrade_timeout": 7200}, None),
    ({"gpu_cluster_gpu_driver_upgrade_timeout": 60}, "gpu_cluster_gpu_driver_upgrade_timeout is 60; use seconds, at least 300"),
    ({"gpu_cluster_gpu_driver_on_host": "yes"}, "wk-gpu2: gpu_cluster_gpu_driver_on_host is 'yes'"),
    ({"gpu_cluster_gpu_driver_on_host": True}, None),
])
def test_preflight_refuses_bad_driver_settings(changes, message):
    problems = gpu_driver.driver_problems(*inventory(**changes))
    if message is None:
        assert problems == []
    else:
        assert len(problems) == 1 and message in problems[0], problems


def test_a_host_with_its_own_driver_is_labelled_to_keep_it():
    model = cluster_model.build(*inventory(gpu_cluster_gpu_driver_on_host=True))
    nodes = cluster_model.by_name(model)
    assert nodes["wk-gpu2"]["labels"][gpu_driver.DEPLOY_DRIVER_LABEL] == "false"
    assert gpu_driver.DEPLOY_DRIVER_LABEL not in nodes["wk-gpu1"]["labels"]
    # the label the real GPU Operator sets on a node it deploys the driver to (the capture): the same key
    assert T4_NODE["metadata"]["labels"][gpu_driver.DEPLOY_DRIVER_LABEL] == "true"


def _pod(name, owners=None, phase="Running", annotations=None):
    metadata = {"name": name, "namespace": "ns"}
    if owners:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": name + "-owner", "uid": "u"}
                                       for kind in owners]
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "status": {"phase": phase}}


def test_unmanaged_pods_follow_the_drains_own_rule():
    """kubernetes.core k8s_drain's filter_pods (after kubectl drain's filters): mirror pods and finished
    pods are never in the way; any owner reference counts as managed; a bare running pod is unmanaged."""
    pods = [_pod("notebook"), _pod("vllm", ["ReplicaSet"]), _pod("plugin", ["DaemonSet"]),
            _pod("done", phase="Succeeded"), _pod("failed", phase="Failed"),
            _pod("static", annotations={gpu_driver.MIRROR_ANNOTATION: "abc"}), _pod("pending", phase="Pending")]
    assert gpu_driver.unmanaged_pods(pods) == ["ns/notebook", "ns/pending"]
    assert gpu_driver.unmanaged_pods([]) == [] and gpu_driver.unmanaged_pods(None) == []


def test_maintenance_drain_problem_names_the_pods_and_force_lets_them_go():
    pods = [_pod("jupyter-alice"), _pod("vllm", ["ReplicaSet"])]
    problem = gpu_driver.maintenance_drain_problem(pods, "wk-gpu3")
    assert problem.startswith("wk-gpu3 runs pods no controller manages: ns/jupyter-alice;")
    assert "gpu_cluster_maintenance_force=true" in problem and problem.endswith("nothing was changed.")
    assert gpu_driver.maintenance_drain_problem(pods, "wk-gpu3", True) == ""
    assert gpu_driver.maintenance_drain_problem(pods, "wk-gpu3", "true") != ""  # only a real boolean forces
    assert gpu_driver.maintenance_drain_problem(pods[1:], "wk-gpu3") == ""
