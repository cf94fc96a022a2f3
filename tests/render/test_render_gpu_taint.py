"""The GPU taint followed everywhere (issue 44): the homelab with its GPU taint set the way NVIDIA and GKE
spell it (``nvidia.com/gpu=present:NoSchedule``, the render without management of
test_render_components) and with another key (``example.com/accelerator=nvidia:NoSchedule``, the render
with backups, logs and model metrics of test_render_operations) passes preflight (render.yml runs it
first, and the scheduling proof of our own workloads with it) and places every pod the charts create as
Helm's engine renders them from our values:

* the charts' DaemonSets that must run on the GPU workers (NFD's worker, the node exporter, the log
  collector, Velero's node agent) reach every GPU worker;
* the GPU Operator's operands (driver, toolkit, device plugin, DCGM exporter, GFD, MIG manager, validator)
  get the ClusterPolicy's ``daemonsets.tolerations`` from the operator (GPU Operator docs, "Tolerations":
  applied to every operand DaemonSet) and reach every GPU worker with them;
* every Deployment, StatefulSet, Job and CronJob of the charts fits a node;
* our own workloads (vLLM pods, the notebook puller, fast-scratch's helper, the CUDA smoke pod) tolerate it.

Placement is kube-scheduler's feasibility (plugin_utils/scheduling.py); the cluster model is the homelab's
with the same setting, as Ansible gives an extra variable to every host.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, scheduling
from test_render_charts import _load_homelab, chart_workloads, helm_template
from test_render_components import NO_MANAGEMENT, NO_MANAGEMENT_GPU_TAINT
from test_render_operations import OPERATIONS_GPU_TAINT, OPERATIONS_RENDER

RENDERS = {"present": (NO_MANAGEMENT, NO_MANAGEMENT_GPU_TAINT), "other-key": (OPERATIONS_RENDER, OPERATIONS_GPU_TAINT)}
RENDERS_USED = [args for args, _taint in RENDERS.values()]  # started with the session (conftest.py)

# bundle -> (chart dir under tests/fixtures/charts/helm, namespace); the bundles a render has
CHARTS = {
    "gpu-operator": ("gpu-operator-v26.7.0", "gpu-operator"),
    "monitoring": ("kube-prometheus-stack-88.5.3", "monitoring"),
    "jupyterhub": ("jupyterhub-4.4.0", "jupyterhub"),
    "velero": ("velero-12.1.0", "velero"),
    "log-collector": ("alloy-1.11.1", "logging"),
}
# The DaemonSets of the charts that must run on every GPU worker (by name fragment).
GPU_DAEMONSETS = ("node-feature-discovery-worker", "prometheus-node-exporter", "node-agent", "log-collector")
# The operands the GPU Operator creates from the ClusterPolicy (spec keys): each a DaemonSet on the GPU nodes.
OPERANDS = ("driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd", "migManager", "validator")


def model_with(taint):
    """The homelab's model with gpu_cluster_gpu_taint set on every host (as render.yml's -e sets it)."""
    groups, hostvars = _load_homelab()
    for variables in hostvars.values():
        variables["gpu_cluster_gpu_taint"] = taint
    return cluster_model.build(groups, hostvars)


@pytest.fixture(scope="module", params=sorted(RENDERS))
def case(request, renders_cache):
    """(name, taint, render directory of the cluster, {bundle: (docs, fleet)}, model) of one render."""
    args, taint = RENDERS[request.param]
    out, output = renders_cache.get(*args)
    assert "Inventory OK" in output  # preflight passed (with its scheduling proof of our own workloads)
    cluster = out / "homelab"
    charts = {}
    for bundle, (chart_dir, namespace) in CHARTS.items():
        path = cluster / bundle / "fleet.yaml"
        if not path.exists():
            continue
        fleet = yaml.safe_load(path.read_text())
        helm = fleet["helm"]
        docs, _crds = helm_template(chart_dir, helm.get("values") or {}, helm.get("releaseName", bundle), namespace)
        charts[bundle] = (docs, fleet)
    return request.param, taint, cluster, charts, model_with(taint)


def daemonsets(charts):
    found = []
    for bundle, (docs, _fleet) in sorted(charts.items()):
        for path, doc in docs:
            if doc.get("kind") == "DaemonSet":
                found.append({"name": f"DaemonSet {doc['metadata']['name']} ({bundle}: {path})",
                              "namespace": doc["metadata"].get("namespace") or CHARTS[bundle][1],
                              "pod": doc["spec"]["template"]["spec"]})
    return found


def operand_workloads(charts):
    """One pod per operand the ClusterPolicy enables: the operator gives each the policy's
    daemonsets.tolerations and a nodeSelector on labels it sets on the GPU nodes itself."""
    docs, _fleet = charts["gpu-operator"]
    (policy,) = [doc for _path, doc in docs if doc["kind"] == "ClusterPolicy"]
    spec = policy["spec"]
    tolerations = copy.deepcopy(spec["daemonsets"].get("tolerations") or [])
    result = []
    for operand in OPERANDS:
        if (spec.get(operand) or {}).get("enabled", True) is False:
            continue
        result.append({"name": f"GPU Operator operand {operand} (ClusterPolicy daemonsets.tolerations)",
                       "namespace": "gpu-operator", "pod": {"tolerations": tolerations, "containers": []},
                       "every_node": True})
    return result


def test_the_gpu_workers_carry_the_configured_taint(case):
    _name, taint, _cluster, _charts, model = case
    parsed = cluster_model.parse_taint(taint)
    assert all(parsed in node["taints"] for node in cluster_model.gpu_nodes(model))
    assert model["gpu_tolerations"] == [{"key": parsed["key"], "operator": "Exists", "effect": parsed["effect"]}]


def test_the_operator_operands_and_the_charts_gpu_daemonsets_reach_every_gpu_worker(case):
    name, _taint, _cluster, charts, model = case
    gpu_nodes = cluster_model.gpu_nodes(model)
    operands = operand_workloads(charts)
    assert {w["name"].split()[3] for w in operands} >= {"driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd"}
    on_gpu = [dict(w, every_node=True) for w in daemonsets(charts) if any(part in w["name"] for part in GPU_DAEMONSETS)]
    expected = {"node-feature-discovery-worker", "prometheus-node-exporter"}
    if name == "other-key":  # backups and logs are on in that render
        expected |= {"node-agent", "log-collector"}
    assert {part for part in GPU_DAEMONSETS for w in on_gpu if part in w["name"]} == expected
    result = scheduling.prove(operands + on_gpu, gpu_nodes)
    assert result["problems"] == [], "\n".join(result["problems"])
    # the proof can fail: on nodes with the contract's default taint as well, the operands' values for
    # another key (or the present value, whose key is the default's) follow only what the model carries
    other = [dict(node, taints=node["taints"] + [{"key": "example.com/other", "value": "x", "effect": "NoSchedule"}])
             for node in gpu_nodes]
    refused = scheduling.prove(operands, other)["problems"]
    assert refused and all("example.com/other=x:NoSchedule not tolerated" in p for p in refused), refused


def test_every_chart_pod_and_daemonset_schedules_with_the_configured_taint(case):
    _name, _taint, _cluster, charts, model = case
    workloads = []
    for bundle, (docs, _fleet) in sorted(charts.items()):
        workloads += chart_workloads(docs, CHARTS[bundle][1])
    workloads += [dict(w, daemon_set=True) for w in daemonsets(charts)]
    result = scheduling.prove(workloads, model["nodes"])
    assert result["problems"] == [], "\n".join(result["problems"])


def test_our_own_gpu_workloads_tolerate_the_configured_taint(case):
    _name, taint, cluster, _charts, model = case
    parsed = cluster_model.parse_taint(taint)
    wanted = {"key": parsed["key"], "operator": "Exists", "effect": parsed["effect"]}
    pods = []
    for path in sorted(cluster.glob("*/*.yaml")):
        if path.name == "fleet.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") in ("Deployment", "DaemonSet") and (
                    doc["spec"]["template"]["spec"].get("runtimeClassName") == "nvidia"
                    or doc["metadata"]["name"] == "notebook-image-puller"):
                pods.append((str(path), doc["spec"]["template"]["spec"]))
    smoke = yaml.safe_load((cluster.parent / "_verify" / "homelab" / "cuda-smoke-test.yaml").read_text())
    pods.append(("cuda-smoke-test", smoke["spec"]))
    assert len(pods) >= 3, pods  # the models' Deployments, the puller, the smoke pod
    for where, pod in pods:
        assert wanted in pod["tolerations"], where
    profiles = yaml.safe_load((cluster / "jupyterhub" / "fleet.yaml").read_text())["helm"]["values"]["singleuser"]["profileList"]
    gpu_profiles = [p for p in profiles if (p.get("kubespawner_override") or {}).get("extra_resource_limits")]
    assert gpu_profiles and all(wanted in p["kubespawner_override"]["tolerations"] for p in gpu_profiles)
    result = scheduling.prove([{"name": where, "namespace": "x", "pod": pod} for where, pod in pods],
                              cluster_model.gpu_nodes(model))
    assert result["problems"] == []
