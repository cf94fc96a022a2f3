"""Live tier: the storage and gpu phases in direct delivery against a real cluster.

Runs when GPU_CLUSTER_KUBECONFIG names the kubeconfig of a cluster built from
GPU_CLUSTER_INVENTORY (default inventories/homelab; its nodes must be reachable, the
phases also configure them); skipped with the reason only when it is unset. Once it is set, a
missing helm, a missing kubeconfig or an API that does not answer fails the tier (issue 19).
It changes the cluster (installs the components).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import kubernetes
import pytest

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("GPU_CLUSTER_KUBECONFIG", "")
INVENTORY = os.environ.get("GPU_CLUSTER_INVENTORY", str(REPO / "inventories" / "homelab"))
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason="live tier: set GPU_CLUSTER_KUBECONFIG to a cluster's kubeconfig")


def run_phase(name):
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false")
    result = subprocess.run(
        ["ansible-playbook", str(REPO / "playbooks" / f"{name}.yml"), "-i", INVENTORY,
         "-e", f"gpu_cluster_kubeconfig={KUBECONFIG}", "-e", "gpu_cluster_delivery=direct"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"SKIPPED {name}:" not in result.stdout, result.stdout[-2000:]


@pytest.fixture(scope="module")
def api():
    """The configured cluster's API client; fails the tier, with why, when it cannot be used."""
    if shutil.which("helm") is None:
        pytest.fail("live tier: direct delivery needs the helm CLI on this machine (https://helm.sh/docs/intro/install/)")
    if not Path(KUBECONFIG).is_file():
        pytest.fail(f"live tier: kubeconfig {KUBECONFIG} does not exist (unset GPU_CLUSTER_KUBECONFIG to skip the tier)")
    try:
        client = kubernetes.config.new_client_from_config(config_file=KUBECONFIG)
        kubernetes.client.VersionApi(client).get_code(_request_timeout=10)
    except Exception as exc:  # any failure to reach the configured API fails the tier, with why
        pytest.fail(f"live tier: no Kubernetes API answers through {KUBECONFIG}: {exc}")
    return client


def test_storage_phase_makes_nfs_client_the_only_default(api):
    run_phase("storage")
    classes = kubernetes.client.StorageV1Api(api).list_storage_class().items
    defaults = [sc.metadata.name for sc in classes
                if (sc.metadata.annotations or {}).get(DEFAULT_CLASS) == "true"]
    assert defaults == ["nfs-client"]
    scratch = [sc for sc in classes if sc.metadata.name == "fast-scratch"]
    if scratch:
        assert scratch[0].volume_binding_mode == "WaitForFirstConsumer"
        assert scratch[0].reclaim_policy == "Delete"


def test_gpu_phase_labels_only_its_namespace(api):
    nodes = kubernetes.client.CoreV1Api(api).list_node(label_selector="gpu=true").items
    if not nodes:
        pytest.skip("live tier: the cluster has no nodes labelled gpu=true")
    run_phase("gpu")
    namespaces = kubernetes.client.CoreV1Api(api).list_namespace().items
    privileged = [ns.metadata.name for ns in namespaces
                  if (ns.metadata.labels or {}).get("pod-security.kubernetes.io/enforce") == "privileged"]
    # fast-scratch's helper pods need hostPath (only where a worker has a scratch disk); monitoring's
    # node-exporter host namespaces (docs/gpu-pools.md)
    assert set(privileged) <= {"gpu-operator", "fast-scratch", "monitoring"} and "gpu-operator" in privileged
    runtime_class = kubernetes.client.NodeV1Api(api).read_runtime_class("nvidia")
    assert runtime_class.handler == "nvidia"


def test_gpu_node_maintenance_takes_a_node_out_and_brings_it_back(api):
    """playbooks/gpu_node_maintenance.yml start then finish on the first GPU node: cordoned and
    labelled in between, schedulable and unlabelled after (verify runs at the end of finish)."""
    core = kubernetes.client.CoreV1Api(api)
    gpu_nodes = sorted(n.metadata.name for n in core.list_node(label_selector="gpu=true").items)
    if not gpu_nodes:
        pytest.fail("live tier: the cluster has no node labelled gpu=true to take out for maintenance")
    node = gpu_nodes[0]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false")
    for action in ("start", "finish"):
        result = subprocess.run(
            ["ansible-playbook", str(REPO / "playbooks" / "gpu_node_maintenance.yml"), "-i", INVENTORY,
             "-e", f"gpu_cluster_kubeconfig={KUBECONFIG}", "-e", "gpu_cluster_delivery=direct",
             "-e", f"gpu_cluster_maintenance_node={node}", "-e", f"gpu_cluster_maintenance_action={action}"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        found = core.read_node(node)
        in_maintenance = (found.metadata.labels or {}).get("gpu-cluster.cps/maintenance") == "true"
        assert in_maintenance == (action == "start")
        assert bool(found.spec.unschedulable) == (action == "start")
