# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every workload the collection would create for an inventory, as pod specs, for the scheduling
proof (plugin_utils/scheduling.py): the vLLM models' Deployments, every JupyterHub profile's pod as
KubeSpawner builds it, the verify Jobs, the CUDA smoke pod; and the ResourceQuotas of the GPU pools.
Each builder is the one the roles render with, so the proof judges what is deployed."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups, cluster_logs, cluster_model, components, gpu_pools
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import jupyterhub, k3s_hardening
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import scheduling, verify, vllm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import copy_data

VERIFY_NAMESPACE = "gpu-cluster-verify"
# Verify's default images: the proof needs a name, not the pin.
_VERIFY_IMAGES = dict((k, "verify/%s" % k) for k in ("cuda", "vectoradd", "pytorch", "busybox", "tensorflow"))


# The inventory values the workloads are built from (cluster-wide: the first host that sets each), read
# once by the model's builder (the model's ``settings``: cluster_model.WORKLOAD_SETTINGS).
VALUES = cluster_model.WORKLOAD_SETTINGS


def _value(model, name, default=None):
    """The inventory's value of ``name`` (one of VALUES), from the model's settings."""
    value = (model.get("settings") or {}).get(name)
    return default if value is None else value


def _flag(value):
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"))


def llm_workloads(model, gpu_tolerations=None):
    """The pods of ``gpu_cluster_llm_models`` (engine ``deployment``: the Deployment's template;
    ``operator``: the pod the production-stack operator makes of a VLLMRuntime) and, with engine
    ``operator`` installed by the collection (``gpu_cluster_llm_operator_install``), the operator's
    own controller pod."""
    models = _value(model, "gpu_cluster_llm_models")
    if not isinstance(models, list) or not models:
        return []
    pools = _value(model, "gpu_cluster_gpu_pools", [])
    namespace = _value(model, "gpu_cluster_llm_namespace", vllm.DEFAULT_NAMESPACE)
    try:
        specs = [vllm.vllm_spec(entry, pools if isinstance(pools, list) else [], "deployment",
                                vllm.DEFAULT_INGRESS_CLASS, namespace, gpu_tolerations=gpu_tolerations) for entry in models]
    except (ValueError, TypeError, KeyError):
        return []  # preflight's llm checks say what is wrong with the entries
    result = []
    for spec in specs:
        deployment = vllm.vllm_deployment(spec)
        result.append({"name": "vLLM model %s (Deployment %s/%s)" % (spec["model"], spec["namespace"], spec["name"]),
                       "namespace": spec["namespace"], "pod": deployment["spec"]["template"]["spec"],
                       "replicas": deployment["spec"]["replicas"]})
    if _value(model, "gpu_cluster_llm_engine", "deployment") == "operator" \
            and _value(model, "gpu_cluster_llm_operator_install", True) is not False:
        result.insert(0, vllm.operator_workload())
    return result


def profile_pod(spec):
    """The pod KubeSpawner makes of one profile's override (scheduling fields only): cpu and memory
    guarantees as requests and limits as limits, extra resources, node selector, tolerations."""
    override = jupyterhub.kubespawner_override(spec)
    requests = {"cpu": override["cpu_guarantee"], "memory": override["mem_guarantee"]}
    limits = {"cpu": override["cpu_limit"], "memory": override["mem_limit"]}
    requests.update(override.get("extra_resource_guarantees") or {})
    limits.update(override.get("extra_resource_limits") or {})
    pod = {"containers": [{"name": "notebook", "resources": {"requests": requests, "limits": limits}}],
           "tolerations": copy_data(override.get("tolerations") or jupyterhub.CHART_USER_TOLERATIONS)}
    if override.get("node_selector"):
        pod["nodeSelector"] = dict(override["node_selector"])
    return pod


def jupyterhub_workloads(model, gpu_tolerations=None):
    """One pod per JupyterHub profile the hub would offer (when JupyterHub is enabled)."""
    if not _flag(_value(model, "gpu_cluster_jupyterhub_enabled", False)):
        return []
    pools = _value(model, "gpu_cluster_gpu_pools", [])
    pools = pools if isinstance(pools, list) else []
    namespace = _value(model, "gpu_cluster_jupyterhub_namespace", "jupyterhub")
    resolved = jupyterhub.resolve_profiles(_value(model, "gpu_cluster_jupyterhub_profiles"),
                                           cluster_model.worker_gpu_counts(model), pools, False, namespace)
    result = []
    for entry in resolved["profiles"]:
        try:
            spec = jupyterhub.profile_spec(entry, pools, images={"cpu": "cpu", "pytorch": "pytorch", "tensorflow": "tensorflow"},
                                           gpu_tolerations=gpu_tolerations)
        except (ValueError, TypeError, KeyError):
            continue
        result.append({"name": "JupyterHub profile %s" % entry["name"], "namespace": namespace,
                       "pod": profile_pod(spec), "alone": True})
    puller = jupyterhub.image_puller(
        {"namespace": namespace, "pools": pools, "pause_image": "pause", "gpu_tolerations": gpu_tolerations,
         "prepull": _value(model, "gpu_cluster_jupyterhub_prepull", True),
         "images": {"cpu": "cpu", "pytorch": "pytorch", "tensorflow": "tensorflow"}}, resolved["profiles"])
    if puller:
        result.append({"name": "JupyterHub notebook image puller (DaemonSet %s/%s)" % (namespace, jupyterhub.IMAGE_PULLER),
                       "namespace": namespace, "pod": puller["spec"]["template"]["spec"], "daemon_set": True})
    return result


def verify_workers(model):
    """verify.plan_jobs's workers from the model: each GPU node's resource, whether a unit is a whole
    GPU, and the tolerations of all its taints."""
    workers = []
    for node in cluster_model.gpu_nodes(model):
        resource, units = cluster_model.gpu_resource_of(node)
        workers.append({"node": node["name"], "gpu_count": node["gpu_count"], "model": node["gpu_model"],
                        "resource": resource or cluster_model.GPU_RESOURCE, "units": units,
                        "shared": cluster_model.shares_gpus(node),
                        "tolerations": cluster_model.tolerations(node["taints"])})
    return workers


# The checks verify runs on every GPU worker (pinned to it); the others run once.
PER_NODE_CHECKS = ("nvidia-smi", "vector-add", "pytorch", "gpu-probe")


def _alike_workers(model):
    """(one verify worker per node shape, {its node: [the other nodes of that shape]}): GPU nodes
    with the same labels (but the hostname), taints, allocatable resources, GPU count, model and
    sharing get the same per-node Jobs and are judged alike by the scheduler, so the proof judges
    one of each and counts the others (linear in shapes, not in nodes)."""
    by_name = dict((node["name"], node) for node in cluster_model.gpu_nodes(model))
    firsts, alike = [], {}
    first_of = {}
    for worker in verify_workers(model):
        node = by_name[worker["node"]]
        key = (scheduling.node_shape(node), worker["gpu_count"], worker["model"], worker["shared"])
        if key in first_of:
            alike[first_of[key]].append(worker["node"])
            continue
        first_of[key] = worker["node"]
        alike[worker["node"]] = []
        firsts.append(worker)
    return firsts, alike


def _verify_plan(model):
    """(Jobs, namespace, alike) as verify.yml plans them for the inventory (its default options),
    the per-node Jobs planned for one node of each shape (``alike``: :func:`_alike_workers`)."""
    options = {}
    for key, name in (("smoke_tests", "gpu_cluster_verify_smoke_tests"), ("gpu_probe", "gpu_cluster_verify_gpu_probe"),
                      ("tensorflow", "gpu_cluster_verify_tensorflow"), ("network", "gpu_cluster_verify_network")):
        value = _value(model, name)
        if value is not None:
            options[key] = _flag(value)
    namespace = _value(model, "gpu_cluster_verify_namespace", VERIFY_NAMESPACE)
    nodes = [node["name"] for node in model["nodes"][:2]]
    # the pod-network check's pods (one per node, alike but for the node) are judged as one workload
    # on every node; the first worker of each shape comes first in the plan's order, so the once-only
    # Jobs (multi-GPU, TensorFlow) land where verify.yml puts them
    firsts, alike = _alike_workers(model)
    return verify.plan_jobs(firsts, nodes, _VERIFY_IMAGES, options), namespace, alike


def _others(job, alike):
    """The nodes that run the same per-node Job as ``job``'s node ([] for a once-only Job)."""
    if job.get("check") not in PER_NODE_CHECKS:
        return []
    return alike.get(job.get("node"), [])


def verify_workloads(model, plan=None):
    """The verify Jobs' pods, as verify.yml plans them for the inventory (its default options); a
    per-node Job stands for its node and the nodes alike (``alike``, ``replicas``)."""
    jobs, namespace, alike = plan or _verify_plan(model)
    result = []
    for job in jobs:
        pod = verify.job_manifests(job, namespace)[-1]["spec"]["template"]["spec"]
        if job.get("network"):
            if any(w.get("every_node") for w in result):
                continue
            pod.pop("nodeSelector", None)
            result.append({"name": "verify pod-network check (a pod on every node)", "namespace": namespace,
                           "pod": pod, "every_node": True})
            continue
        others = _others(job, alike)
        if others:  # the Job verify.yml names after each node (plan_jobs: check prefix + node slug)
            prefix = job["name"][:-len(verify.slug(job["node"]))]
            result.append({"name": "verify Job %s" % job["name"], "namespace": namespace, "pod": pod,
                           "alike": [("verify Job %s%s" % (prefix, verify.slug(node)), node) for node in others],
                           "replicas": 1 + len(others)})
            continue
        result.append({"name": "verify Job %s" % job["name"], "namespace": namespace, "pod": pod})
    return result


def verify_quotas(model, plan):
    """The verify namespace's own quota for the reserved pools' resources (verify.grant_quota), as
    much as the Jobs of every node ask."""
    jobs, namespace, alike = plan
    every = [dict(job, gpus=int(job.get("gpus") or 0) * (1 + len(_others(job, alike)))) for job in jobs]
    quota = verify.grant_quota(every, namespace, model.get("limited"))
    return [quota] if quota else []


def smoke_workloads(model):
    """The CUDA smoke pod of the render tier (components.cuda_smoke_pod), when there are GPU nodes."""
    if not cluster_model.gpu_nodes(model):
        return []
    pod = components.cuda_smoke_pod(tolerations=model.get("gpu_tolerations"))
    return [{"name": "CUDA smoke pod", "namespace": pod["metadata"]["namespace"], "pod": pod["spec"]}]


def _chart_pod(values, name):
    """A chart's pod as our values shape it: placement and the container's resources."""
    pod = {"containers": [{"name": name, "resources": dict(values.get("resources") or {})}]}
    for key in ("nodeSelector", "tolerations"):
        if values.get(key):
            pod[key] = values[key]
    return pod


def operations_values(inventory, hostvars=None):
    """``{backups, logs}``: the backup and log settings of the inventory (``inventory``: a
    cluster_model.Inventory, or Ansible's groups with ``hostvars``; backups.inventory_values,
    cluster_logs.inventory_values): they hold the backup location's credentials, which the model never
    carries (the cluster_model filter hands the model to playbooks)."""
    inv = cluster_model.inventory(inventory, hostvars)
    return {"backups": backups.inventory_values(inv), "logs": cluster_logs.inventory_values(inv)}


def operations_workloads(model, operations):
    """The backup and log pods our values decide (the charts' own pods are proved in the render tier):
    Velero's server and its node agent, which must run on every node (a pod's volumes are read where
    the pod runs), Loki and the log collector on every node. [] for what is off or unsound (preflight
    says why). ``operations``: :func:`operations_values`."""
    result = []
    for key, build in (("backups", lambda v: backups.components(v, model, plugin_image="velero/plugin", chart_version="0.0.0")),
                       ("logs", lambda v: cluster_logs.components(v, model, loki_chart_version="0.0.0",
                                                                  alloy_chart_version="0.0.0"))):
        try:
            found = build(operations[key])
        except ValueError:
            continue
        for component in found:
            values, namespace = component["chart"]["values"], component["namespace"]
            if component["name"] == backups.COMPONENT:
                result.append({"name": "Velero server", "namespace": namespace, "pod": _chart_pod(values, "velero")})
                result.append({"name": "Velero node agent", "namespace": namespace, "every_node": True,
                               "pod": backups.node_agent_pod(values)})
            elif component["name"] == cluster_logs.LOKI:
                result.append({"name": "Loki", "namespace": namespace, "pod": _chart_pod(values["singleBinary"], "loki")})
            else:
                result.append({"name": "Log collector", "namespace": namespace, "every_node": True,
                               "pod": cluster_logs.collector_pod(values)})
    return result


def pool_quotas(model):
    """The ResourceQuotas the GPU pools render (gpu_pools.resource_quotas), [] without sound pools
    or when no pool is reserved for some namespaces (only those get quotas)."""
    pools = model["pools"]
    if not any(pool.get("namespaces") for pool in pools):
        return []
    return gpu_pools.resource_quotas(pools, model["workers"], judged=True)


def workloads(model, operations, plan=None):
    """Every workload, in deploy order (storage and GPU stack first, then apps, then verify);
    ``operations``: :func:`operations_values`."""
    gpu = model.get("gpu_tolerations")
    return (smoke_workloads(model) + operations_workloads(model, operations) + llm_workloads(model, gpu) +
            jupyterhub_workloads(model, gpu) + verify_workloads(model, plan))


def admission_limits(model):
    """The ResourceQuota plugin's ``limitedResources`` the servers get (k3s_hardening), for the proof."""
    if not model.get("limited"):
        return []
    return k3s_hardening.resource_quota_plugin(model["limited"])["configuration"]["limitedResources"]


def proof(inventory, hostvars=None, model=None):
    """The scheduling proof of an inventory (``inventory``: a cluster_model.Inventory, or Ansible's groups
    with ``hostvars``): its model (built once, or ``model`` when the caller built it) and its backup and
    log settings: ``{rows, problems, table}``."""
    inv = cluster_model.inventory(inventory, hostvars)
    return model_proof(model or inv.model, operations_values(inv))


def model_proof(model, operations):
    """scheduling.prove of every workload against the model's nodes, the pools' quotas and verify's own,
    and the API server's limitedResources: ``{rows, problems, table}``."""
    plan = _verify_plan(model)
    quotas = pool_quotas(model) + verify_quotas(model, plan)
    result = scheduling.prove(workloads(model, operations, plan), model["nodes"], quotas, admission_limits(model))
    result["table"] = scheduling.table(result)
    return result


def idle_pools(model):
    """The sound GPU pools that no application would run on (issue 43): ``[(pool, resource)]`` of each pool
    whose resource no vLLM model and no JupyterHub profile asks for on the pool's nodes, within the pools'
    quotas, the verify Jobs left out (they exercise every pool by design). A pool like that holds GPUs that
    nothing the inventory describes uses; preflight warns about it."""
    if not model["pools"]:
        return []
    gpu = model.get("gpu_tolerations")
    apps = [workload for workload in llm_workloads(model, gpu) + jupyterhub_workloads(model, gpu)
            if not workload.get("daemon_set")]
    quotas, limits = pool_quotas(model), admission_limits(model)
    rows = scheduling.prove(apps, model["nodes"], quotas, limits)["rows"]
    pool_of = dict((node["name"], node.get("pool") or "") for node in model["nodes"])
    resource = dict((pool["name"], gpu_pools.pool_resource(pool)) for pool in model["pools"])
    served = set()
    for workload, row in zip(apps, rows):
        requests = scheduling.pod_requests(workload["pod"])
        if scheduling.uncovered(requests, workload.get("namespace") or "default", quotas, limits):
            continue  # the API server would not admit it (limitedResources without a quota of its namespace)
        for node in row["nodes"]:
            pool = pool_of.get(node)
            if pool and requests.get(resource[pool], 0) > 0:
                served.add(pool)
    return [(pool, resource[pool["name"]]) for pool in model["pools"] if pool["name"] not in served]
