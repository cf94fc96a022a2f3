# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic for LLM inference with vLLM: a four-field spec in, everything else derived.

An inventory entry of ``gpu_cluster_llm_models``::

    name: qwen                              # DNS-1123 label: bundle, Deployment, Service
    model: Qwen/Qwen2.5-1.5B-Instruct       # Hugging Face model id
    gpu: 1                                  # 1, 2, 4 or 8, on one node
    ingress_host: qwen.127.0.0.1.nip.io     # optional: an Ingress for this host

and optionally ``namespace``, ``pool``, ``task``, ``hf_token_secret``, ``extra_args``, ``image``,
``cache`` and ``replicas``.  :func:`vllm_spec` derives the full spec (resources, arguments,
environment, probes, scheduling) from the tables below, the only place those numbers live
(documented in docs/llm.md).  :func:`vllm_component` turns a spec into a component for
``component_delivery`` (direct or Fleet); :func:`llm_problems` is the preflight check.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import re

from ansible_collections.cps.gpu_cluster.plugins.module_utils import node_vars
from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_pools import pool_resource
import time

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_NAME = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\Z")
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?\Z")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?\Z")

# The pinned vLLM OpenAI-compatible server image (the Deployment engine).
VLLM_IMAGE = "docker.io/vllm/vllm-openai:v0.33.0"
# The image the production-stack operator needs: its controller runs /opt/venv/bin/vllm,
# which the LMCache build of vLLM has and vllm/vllm-openai does not.
OPERATOR_IMAGE = "docker.io/lmcache/vllm-openai:2025-05-27-v1"
# vllm/vllm-openai ships a "vllm" user (uid/gid 2000, HOME /home/vllm) for non-root runs;
# an arbitrary uid breaks torch (getpass.getuser() needs a passwd entry).
VLLM_UID = 2000

ENGINES = ("deployment", "operator")
TASKS = ("generate", "embed")
ALLOWED_GPUS = (1, 2, 4, 8)
PORT = 8000
SERVICE_PORT = 80
DEFAULT_NAMESPACE = "llm"
DEFAULT_INGRESS_CLASS = "traefik"
DEFAULT_CACHE_SIZE = "50Gi"
DEFAULT_CACHE_CLASS = "nfs-client"
HF_TOKEN_SECRET = "hf-token"        # convention Secret, key "token", in the model's namespace
HF_TOKEN_KEY = "token"
CACHE_MOUNT = "/cache"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_NODE_SELECTOR = {"gpu": "true"}
POOL_LABEL = "gpu-cluster.cps/gpu-pool"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
VLLMRUNTIME_API = "production-stack.vllm.ai/v1alpha1"

# ---------------------------------------------------------------------------------------------
# THE derivation table: one row per allowed GPU count.
#   cpu, memory: requests = limits (Guaranteed QoS); embedding models use memory_embed
#   shm: size of the memory-backed /dev/shm (NCCL and the workers' shared memory)
#   startup: seconds the startup probe allows for download + load + compile (a 1T model: long)
GPU_TABLE = {
    1: {"cpu": "2", "memory": "8Gi", "memory_embed": "4Gi", "shm": "2Gi", "startup": 900},
    2: {"cpu": "4", "memory": "16Gi", "memory_embed": "8Gi", "shm": "4Gi", "startup": 1800},
    4: {"cpu": "8", "memory": "32Gi", "memory_embed": "16Gi", "shm": "8Gi", "startup": 3600},
    8: {"cpu": "16", "memory": "64Gi", "memory_embed": "32Gi", "shm": "16Gi", "startup": 7200},
}
GPU_MEMORY_UTILIZATION = 0.9
DTYPE = "auto"
PROBE_PERIOD = 10

# Model-specific knowledge, one table: task, gated (needs the HF token), extra vLLM arguments.
KIMI_ARGS = ["--trust-remote-code", "--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2",
             "--enable-auto-tool-choice", "--mm-encoder-tp-mode", "data"]
MODEL_TABLE = {
    "moonshotai/Kimi-K2.5": {"task": "generate", "gated": True, "args": KIMI_ARGS,
                             "tool_call_parser": "kimi_k2"},
    "BAAI/bge-base-en-v1.5": {"task": "embed"},
    "BAAI/bge-large-en-v1.5": {"task": "embed"},
    "BAAI/bge-m3": {"task": "embed"},
    "intfloat/e5-mistral-7b-instruct": {"task": "embed"},
    "nomic-ai/nomic-embed-text-v1.5": {"task": "embed", "args": ["--trust-remote-code"]},
    "sentence-transformers/all-MiniLM-L6-v2": {"task": "embed"},
}
# Arguments per task: embedding models run vLLM's pooling runner.
TASK_ARGS = {"generate": [], "embed": ["--runner", "pooling"]}

KNOWN_KEYS = ("name", "model", "gpu", "ingress_host", "namespace", "pool", "task", "hf_token_secret",
              "extra_args", "image", "cache", "replicas")


def _label(entry):
    name = entry.get("name") if isinstance(entry, dict) else None
    return "model %s" % name if isinstance(name, str) and name else "a model entry"


def model_info(model):
    """The MODEL_TABLE row of a model id (case-insensitive), or ``{}``."""
    for known, info in MODEL_TABLE.items():
        if isinstance(model, str) and known.lower() == model.lower():
            return info
    return {}


def _image_pinned(image):
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] not in ("", "latest", "nightly", "latest-nightly")


def validate_model(entry, pools=None):
    """Every problem of one ``gpu_cluster_llm_models`` entry, one message each (empty: usable).

    ``pools``: the inventory's ``gpu_cluster_gpu_pools`` (names a ``pool`` may refer to), or None
    to skip that check.
    """
    if not isinstance(entry, dict):
        return ["gpu_cluster_llm_models: each entry must be a mapping with name, model and gpu, got %r" % (entry,)]
    where = "gpu_cluster_llm_models: %s" % _label(entry)
    problems = []
    unknown = sorted(set(entry) - set(KNOWN_KEYS))
    if unknown:
        problems.append("%s: unknown key(s) %s; known keys are %s" % (where, ", ".join(map(str, unknown)), ", ".join(KNOWN_KEYS)))
    name = entry.get("name")
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        problems.append("%s: name %r must be a DNS-1123 label (lower-case letters, digits and '-', "
                        "starting and ending with a letter or digit, at most 63 characters), like qwen"
                        % (where, name))
    model = entry.get("model")
    if not isinstance(model, str) or not MODEL_ID.match(model):
        problems.append("%s: model %r must be a Hugging Face model id like Qwen/Qwen2.5-1.5B-Instruct" % (where, model))
    gpu = entry.get("gpu")
    if not node_vars.is_int(gpu) or gpu not in ALLOWED_GPUS:
        problems.append("%s: gpu is %r; use 1, 2, 4 or 8 (tensor parallelism splits a model over a power "
                        "of two GPUs on one node)" % (where, gpu))
    host = entry.get("ingress_host")
    if host is not None and (not isinstance(host, str) or not DNS_NAME.match(host)):
        problems.append("%s: ingress_host %r must be a valid DNS name (lower-case labels separated by dots), "
                        "like qwen.127.0.0.1.nip.io" % (where, host))
    namespace = entry.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not DNS_LABEL.match(namespace)):
        problems.append("%s: namespace %r must be a DNS-1123 label, like llm" % (where, namespace))
    task = entry.get("task")
    if task is not None and task not in TASKS:
        problems.append("%s: task %r must be generate or embed" % (where, task))
    secret = entry.get("hf_token_secret")
    if secret is not None and (not isinstance(secret, str) or not DNS_NAME.match(secret)):
        problems.append("%s: hf_token_secret %r must name a Secret (a DNS-1123 name) holding the token under key %s"
                        % (where, secret, HF_TOKEN_KEY))
    extra = entry.get("extra_args")
    if extra is not None and (not isinstance(extra, list) or not all(isinstance(a, str) for a in extra)):
        problems.append("%s: extra_args %r must be a list of strings, like ['--max-model-len', '8192']" % (where, extra))
    image = entry.get("image")
    if image is not None and (not isinstance(image, str) or not image or any(c.isspace() for c in image)
                              or not _image_pinned(image)):
        problems.append("%s: image %r must be pinned by tag or digest (not latest), like %s" % (where, image, VLLM_IMAGE))
    cache = entry.get("cache")
    if cache is not None and not isinstance(cache, bool):
        if isinstance(cache, str):
            if not QUANTITY.match(cache):
                problems.append("%s: cache %r must be true, false, a size like 100Gi or {size, storage_class}" % (where, cache))
        elif isinstance(cache, dict):
            if set(cache) - {"size", "storage_class"}:
                problems.append("%s: cache may only have size and storage_class, got %s" % (where, ", ".join(sorted(map(str, cache)))))
            if "size" in cache and (not isinstance(cache["size"], str) or not QUANTITY.match(cache["size"])):
                problems.append("%s: cache.size %r must be a quantity like 100Gi" % (where, cache["size"]))
            if "storage_class" in cache and (not isinstance(cache["storage_class"], str) or not DNS_NAME.match(cache["storage_class"])):
                problems.append("%s: cache.storage_class %r must name a StorageClass" % (where, cache["storage_class"]))
        else:
            problems.append("%s: cache %r must be true, false, a size like 100Gi or {size, storage_class}" % (where, cache))
    replicas = entry.get("replicas")
    if replicas is not None and (not node_vars.is_int(replicas) or replicas < 1):
        problems.append("%s: replicas %r must be a positive integer" % (where, replicas))
    pool = entry.get("pool")
    if pool is not None:
        if not isinstance(pool, str) or not DNS_LABEL.match(pool):
            problems.append("%s: pool %r must name a GPU pool of gpu_cluster_gpu_pools" % (where, pool))
        elif pools is not None and _find_pool(pools, pool) is None:
            known = ", ".join(sorted(p.get("name") for p in _pool_list(pools) if isinstance(p.get("name"), str))) or "none declared"
            problems.append("%s: pool %r is not declared in gpu_cluster_gpu_pools (%s)" % (where, pool, known))
        elif pools is not None and _find_pool(pools, pool).get("allocation") in ("timeslice", "mig") and node_vars.as_int(gpu) > 1:
            problems.append("%s: gpu is %d but pool %s hands out %s (one unit is a time-slice or a MIG instance, and a "
                            "container gets at most one: the device plugin refuses more with failRequestsGreaterThanOne); "
                            "use gpu: 1, or an exclusive pool for tensor parallelism"
                            % (where, gpu, pool, _find_pool(pools, pool).get("allocation")))
    return problems


def _pool_list(pools):
    return [p for p in (pools or []) if isinstance(p, dict)]


def _find_pool(pools, name):
    for pool in _pool_list(pools):
        if pool.get("name") == name:
            return pool
    return None


def _cache(entry):
    cache = entry.get("cache")
    if not cache:
        return None
    size, storage_class = DEFAULT_CACHE_SIZE, DEFAULT_CACHE_CLASS
    if isinstance(cache, str):
        size = cache
    elif isinstance(cache, dict):
        size = cache.get("size", size)
        storage_class = cache.get("storage_class", storage_class)
    return {"claim": "%s-hf-cache" % entry["name"], "size": size, "storage_class": storage_class}


def _probe(path, period, failures, timeout):
    return {"httpGet": {"path": path, "port": "http"}, "periodSeconds": period,
            "failureThreshold": failures, "timeoutSeconds": timeout}


def vllm_spec(entry, pools=None, engine="deployment", ingress_class=DEFAULT_INGRESS_CLASS,
              namespace=DEFAULT_NAMESPACE):
    """The full, derived spec of one model entry; raises ValueError naming every problem.

    ``engine``: ``deployment`` (our Deployment, :data:`VLLM_IMAGE`) or ``operator`` (a
    ``VLLMRuntime`` for the production-stack operator, :data:`OPERATOR_IMAGE`).
    ``namespace``: the default for entries that name none.
    """
    problems = validate_model(entry, pools)
    if engine not in ENGINES:
        problems.append("gpu_cluster_llm_engine is %r; use deployment or operator" % (engine,))
    if problems:
        raise ValueError("; ".join(problems))
    gpu = entry["gpu"]
    row = GPU_TABLE[gpu]
    info = model_info(entry["model"])
    task = entry.get("task") or info.get("task", "generate")
    token = entry.get("hf_token_secret") or (HF_TOKEN_SECRET if info.get("gated") else None)
    args = ["--host", "0.0.0.0", "--port", str(PORT), "--dtype", DTYPE,
            "--gpu-memory-utilization", str(GPU_MEMORY_UTILIZATION)]
    if gpu > 1:
        args += ["--tensor-parallel-size", str(gpu)]
    model_args = list(TASK_ARGS[task]) + list(info.get("args", [])) + list(entry.get("extra_args") or [])
    env = [{"name": "HF_HOME", "value": CACHE_MOUNT + "/huggingface"},
           {"name": "VLLM_NO_USAGE_STATS", "value": "1"}]
    if gpu > 1:
        env.append({"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"})
    pool = _find_pool(pools, entry["pool"]) if entry.get("pool") else None
    if pool is not None:
        node_selector = dict(pool.get("node_selector") or {POOL_LABEL: pool["name"]})
        gpu_resource = pool_resource(pool)
    else:
        node_selector = dict(GPU_NODE_SELECTOR)
        gpu_resource = GPU_RESOURCE
    spec = {
        "name": entry["name"],
        "namespace": entry.get("namespace") or namespace,
        "model": entry["model"],
        "task": task,
        "gpu": gpu,
        "gpu_resource": gpu_resource,
        "gpu_memory_utilization": GPU_MEMORY_UTILIZATION,
        "dtype": DTYPE,
        "cpu": row["cpu"],
        "memory": row["memory_embed"] if task == "embed" else row["memory"],
        "shm_size": row["shm"],
        "startup_seconds": row["startup"],
        "port": PORT,
        "service_port": SERVICE_PORT,
        "engine": engine,
        "image": entry.get("image") or (OPERATOR_IMAGE if engine == "operator" else VLLM_IMAGE),
        "args": args,
        "model_args": model_args,
        "env": env,
        "hf_token_secret": token,
        "cache": _cache(entry),
        "replicas": entry.get("replicas", 1),
        "ingress_host": entry.get("ingress_host"),
        "ingress_class": ingress_class,
        "pool": entry.get("pool"),
        "node_selector": node_selector,
        "tolerations": [copy.deepcopy(GPU_TOLERATION)],
        "tool_call_parser": info.get("tool_call_parser"),
        "probes": {
            "startup": _probe("/health", PROBE_PERIOD, row["startup"] // PROBE_PERIOD, 5),
            "readiness": _probe("/health", PROBE_PERIOD, 3, 5),
            "liveness": _probe("/health", 30, 5, 10),
        },
    }
    if gpu > 1:
        spec["tensor_parallel_size"] = gpu
    return spec


def _labels(spec):
    return {"app.kubernetes.io/name": spec["name"], "app.kubernetes.io/component": "llm",
            "app.kubernetes.io/part-of": "gpu-cluster"}


def _annotations(spec):
    return {"gpu-cluster.cps/model": spec["model"], "gpu-cluster.cps/task": spec["task"]}


def _meta(spec, name=None):
    return {"name": name or spec["name"], "namespace": spec["namespace"], "labels": _labels(spec),
            "annotations": _annotations(spec)}


def namespace_labels(engine):
    """Pod Security labels of an LLM namespace: our Deployment passes ``restricted``; the
    operator's pods (no securityContext in its CRD, root in its image) need ``baseline``."""
    enforce = "restricted" if engine == "deployment" else "baseline"
    return {"pod-security.kubernetes.io/enforce": enforce,
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted"}


def vllm_deployment(spec):
    """The Deployment of the vLLM OpenAI-compatible server for a spec."""
    env = copy.deepcopy(spec["env"])
    if spec["hf_token_secret"]:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": spec["hf_token_secret"], "key": HF_TOKEN_KEY}}})
    cache = spec["cache"]
    volumes = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": spec["shm_size"]}},
        {"name": "hf-cache", "persistentVolumeClaim": {"claimName": cache["claim"]}} if cache
        else {"name": "hf-cache", "emptyDir": {}},
    ]
    resources = {"cpu": spec["cpu"], "memory": spec["memory"], spec["gpu_resource"]: str(spec["gpu"])}
    probes = spec["probes"]
    container = {
        "name": "vllm",
        "image": spec["image"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm", "serve"],
        "args": [spec["model"]] + spec["args"] + spec["model_args"],
        "env": env,
        "ports": [{"name": "http", "containerPort": spec["port"], "protocol": "TCP"}],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "startupProbe": copy.deepcopy(probes["startup"]),
        "readinessProbe": copy.deepcopy(probes["readiness"]),
        "livenessProbe": copy.deepcopy(probes["liveness"]),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                         {"name": "hf-cache", "mountPath": CACHE_MOUNT}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True},
    }
    selector = {"app.kubernetes.io/name": spec["name"], "app.kubernetes.io/component": "llm"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(spec),
        "spec": {
            "replicas": spec["replicas"],
            # GPUs are scarce: the old pod goes before the new one asks for its GPUs.
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 3,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": _labels(spec), "annotations": _annotations(spec)},
                "spec": {
                    "runtimeClassName": "nvidia",
                    "nodeSelector": dict(spec["node_selector"]),
                    "tolerations": copy.deepcopy(spec["tolerations"]),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 60,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": VLLM_UID, "runAsGroup": VLLM_UID,
                                        "fsGroup": VLLM_UID, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def vllm_service(spec):
    """ClusterIP Service ``<name>`` port 80 (``http``) -> the server's 8000, as the operator names it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec),
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/name": spec["name"], "app.kubernetes.io/component": "llm"},
            "ports": [{"name": "http", "port": spec["service_port"], "targetPort": "http", "protocol": "TCP"}],
        },
    }


def vllm_ingress(spec):
    """Ingress for ``ingress_host`` to the Service (None when no host is set)."""
    if not spec["ingress_host"]:
        return None
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _meta(spec),
        "spec": {
            "ingressClassName": spec["ingress_class"],
            "rules": [{"host": spec["ingress_host"], "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": spec["name"], "port": {"name": "http"}}}}]}}],
        },
    }


def vllm_cache_pvc(spec):
    """The Hugging Face cache PVC (None without ``cache``)."""
    cache = spec["cache"]
    if not cache:
        return None
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(spec, cache["claim"]),
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": cache["storage_class"],
                 "resources": {"requests": {"storage": cache["size"]}}},
    }


def _split_image(image):
    """``docker.io/lmcache/vllm-openai:tag`` -> (``docker.io``, ``lmcache/vllm-openai:tag``)."""
    first, _sep, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return "docker.io", image


def vllm_runtime(spec):
    """A ``VLLMRuntime`` of the vLLM production-stack operator for a spec (engine ``operator``).

    The operator creates the Deployment and the Service ``<name>`` (port 80 -> 8000) itself.
    """
    registry, name = _split_image(spec["image"])
    model = {"modelURL": spec["model"], "dtype": spec["dtype"]}
    if spec["hf_token_secret"]:
        model["hfTokenSecret"] = {"hfTokenSecretName": spec["hf_token_secret"], "hfTokenKeyName": HF_TOKEN_KEY}
    extra = list(spec["model_args"])
    vllm_config = {"port": spec["port"], "gpuMemoryUtilization": str(spec["gpu_memory_utilization"]),
                   "env": copy.deepcopy(spec["env"])}
    if spec.get("tensor_parallel_size"):
        vllm_config["tensorParallelSize"] = spec["tensor_parallel_size"]
    if extra:
        vllm_config["extraArgs"] = extra
    deployment = {
        "image": {"registry": registry, "name": name, "pullPolicy": "IfNotPresent"},
        "resources": {"cpu": spec["cpu"], "memory": spec["memory"], "gpu": str(spec["gpu"]),
                      "gpuType": spec["gpu_resource"]},
        "replicas": spec["replicas"],
        "deploymentStrategy": "Recreate",
        "runtimeClass": "nvidia",
        "shmSize": spec["shm_size"],
        "toleration": copy.deepcopy(spec["tolerations"]),
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": [str(value)]}
            for key, value in sorted(spec["node_selector"].items())]}],
    }
    body = {"model": model, "vllmConfig": vllm_config, "deploymentConfig": deployment}
    cache = spec["cache"]
    if cache:
        body["storageConfig"] = {"enabled": True, "storageClassName": cache["storage_class"], "size": cache["size"],
                                 "accessMode": "ReadWriteMany", "mountPath": CACHE_MOUNT}
    return {"apiVersion": VLLMRUNTIME_API, "kind": "VLLMRuntime", "metadata": _meta(spec), "spec": body}


def vllm_manifests(spec):
    """Every object of one model, in apply order."""
    if spec["engine"] == "operator":
        objects = [vllm_runtime(spec), vllm_ingress(spec)]
    else:
        objects = [vllm_cache_pvc(spec), vllm_deployment(spec), vllm_service(spec), vllm_ingress(spec)]
    return [o for o in objects if o is not None]


NAMESPACE_BUNDLE_LABEL = "gpu-cluster.cps/namespace"


def namespace_component(namespace, engine):
    """The component ``namespace-<ns>`` holding only the labelled Namespace of LLM models."""
    return {"name": "namespace-%s" % namespace, "namespace": namespace,
            "namespace_labels": namespace_labels(engine),
            "fleet_labels": {NAMESPACE_BUNDLE_LABEL: namespace}}


def vllm_components(models, pools=None, engine="deployment", ingress_class=DEFAULT_INGRESS_CLASS,
                    namespace=DEFAULT_NAMESPACE):
    """The components to deliver, in order: per namespace, ``namespace-<ns>`` (its labelled
    Namespace); then one component per model (bundle ``<name>``).

    In Fleet, every model bundle depends on its namespace bundle (``dependsOn`` by label), so
    no two bundles own the Namespace and none deploys before it exists.  Raises ValueError
    naming every problem of every entry.
    """
    if models is None:
        models = []
    if not isinstance(models, list):
        raise ValueError("gpu_cluster_llm_models must be a list of models, got %s" % type(models).__name__)
    problems = []
    for entry in models:
        problems.extend(validate_model(entry, pools))
    problems.extend(_duplicate_names(models))
    if problems:
        raise ValueError("; ".join(problems))
    specs = [vllm_spec(entry, pools, engine, ingress_class, namespace) for entry in models]
    namespaces = []
    for spec in specs:
        if spec["namespace"] not in namespaces:
            namespaces.append(spec["namespace"])
    components = [namespace_component(ns, engine) for ns in namespaces]
    clash = sorted({c["name"] for c in components} & {spec["name"] for spec in specs})
    if clash:
        raise ValueError("gpu_cluster_llm_models: name %s is the bundle of a namespace; rename the model"
                         % ", ".join(clash))
    for spec in specs:
        components.append({
            "name": spec["name"], "namespace": spec["namespace"], "manifests": vllm_manifests(spec),
            "fleet_depends_on": [{"selector": {"matchLabels": {NAMESPACE_BUNDLE_LABEL: spec["namespace"]}}}],
        })
    return components


def _duplicate_names(models):
    seen, problems = set(), []
    for entry in models:
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str):
            if name in seen:
                problems.append("gpu_cluster_llm_models: name %s is used twice; each model needs its own name "
                                "(it names its bundle, Deployment and Service)" % name)
            seen.add(name)
    return problems


def _workers(groups, hostvars, pool):
    """{host: gpu count} of the nodes a model may run on (the pool's, or every GPU worker)."""
    workers = list(groups.get("gpu_workers") or [])
    if pool is not None and pool.get("nodes"):
        workers = [h for h in pool["nodes"] if h in (hostvars or {})]
    counts = {}
    for host in workers:
        counts[host] = node_vars.gpu_count(hostvars.get(host))
    return counts


def _inventory_value(groups, hostvars, name):
    for host in list(groups.get("all") or []) + sorted(hostvars or {}):
        variables = (hostvars or {}).get(host) or {}
        if name in variables:
            return variables[name]
    return None


def _setting_problems(groups, hostvars):
    problems = []
    engine = _inventory_value(groups, hostvars, "gpu_cluster_llm_engine")
    if engine is not None and engine not in ENGINES:
        problems.append("gpu_cluster_llm_engine is %r; use deployment (a Deployment with the pinned vLLM image) "
                        "or operator (a VLLMRuntime for the production-stack operator)" % (engine,))
    ingress_class = _inventory_value(groups, hostvars, "gpu_cluster_llm_ingress_class")
    if ingress_class is not None and (not isinstance(ingress_class, str) or not DNS_NAME.match(ingress_class)):
        problems.append("gpu_cluster_llm_ingress_class is %r; name an IngressClass, like traefik" % (ingress_class,))
    namespace = _inventory_value(groups, hostvars, "gpu_cluster_llm_namespace")
    if namespace is not None and (not isinstance(namespace, str) or not DNS_LABEL.match(namespace)):
        problems.append("gpu_cluster_llm_namespace is %r; use a DNS-1123 label, like llm" % (namespace,))
    return problems


def llm_problems(groups, hostvars):
    """Preflight: every problem of ``gpu_cluster_llm_models`` against the inventory's GPU workers.

    Each entry is validated (:func:`validate_model`), names are unique, and each model's GPUs
    must fit on one node of its pool (or of ``gpu_workers``): the message names the largest worker.
    """
    models = _inventory_value(groups, hostvars, "gpu_cluster_llm_models")
    if models is None:
        return []
    if not isinstance(models, list):
        return ["gpu_cluster_llm_models is %r; use a list of models, each with name, model and gpu (docs/llm.md)" % (models,)]
    pools = _inventory_value(groups, hostvars, "gpu_cluster_gpu_pools")
    pools = pools if isinstance(pools, list) else []
    problems = _setting_problems(groups, hostvars)
    for entry in models:
        entry_problems = validate_model(entry, pools)
        problems.extend(entry_problems)
        if entry_problems:
            continue
        pool = _find_pool(pools, entry["pool"]) if entry.get("pool") else None
        namespace = entry.get("namespace") or _inventory_value(groups, hostvars, "gpu_cluster_llm_namespace") or DEFAULT_NAMESPACE
        reserved = (pool or {}).get("namespaces")
        if isinstance(reserved, list) and reserved and namespace not in reserved:
            problems.append("gpu_cluster_llm_models: %s: pool %s is reserved for namespace(s) %s, not %s; serve the "
                            "model from one of them or add %s to the pool's namespaces"
                            % (_label(entry), pool["name"], ", ".join(str(n) for n in reserved), namespace, namespace))
        counts = _workers(groups, hostvars, pool)
        target = ("GPU pool %s" % pool["name"]) if pool is not None else "gpu_workers"
        if not counts:
            problems.append("gpu_cluster_llm_models: %s asks for %d GPU(s) but %s has no nodes; add a GPU worker "
                            "or remove the model" % (_label(entry), entry["gpu"], target))
            continue
        largest = max(sorted(counts), key=lambda host: counts[host])
        if entry["gpu"] > counts[largest]:
            problems.append(
                "gpu_cluster_llm_models: %s (%s) asks for %d GPUs on one node, but the largest worker of %s is %s "
                "with %d GPU(s); lower gpu to at most %d (a smaller or quantised model) or add a worker with %d GPUs"
                % (_label(entry), entry["model"], entry["gpu"], target, largest, counts[largest],
                   max([g for g in ALLOWED_GPUS if g <= counts[largest]] or [0]), entry["gpu"]))
    problems.extend(_duplicate_names(models))
    problems.extend(_placement_problems(groups, hostvars, models))
    return problems


# Namespaces a model may not be served from: Kubernetes' own and Rancher's (kube-*, cattle-*), and
# those of the collection's other components (their pod security, quotas and NetworkPolicies are
# theirs).
OWNED_NAMESPACES = {"gpu-operator": "the GPU Operator", "monitoring": "monitoring", "cert-manager": "cert-manager",
                    "nfs-provisioner": "the NFS provisioner", "fast-scratch": "the fast-scratch provisioner"}


def _owner_of(namespace, groups, hostvars):
    """Who owns ``namespace`` other than the models (None when a model may use it)."""
    if namespace.startswith("kube-"):
        return "Kubernetes itself"
    if namespace.startswith("cattle-"):
        return "Rancher and Fleet"
    if namespace in OWNED_NAMESPACES:
        return OWNED_NAMESPACES[namespace]
    if namespace == (_inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_namespace") or "jupyterhub"):
        return "JupyterHub (gpu_cluster_jupyterhub_namespace)"
    if namespace == (_inventory_value(groups, hostvars, "gpu_cluster_verify_namespace") or "gpu-cluster-verify"):
        return "verify (gpu_cluster_verify_namespace)"
    return None


def _placement_problems(groups, hostvars, models):
    """Models in a namespace another component owns, or on an Ingress host another component (or
    model) already serves."""
    problems = []
    default = _inventory_value(groups, hostvars, "gpu_cluster_llm_namespace") or DEFAULT_NAMESPACE
    hosts = {}
    for variable, what in (("gpu_cluster_jupyterhub_host", "JupyterHub (gpu_cluster_jupyterhub_host)"),
                           ("gpu_cluster_rancher_hostname", "Rancher (gpu_cluster_rancher_hostname)")):
        value = _inventory_value(groups, hostvars, variable)
        if isinstance(value, str) and value:
            hosts[value.lower()] = what
    for entry in models:
        if not isinstance(entry, dict):
            continue
        namespace = entry.get("namespace") or default
        owner = _owner_of(namespace, groups, hostvars) if isinstance(namespace, str) else None
        if owner:
            problems.append("gpu_cluster_llm_models: %s is served from namespace %s, which belongs to %s; use a "
                            "namespace of its own (like llm)" % (_label(entry), namespace, owner))
        host = entry.get("ingress_host")
        if isinstance(host, str) and host:
            if host.lower() in hosts:
                problems.append("gpu_cluster_llm_models: %s has ingress_host %s, which %s already serves; give the "
                                "model a host of its own (like %s.<your domain>)" % (_label(entry), host, hosts[host.lower()],
                                                                                     entry.get("name") or "qwen"))
            else:
                hosts[host.lower()] = "%s (ingress_host)" % _label(entry)
    return problems


# --------------------------------------------------------------------------------- verify
def endpoint_checks(spec):
    """The requests that prove a model answers: GET /v1/models, then one chat or embeddings call."""
    checks = [{"check": "models", "method": "GET", "path": "/v1/models", "body": None}]
    if spec["task"] == "embed":
        checks.append({"check": "embeddings", "method": "POST", "path": "/v1/embeddings",
                       "body": {"model": spec["model"], "input": "cps.gpu_cluster verify"}})
    else:
        checks.append({"check": "chat", "method": "POST", "path": "/v1/chat/completions",
                       "body": {"model": spec["model"], "max_tokens": 16, "temperature": 0,
                                "messages": [{"role": "user", "content": "Reply with one word: ready"}]}})
    return checks


def _parse(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _judge_models(spec, body):
    ids = [m.get("id") for m in body.get("data") or [] if isinstance(m, dict)]
    if spec["model"] in ids:
        return True, "lists %s" % spec["model"]
    return False, "lists %s, not %s" % (", ".join(map(str, ids)) or "no model", spec["model"])


def _judge_embeddings(_spec, body):
    data = body.get("data") or []
    vector = data[0].get("embedding") if data and isinstance(data[0], dict) else None
    if isinstance(vector, list) and vector and all(isinstance(x, (int, float)) for x in vector):
        return True, "a %d-dimensional embedding" % len(vector)
    return False, "no embedding in the answer"


def _judge_chat(_spec, body):
    choices = body.get("choices") or []
    tokens = (body.get("usage") or {}).get("completion_tokens") or 0
    if choices and isinstance(choices[0], dict) and tokens > 0:
        message = choices[0].get("message") or {}
        # reasoning models (Kimi K2.5) may spend a short answer on reasoning_content
        said = message.get("content") or message.get("reasoning_content") or message.get("reasoning") or ""
        return True, "%d token(s): %s" % (tokens, " ".join(str(said).split())[:60])
    return False, "no completion in the answer"


JUDGES = {"models": _judge_models, "embeddings": _judge_embeddings, "chat": _judge_chat}


def judge(check, spec, status, text):
    """(passed, detail) for one endpoint response (HTTP status and body text)."""
    if status != 200:
        excerpt = (text or "").strip().replace("\n", " ")[:200]
        return False, "HTTP %s from %s%s" % (status, check["path"], (": " + excerpt) if excerpt else "")
    body = _parse(text)
    if not isinstance(body, dict):
        return False, "%s did not answer JSON" % check["path"]
    return JUDGES[check["check"]](spec, body)


def verify_rows(spec, results):
    """Report rows (part, status, detail) from ``[{check, status, text, seconds}]``, timed."""
    rows = []
    by_check = {r["check"]: r for r in results}
    for check in endpoint_checks(spec):
        part = "llm %s %s %s" % (spec["name"], check["method"], check["path"])
        result = by_check.get(check["check"])
        if result is None:
            rows.append({"part": part, "status": "FAIL", "detail": "not run: an earlier request failed"})
            continue
        if result.get("error"):
            rows.append({"part": part, "status": "FAIL", "detail": result["error"]})
            continue
        passed, detail = judge(check, spec, result.get("status"), result.get("text"))
        rows.append({"part": part, "status": "PASS" if passed else "FAIL",
                     "detail": "%s in %.2f s" % (detail, result.get("seconds") or 0.0)})
    return rows


def run_checks(request, spec, wait_timeout=0, *, sleep=10, clock=None, pause=None):
    """Run :func:`endpoint_checks` through ``request(method, path, body) -> (status, text)``.

    GET /v1/models is retried until it answers 200 or ``wait_timeout`` seconds pass (a model
    may still be loading); the second request runs only when the first passed. Returns
    ``[{check, status, text, seconds}]`` (or ``error`` for a request that raised).
    """
    clock = clock or time.monotonic
    pause = pause or time.sleep
    checks = endpoint_checks(spec)
    results = []
    deadline = clock() + max(0, wait_timeout)
    while True:
        result = _timed(request, checks[0], clock)
        if result.get("status") == 200 or clock() >= deadline:
            break
        pause(sleep)
    results.append(result)
    if result.get("status") == 200 and judge(checks[0], spec, 200, result.get("text"))[0]:
        results.append(_timed(request, checks[1], clock))
    return results


def _timed(request, check, clock):
    start = clock()
    try:
        status, text = request(check["method"], check["path"], check["body"])
    except Exception as exc:  # pylint: disable=broad-except
        return {"check": check["check"], "error": "%s %s failed: %s" % (check["method"], check["path"], exc),
                "seconds": clock() - start}
    return {"check": check["check"], "status": status, "text": text, "seconds": clock() - start}
