# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every workload the collection would create for an inventory, as pod specs, for the scheduling
proof (module_utils/scheduling.py): the vLLM models' Deployments, every JupyterHub profile's pod as
KubeSpawner builds it, the verify Jobs, the CUDA smoke pod; and the ResourceQuotas of the GPU pools.
Each builder is the one the roles render with, so the proof judges what is deployed."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.cps.gpu_cluster.plugins.module_utils import cluster_model, components, gpu_pools, jupyterhub, k3s_hardening
from ansible_collections.cps.gpu_cluster.plugins.module_utils import scheduling, verify, vllm

VERIFY_NAMESPACE = "gpu-cluster-verify"
# Verify's default images: the proof needs a name, not the pin.
_VERIFY_IMAGES = dict((k, "verify/%s" % k) for k in ("cuda", "vectoradd", "pytorch", "busybox", "tensorflow"))


def _value(groups, hostvars, name, default=None):
    value = cluster_model._first_value(groups, hostvars, name)
    return default if value is None else value


def _flag(value):
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"))


def llm_workloads(groups, hostvars):
    """The pods of ``gpu_cluster_llm_models`` (engine ``deployment``: the Deployment's template;
    ``operator``: the pod the production-stack operator makes of a VLLMRuntime)."""
    models = _value(groups, hostvars, "gpu_cluster_llm_models")
    if not isinstance(models, list) or not models:
        return []
    pools = _value(groups, hostvars, "gpu_cluster_gpu_pools", [])
    namespace = _value(groups, hostvars, "gpu_cluster_llm_namespace", vllm.DEFAULT_NAMESPACE)
    try:
        specs = [vllm.vllm_spec(entry, pools if isinstance(pools, list) else [], "deployment",
                                vllm.DEFAULT_INGRESS_CLASS, namespace) for entry in models]
    except (ValueError, TypeError, KeyError):
        return []  # preflight's llm checks say what is wrong with the entries
    result = []
    for spec in specs:
        deployment = vllm.vllm_deployment(spec)
        result.append({"name": "vLLM model %s (Deployment %s/%s)" % (spec["model"], spec["namespace"], spec["name"]),
                       "namespace": spec["namespace"], "pod": deployment["spec"]["template"]["spec"],
                       "replicas": deployment["spec"]["replicas"]})
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
           "tolerations": copy.deepcopy(override.get("tolerations") or jupyterhub.CHART_USER_TOLERATIONS)}
    if override.get("node_selector"):
        pod["nodeSelector"] = dict(override["node_selector"])
    return pod


def jupyterhub_workloads(groups, hostvars):
    """One pod per JupyterHub profile the hub would offer (when JupyterHub is enabled)."""
    if not _flag(_value(groups, hostvars, "gpu_cluster_jupyterhub_enabled", False)):
        return []
    pools = _value(groups, hostvars, "gpu_cluster_gpu_pools", [])
    pools = pools if isinstance(pools, list) else []
    namespace = _value(groups, hostvars, "gpu_cluster_jupyterhub_namespace", "jupyterhub")
    resolved = jupyterhub.resolve_profiles(_value(groups, hostvars, "gpu_cluster_jupyterhub_profiles"),
                                           jupyterhub.inventory_workers(groups, hostvars), pools, False, namespace)
    result = []
    for entry in resolved["profiles"]:
        try:
            spec = jupyterhub.profile_spec(entry, pools, images={"cpu": "cpu", "pytorch": "pytorch", "tensorflow": "tensorflow"})
        except (ValueError, TypeError, KeyError):
            continue
        result.append({"name": "JupyterHub profile %s" % entry["name"], "namespace": namespace,
                       "pod": profile_pod(spec), "alone": True})
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


def _verify_plan(groups, hostvars, model):
    """(Jobs, namespace) as verify.yml plans them for the inventory (its default options)."""
    options = {}
    for key, name in (("smoke_tests", "gpu_cluster_verify_smoke_tests"), ("gpu_probe", "gpu_cluster_verify_gpu_probe"),
                      ("tensorflow", "gpu_cluster_verify_tensorflow"), ("network", "gpu_cluster_verify_network")):
        value = _value(groups, hostvars, name)
        if value is not None:
            options[key] = _flag(value)
    namespace = _value(groups, hostvars, "gpu_cluster_verify_namespace", VERIFY_NAMESPACE)
    nodes = [node["name"] for node in model["nodes"]]
    # the pod-network check's pods (one per node, alike but for the node) are judged as one workload
    # on every node: linear in node shapes, not in nodes
    return verify.plan_jobs(verify_workers(model), nodes[:2], _VERIFY_IMAGES, options), namespace


def verify_workloads(groups, hostvars, model, plan=None):
    """The verify Jobs' pods, as verify.yml plans them for the inventory (its default options)."""
    jobs, namespace = plan or _verify_plan(groups, hostvars, model)
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
        result.append({"name": "verify Job %s" % job["name"], "namespace": namespace, "pod": pod})
    return result


def verify_quotas(model, plan):
    """The verify namespace's own quota for the reserved pools' resources (verify.grant_quota)."""
    jobs, namespace = plan
    quota = verify.grant_quota(jobs, namespace, model.get("limited"))
    return [quota] if quota else []


def smoke_workloads(model):
    """The CUDA smoke pod of the render tier (components.cuda_smoke_pod), when there are GPU nodes."""
    if not cluster_model.gpu_nodes(model):
        return []
    pod = components.cuda_smoke_pod()
    return [{"name": "CUDA smoke pod", "namespace": pod["metadata"]["namespace"], "pod": pod["spec"]}]


def pool_quotas(groups, hostvars):
    """The ResourceQuotas the GPU pools render (gpu_pools.resource_quotas), [] without sound pools."""
    pools = cluster_model.cluster_pools(groups, hostvars)
    if not pools:
        return []
    workers = gpu_pools.workers_view(dict((h, (hostvars or {}).get(h) or {}) for h in (groups or {}).get("gpu_workers") or []))
    return gpu_pools.resource_quotas(pools, workers)


def workloads(groups, hostvars, model=None, plan=None):
    """Every workload, in deploy order (storage and GPU stack first, then apps, then verify)."""
    model = model or cluster_model.build(groups, hostvars)
    return (smoke_workloads(model) + llm_workloads(groups, hostvars) + jupyterhub_workloads(groups, hostvars)
            + verify_workloads(groups, hostvars, model, plan))


def admission_limits(model):
    """The ResourceQuota plugin's ``limitedResources`` the servers get (k3s_hardening), for the proof."""
    if not model.get("limited"):
        return []
    return k3s_hardening.resource_quota_plugin(model["limited"])["configuration"]["limitedResources"]


def proof(groups, hostvars, model=None):
    """The scheduling proof of an inventory: ``{rows, problems, table}`` (scheduling.prove of every
    workload against the model's nodes, the pools' quotas and verify's own, and the API server's
    limitedResources); ``model``: the inventory's cluster model when already built."""
    model = model or cluster_model.build(groups, hostvars)
    plan = _verify_plan(groups, hostvars, model)
    quotas = pool_quotas(groups, hostvars) + verify_quotas(model, plan)
    result = scheduling.prove(workloads(groups, hostvars, model, plan), model["nodes"], quotas, admission_limits(model))
    result["table"] = scheduling.table(result)
    return result


def schedule_problems(groups, hostvars):
    """Preflight: the workloads that fit no node, one message each (scheduling.prove)."""
    return proof(groups, hostvars)["problems"]
