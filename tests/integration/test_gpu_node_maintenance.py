"""playbooks/gpu_node_maintenance.yml without a cluster (issue 30, item 8): bad input is refused
before anything is touched, naming what to use; with every other setting at its default, no
reachable API server is SKIPPED in a lab and FAILED with the reason elsewhere, and verify does not
run after a maintenance that did not. The cordon, drain and label themselves run in the live tier
(tests/integration/test_components_live.py's GPU_CLUSTER_KUBECONFIG) and, below, against a stand-in API
server (issue 47): start's label, cordon and evictions, a second start that changes nothing, finish's
uncordon and unmarking before verify."""

from __future__ import annotations

import copy
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from kube_standin import KubeStandIn, recorded_node
from test_components_delivery import ENV, playbook, recap_changed, unreachable_kubeconfig

REPO = Path(__file__).resolve().parents[2]
MAINTENANCE = REPO / "playbooks" / "gpu_node_maintenance.yml"
HOMELAB = REPO / "inventories" / "homelab"


def run(*extra):
    return playbook(MAINTENANCE, "-i", HOMELAB, *extra)


@pytest.mark.parametrize(("args", "message"), [
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3"),
     "gpu_cluster_maintenance_action is ''; use start (take the node out) or finish"),
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", "gpu_cluster_maintenance_action=pause"),
     "gpu_cluster_maintenance_action is 'pause'; use start"),
    (("-e", "gpu_cluster_maintenance_node=cp1", "-e", "gpu_cluster_maintenance_action=start"),
     "gpu_cluster_maintenance_node is 'cp1', which is no GPU node of this inventory; name one of "
     "wk-gpu1, wk-gpu2, wk-gpu3, wk-gpu4"),
    (("-e", "gpu_cluster_maintenance_action=start"),
     "gpu_cluster_maintenance_node is '', which is no GPU node"),
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", "gpu_cluster_maintenance_action=start",
      "-e", "gpu_cluster_maintenance_drain_timeout=0"),
     "gpu_cluster_maintenance_drain_timeout is '0'; use a whole number of seconds"),
])
def test_bad_input_is_refused_before_anything_is_touched(args, message):
    rc, out = run(*args)
    assert rc != 0, out
    assert message in " ".join(out.split()), out
    assert "nothing was changed" in out
    assert "Look up the kubeconfig" not in out  # refused before the cluster is asked anything


def test_skipped_in_a_lab_and_failed_elsewhere_without_a_cluster(tmp_path):
    kubeconfig = unreachable_kubeconfig(tmp_path)
    for action in ("start", "finish"):
        common = ("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", f"gpu_cluster_maintenance_action={action}",
                  "-e", f"gpu_cluster_kubeconfig={kubeconfig}")
        rc, out = run(*common, "-e", '{"gpu_cluster_lab": true}')
        assert rc == 0, out
        assert "SKIPPED gpu node maintenance: no Kubernetes API server answers at 127.0.0.1:1" in out
        assert "ok: [wk-gpu1]" not in out, out  # verify's worker play did not run
        rc, out = run(*common)
        assert rc != 0, out
        assert "FAILED gpu node maintenance: no Kubernetes API server answers at 127.0.0.1:1" in out


# The maintenance itself, against a stand-in API server (tests/integration/kube_standin.py, which refuses
# what the real one refuses): the Nodes are a recorded GPU Operator node (tests/fixtures/k8s-node/), the
# Pods are shaped as the API serves them (each validated against the Kubernetes 1.36 schema below).
TOOLS = REPO / "tests" / "fixtures" / "tools"


def pod(namespace, name, node_name, owner=None, gpus=0):
    """A running Pod on ``node_name``; ``owner`` (kind, name) its controller, as the API serves it."""
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                        "resourceVersion": "4711", "labels": {"app.kubernetes.io/name": name.rsplit("-", 2)[0]}},
           "spec": {"nodeName": node_name, "restartPolicy": "Always",
                    "containers": [{"name": "main", "image": "registry.lan/app:1.0", "resources": {"limits": limits}}]},
           "status": {"phase": "Running", "hostIP": "10.0.0.23", "podIP": "10.42.3.17"}}
    if owner:
        kind, owner_name = owner
        obj["metadata"]["ownerReferences"] = [{
            "apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind, "name": owner_name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, owner_name)), "controller": True, "blockOwnerDeletion": True}]
    return obj


PODS = [
    pod("gpu-operator", "nvidia-device-plugin-daemonset-7xk2p", "wk-gpu3", ("DaemonSet", "nvidia-device-plugin-daemonset")),
    pod("llm", "qwen-6d5f9c7b8-x2n4q", "wk-gpu3", ("ReplicaSet", "qwen-6d5f9c7b8"), gpus=1),
    pod("gpu-batch", "train-resnet-k8w2m", "wk-gpu3", ("Job", "train-resnet"), gpus=1),
    pod("llm", "embed-7c9b5d4f6-p9r2t", "wk-gpu1", ("ReplicaSet", "embed-7c9b5d4f6"), gpus=1),
]


def test_the_stand_in_pods_are_valid_kubernetes_objects():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for obj in PODS:
        kubernetes_validate.validate(obj, "1.36", strict=True)


def standin_run(api, tmp_path, action, *extra):
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    proc = subprocess.run(["ansible-playbook", str(MAINTENANCE), "-i", str(HOMELAB),
                           "-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", f"gpu_cluster_maintenance_action={action}",
                           "-e", f"gpu_cluster_kubeconfig={kubeconfig}", *extra],
                          cwd=REPO, env=dict(ENV, PATH=f"{TOOLS / 'helm-cli'}:{os.environ.get('PATH', '')}"),
                          capture_output=True, text=True, timeout=900, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_start_cordons_marks_and_evicts_the_nodes_gpu_pods_and_a_second_start_changes_nothing(tmp_path):
    """Issue 47: start labels the node gpu-cluster.cps/maintenance=true, cordons it (spec.unschedulable) and
    posts an eviction for each of its pods but the DaemonSet's (the GPU Operator's device plugin stays, as
    kubectl drain --ignore-daemonsets leaves it); no other node's pod is touched. A second start finds the
    node cordoned and drained and changes nothing."""
    pytest.importorskip("kubernetes", reason="SKIPPED: the kubernetes client (requirements.txt) is not installed")
    nodes = {name: recorded_node(name) for name in ("wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4")}
    with KubeStandIn(nodes, copy.deepcopy(PODS)) as api:
        rc, out = standin_run(api, tmp_path, "start")
        assert rc == 0, out
        labels = api.nodes["wk-gpu3"]["metadata"]["labels"]
        assert labels["gpu-cluster.cps/maintenance"] == "true"
        assert api.nodes["wk-gpu3"]["spec"]["unschedulable"] is True
        assert sorted(api.evicted()) == [("gpu-batch", "train-resnet-k8w2m"), ("llm", "qwen-6d5f9c7b8-x2n4q")]
        assert sorted(api.pods) == [("gpu-operator", "nvidia-device-plugin-daemonset-7xk2p"),
                                    ("llm", "embed-7c9b5d4f6-p9r2t")]
        assert all(api.nodes[name] == recorded_node(name) for name in ("wk-gpu1", "wk-gpu2", "wk-gpu4"))
        assert "wk-gpu3 is cordoned, drained and marked gpu-cluster.cps/maintenance=true" in " ".join(out.split())
        calls = len(api.calls)
        rc, out = standin_run(api, tmp_path, "start")
        assert rc == 0, out
        assert recap_changed(out) == 0, out
        assert len(api.evicted()) == 2
        assert [c for c in api.calls[calls:] if c[0] == "POST"] == []


def test_finish_uncordons_unmarks_waits_for_ready_and_hands_over_to_verify(tmp_path):
    """finish: spec.unschedulable false, the maintenance label removed (a null in the patch), the node's
    Ready condition read, then verify.yml runs against the same API (its node list read after the patches).
    The hosts answer nowhere (a 2-second SSH timeout: each is unreachable soon, as verify reports it);
    verify's own verdicts have their own tests (test_verify_playbook.py), so the run's outcome is not
    judged here, only that the maintenance play completed and handed over."""
    pytest.importorskip("kubernetes", reason="SKIPPED: the kubernetes client (requirements.txt) is not installed")
    nodes = {name: recorded_node(name) for name in ("wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4")}
    nodes["wk-gpu3"]["spec"]["unschedulable"] = True
    nodes["wk-gpu3"]["metadata"]["labels"]["gpu-cluster.cps/maintenance"] = "true"
    with KubeStandIn(nodes, copy.deepcopy(PODS[:2])) as api:
        _rc, out = standin_run(api, tmp_path, "finish", "-e", "verify_wait_timeout=1", "-e", "ansible_ssh_timeout=2")
        assert api.nodes["wk-gpu3"]["spec"]["unschedulable"] is False, out
        assert "gpu-cluster.cps/maintenance" not in api.nodes["wk-gpu3"]["metadata"]["labels"], out
        patches = api.node_patches("wk-gpu3")
        assert {"spec": {"unschedulable": False}} in patches, patches
        assert any(p.get("metadata", {}).get("labels") == {"gpu-cluster.cps/maintenance": None} for p in patches), patches
        assert api.evicted() == []  # finish evicts nothing
        maintenance = out.split("PLAY [Take a GPU node out for maintenance, or bring it back]")[1].split("PLAY [")[0]
        assert "fatal:" not in maintenance and "FAILED" not in maintenance, maintenance
        assert "wk-gpu3 is back in its pool; the verification follows" in " ".join(maintenance.split())
        assert "PLAY [Verify the cluster offers, runs and reports its GPUs]" in out
        last_patch = max(i for i, call in enumerate(api.calls) if call[0] == "PATCH")
        assert ("GET", "/api/v1/nodes") in [call[:2] for call in api.calls[last_patch:]], api.calls[last_patch:]


# A JupyterHub notebook server: KubeSpawner creates a bare pod, no controller owns it
NOTEBOOK = pod("jupyterhub", "jupyter-alice", "wk-gpu3", gpus=1)


def test_a_notebook_on_the_node_stops_start_before_anything_changes_unless_forced(tmp_path):
    """Issue 47: a pod no controller manages would be deleted for good by the drain (kubectl drain and
    k8s_drain refuse it without force). start names it and changes nothing; with
    gpu_cluster_maintenance_force=true it is evicted with the others."""
    pytest.importorskip("kubernetes", reason="SKIPPED: the kubernetes client (requirements.txt) is not installed")
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kubernetes_validate.validate(NOTEBOOK, "1.36", strict=True)
    nodes = {name: recorded_node(name) for name in ("wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4")}
    with KubeStandIn(nodes, copy.deepcopy([*PODS, NOTEBOOK])) as api:
        rc, out = standin_run(api, tmp_path, "start")
        assert rc != 0, out
        assert "wk-gpu3 runs pods no controller manages: jupyterhub/jupyter-alice;" in " ".join(out.split()), out
        assert "nothing was changed" in out
        assert [call for call in api.calls if call[0] in ("PATCH", "POST")] == []
        assert api.nodes["wk-gpu3"] == recorded_node("wk-gpu3")
        rc, out = standin_run(api, tmp_path, "start", "-e", '{"gpu_cluster_maintenance_force": true}')
        assert rc == 0, out
        assert ("jupyterhub", "jupyter-alice") in api.evicted()
        assert api.nodes["wk-gpu3"]["spec"]["unschedulable"] is True


def test_a_force_that_is_not_a_boolean_is_refused_before_anything_is_touched():
    rc, out = run("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", "gpu_cluster_maintenance_action=start",
                  "-e", "gpu_cluster_maintenance_force=maybe")
    assert rc != 0, out
    assert "gpu_cluster_maintenance_force is 'maybe'; use true" in " ".join(out.split()), out
    assert "Look up the kubeconfig" not in out
