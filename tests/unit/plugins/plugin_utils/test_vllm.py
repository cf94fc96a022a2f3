"""vLLM derivation: the three seed models field by field, 2 and 4 GPUs, every validation message,
the manifests, the preflight fit check and the verify judging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.module_utils import vllm_endpoint
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components as c
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm as v
from test_inventory_checks import homelab

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "llm"

QWEN = {"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingress_host": "qwen.127.0.0.1.nip.io"}
EMBED = {"name": "embed", "model": "BAAI/bge-base-en-v1.5", "gpu": 1}
KIMI = {"name": "kimi", "model": "moonshotai/Kimi-K2.5", "gpu": 8}

HEALTH = {"path": "/health", "port": "http"}


def test_qwen_every_field():
    spec = v.vllm_spec(QWEN)
    assert spec == {
        "name": "qwen", "namespace": "llm", "model": "Qwen/Qwen2.5-1.5B-Instruct", "task": "generate",
        "gpu": 1, "gpu_resource": "nvidia.com/gpu", "gpu_memory_utilization": 0.9, "dtype": "auto",
        "cpu": "2", "memory": "8Gi", "shm_size": "2Gi", "startup_seconds": 900, "port": 8000,
        "service_port": 80, "engine": "deployment", "image": "docker.io/vllm/vllm-openai:v0.33.0",
        "args": ["--host", "0.0.0.0", "--port", "8000", "--dtype", "auto", "--gpu-memory-utilization", "0.9"],
        "model_args": [],
        "env": [{"name": "HF_HOME", "value": "/cache/huggingface"}, {"name": "VLLM_NO_USAGE_STATS", "value": "1"}],
        "hf_token_secret": None, "cache": None, "replicas": 1,
        "ingress_host": "qwen.127.0.0.1.nip.io", "ingress_class": "traefik", "pool": None,
        "node_selector": {"gpu": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "tool_call_parser": None, "api_key_secret": "llm-api-key", "tls": True, "tls_issuer": "",
        "probes": {
            "startup": {"httpGet": HEALTH, "periodSeconds": 10, "failureThreshold": 90, "timeoutSeconds": 5},
            "readiness": {"httpGet": HEALTH, "periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 5},
            "liveness": {"httpGet": HEALTH, "periodSeconds": 30, "failureThreshold": 5, "timeoutSeconds": 10},
        },
    }
    assert "tensor_parallel_size" not in spec


def test_embed_every_derived_field():
    spec = v.vllm_spec(EMBED)
    assert spec["task"] == "embed"
    assert (spec["cpu"], spec["memory"], spec["shm_size"]) == ("2", "4Gi", "2Gi")
    assert spec["model_args"] == ["--runner", "pooling"]
    assert spec["ingress_host"] is None
    assert spec["hf_token_secret"] is None
    assert spec["gpu_memory_utilization"] == 0.9 and spec["dtype"] == "auto"
    assert "tensor_parallel_size" not in spec
    assert all(e["name"] != "VLLM_WORKER_MULTIPROC_METHOD" for e in spec["env"])
    assert spec["probes"]["startup"]["failureThreshold"] == 90


def test_kimi_every_derived_field():
    spec = v.vllm_spec(KIMI)
    assert spec["task"] == "generate"
    assert (spec["cpu"], spec["memory"], spec["shm_size"]) == ("16", "64Gi", "16Gi")
    assert spec["tensor_parallel_size"] == 8
    assert spec["args"][-2:] == ["--tensor-parallel-size", "8"]
    assert spec["model_args"] == ["--trust-remote-code", "--tool-call-parser", "kimi_k2", "--reasoning-parser",
                                  "kimi_k2", "--enable-auto-tool-choice", "--mm-encoder-tp-mode", "data"]
    assert spec["tool_call_parser"] == "kimi_k2"
    assert spec["hf_token_secret"] == "hf-token"
    assert {"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"} in spec["env"]
    assert spec["startup_seconds"] == 7200
    assert spec["probes"]["startup"]["failureThreshold"] == 720
    assert spec["gpu_memory_utilization"] == 0.9 and spec["dtype"] == "auto"


@pytest.mark.parametrize(("gpu", "cpu", "memory", "shm", "startup"), [
    (2, "4", "16Gi", "4Gi", 1800),
    (4, "8", "32Gi", "8Gi", 3600),
])
def test_two_and_four_gpus(gpu, cpu, memory, shm, startup):
    spec = v.vllm_spec(dict(QWEN, gpu=gpu))
    assert (spec["cpu"], spec["memory"], spec["shm_size"], spec["startup_seconds"]) == (cpu, memory, shm, startup)
    assert spec["tensor_parallel_size"] == gpu
    assert spec["args"][-2:] == ["--tensor-parallel-size", str(gpu)]
    assert {"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"} in spec["env"]
    deployment = v.vllm_deployment(spec)
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpu)}


def test_startup_allowance_grows_with_gpus():
    allowances = [v.vllm_spec(dict(QWEN, gpu=g))["probes"]["startup"]["failureThreshold"] for g in (1, 2, 4, 8)]
    assert allowances == sorted(allowances) and len(set(allowances)) == 4


def test_embed_is_lighter_at_every_size():
    for gpu in (1, 2, 4, 8):
        gen, emb = v.vllm_spec(dict(QWEN, gpu=gpu)), v.vllm_spec(dict(EMBED, gpu=gpu))
        assert int(emb["memory"][:-2]) < int(gen["memory"][:-2])


def test_optional_keys():
    spec = v.vllm_spec(dict(QWEN, namespace="ai", task="embed", hf_token_secret="my-token",
                            extra_args=["--max-model-len", "8192"], image="registry.lan/vllm/vllm-openai:v0.33.0",
                            cache="100Gi", replicas=2))
    assert spec["namespace"] == "ai"
    assert spec["model_args"] == ["--runner", "pooling", "--max-model-len", "8192"]
    assert spec["hf_token_secret"] == "my-token"
    assert spec["image"] == "registry.lan/vllm/vllm-openai:v0.33.0"
    assert spec["cache"] == {"claim": "qwen-hf-cache", "size": "100Gi", "storage_class": "nfs-client"}
    assert spec["replicas"] == 2
    assert v.vllm_spec(dict(QWEN, cache=True))["cache"]["size"] == "50Gi"
    assert v.vllm_spec(dict(QWEN, cache={"storage_class": "fast"}))["cache"]["storage_class"] == "fast"


def test_pool_selects_its_nodes():
    pools = [{"name": "inference", "nodes": ["wk-gpu4"], "allocation": "mig", "mig_profile": "all-1g.10gb"},
             {"name": "shared", "node_selector": {"pool": "shared"}, "allocation": "timeslice", "replicas": 4,
              "renameByDefault": True},
             {"name": "plain-shared", "nodes": ["wk-gpu3"], "allocation": "timeslice", "replicas": 4},
             {"name": "whole", "nodes": ["wk-gpu1"], "allocation": "exclusive"}]
    inference = v.vllm_spec(dict(QWEN, pool="inference"), pools)
    assert inference["node_selector"] == {"gpu-cluster.cps/gpu-pool": "inference"}
    # the pool's resource name (gpu_pools.pool_resource): a MIG slice, a renamed shared GPU, ...
    assert inference["gpu_resource"] == "nvidia.com/mig-1g.10gb"
    shared = v.vllm_spec(dict(QWEN, pool="shared"), pools)
    assert shared["node_selector"] == {"pool": "shared"}
    assert shared["gpu_resource"] == "nvidia.com/gpu.shared"
    # ... and nvidia.com/gpu for time-slicing without renameByDefault and for whole GPUs
    assert v.vllm_spec(dict(QWEN, pool="plain-shared"), pools)["gpu_resource"] == "nvidia.com/gpu"
    assert v.vllm_spec(dict(QWEN, pool="whole"), pools)["gpu_resource"] == "nvidia.com/gpu"


# ------------------------------------------------------------------ validation messages
@pytest.mark.parametrize(("change", "message"), [
    ({"gpu": 3}, "model qwen: gpu is 3; use 1, 2, 4 or 8"),
    ({"gpu": 0}, "gpu is 0; use 1, 2, 4 or 8"),
    ({"gpu": "1"}, "gpu is '1'; use 1, 2, 4 or 8"),
    ({"name": "Qwen_2"}, "name 'Qwen_2' must be a DNS-1123 label"),
    ({"name": "-qwen"}, "name '-qwen' must be a DNS-1123 label"),
    ({"name": "q" * 64}, "must be a DNS-1123 label"),
    ({"ingress_host": "Qwen.lan"}, "ingress_host 'Qwen.lan' must be a valid DNS name"),
    ({"ingress_host": "qwen..lan"}, "ingress_host 'qwen..lan' must be a valid DNS name"),
    ({"ingress_host": "http://qwen.lan"}, "ingress_host 'http://qwen.lan' must be a valid DNS name"),
    ({"model": "not a model"}, "model 'not a model' must be a Hugging Face model id"),
    ({"namespace": "LLM"}, "namespace 'LLM' must be a DNS-1123 label"),
    ({"task": "classify"}, "task 'classify' must be generate or embed"),
    ({"extra_args": "--foo"}, "extra_args '--foo' must be a list of strings"),
    ({"image": "vllm/vllm-openai:latest"}, "image 'vllm/vllm-openai:latest' must be pinned"),
    ({"image": "vllm/vllm-openai"}, "image 'vllm/vllm-openai' must be pinned"),
    ({"cache": "lots"}, "cache 'lots' must be true, false, a size like 100Gi"),
    ({"replicas": 0}, "replicas 0 must be a positive integer"),
    ({"hf_token_secret": "My Secret"}, "hf_token_secret 'My Secret' must name a Secret"),
    ({"colour": "blue"}, "unknown key(s) colour"),
])
def test_each_validation_message(change, message):
    problems = v.validate_model(dict(QWEN, **change))
    assert len(problems) == 1, problems
    assert message in problems[0]
    with pytest.raises(ValueError, match="gpu_cluster_llm_models"):
        v.vllm_spec(dict(QWEN, **change))


def test_three_gpus_names_the_allowed_values():
    (problem,) = v.validate_model(dict(QWEN, gpu=3))
    assert "1, 2, 4 or 8" in problem


def test_unknown_pool_names_the_declared_ones():
    (problem,) = v.validate_model(dict(QWEN, pool="nope"), [{"name": "training", "nodes": ["wk-gpu1"]}])
    assert "pool 'nope' is not declared in gpu_cluster_gpu_pools (training)" in problem


def test_unknown_engine():
    with pytest.raises(ValueError, match="use deployment or operator"):
        v.vllm_spec(QWEN, engine="kserve")


def test_not_a_mapping():
    assert "must be a mapping" in v.validate_model(["qwen"])[0]


# ------------------------------------------------------------------ manifests
def test_deployment_of_qwen():
    dep = v.vllm_deployment(v.vllm_spec(QWEN))
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "docker.io/vllm/vllm-openai:v0.33.0"
    assert container["command"] == ["vllm", "serve"]
    assert container["args"][0] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"gpu": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}} in pod["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert container["startupProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 2000
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert all(e["name"] != "HF_TOKEN" for e in container["env"])


def test_kimi_reads_the_token_from_the_convention_secret():
    container = v.vllm_deployment(v.vllm_spec(KIMI))["spec"]["template"]["spec"]["containers"][0]
    token = next(e for e in container["env"] if e["name"] == "HF_TOKEN")
    assert token["valueFrom"] == {"secretKeyRef": {"name": "hf-token", "key": "token"}}


def test_service_and_ingress():
    spec = v.vllm_spec(QWEN)
    service = v.vllm_service(spec)
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    ingress = v.vllm_ingress(spec)
    assert ingress["spec"]["ingressClassName"] == "traefik"
    assert ingress["spec"]["rules"][0]["host"] == "qwen.127.0.0.1.nip.io"
    assert v.vllm_ingress(v.vllm_spec(EMBED)) is None
    assert v.vllm_ingress(v.vllm_spec(QWEN, ingress_class="nginx"))["spec"]["ingressClassName"] == "nginx"


def test_every_model_asks_for_its_api_key_from_the_namespace_secret():
    container = v.vllm_deployment(v.vllm_spec(QWEN))["spec"]["template"]["spec"]["containers"][0]
    key = next(e for e in container["env"] if e["name"] == "VLLM_API_KEY")
    assert key["valueFrom"] == {"secretKeyRef": {"name": "llm-api-key", "key": "api-key"}}  # not optional
    # vLLM's --api-key, expanded by the kubelet from the Secret: the manifest holds no key
    at = container["args"].index("--api-key")
    assert container["args"][at + 1] == "$(VLLM_API_KEY)"
    # the probes' /health stays open (vLLM asks the key on /v1 only)
    assert container["startupProbe"]["httpGet"]["path"] == "/health"
    # switched off on purpose: no key
    off = v.vllm_deployment(v.vllm_spec(QWEN, access={"api_key": False}))["spec"]["template"]["spec"]["containers"][0]
    assert "--api-key" not in off["args"] and all(e["name"] != "VLLM_API_KEY" for e in off["env"])
    # the operator's VLLMRuntime cannot read a Secret: no key there (preflight asks to say so)
    assert v.vllm_spec(QWEN, engine="operator")["api_key_secret"] is None


def test_ingress_tls_by_default_from_the_cluster_ca_https_only():
    ingress = v.vllm_ingress(v.vllm_spec(QWEN, access={"management": True}))
    assert ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "gpu-cluster-ca"
    assert ingress["metadata"]["annotations"]["traefik.ingress.kubernetes.io/router.entrypoints"] == "websecure"
    assert ingress["spec"]["tls"] == [{"hosts": ["qwen.127.0.0.1.nip.io"], "secretName": "qwen-tls"}]
    named = v.vllm_ingress(v.vllm_spec(QWEN, access={"cert_issuer": "letsencrypt"}))
    assert named["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    plain = v.vllm_ingress(v.vllm_spec(QWEN, access={"management": True, "tls": False}))
    assert "tls" not in plain["spec"] and "cert-manager.io/cluster-issuer" not in plain["metadata"]["annotations"]
    assert "traefik.ingress.kubernetes.io/router.entrypoints" not in plain["metadata"]["annotations"]
    # nothing issues a certificate: still HTTPS only, with the ingress controller's default certificate
    default = v.vllm_ingress(v.vllm_spec(QWEN))
    assert default["spec"]["tls"] == [{"hosts": ["qwen.127.0.0.1.nip.io"]}]
    assert default["metadata"]["annotations"]["traefik.ingress.kubernetes.io/router.entrypoints"] == "websecure"
    assert "cert-manager.io/cluster-issuer" not in default["metadata"]["annotations"]


def test_network_policy_lets_in_the_ingress_controller_the_clients_and_the_namespace_only():
    (llm,) = [cmp for cmp in v.vllm_components([QWEN], access={"client_namespaces": ["jupyterhub", "llm"]})
              if cmp["name"] == "namespace-llm"]
    (policy,) = llm["manifests"]
    assert policy["metadata"] == {"name": "llm-ingress", "namespace": "llm",
                                  "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}}
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/component": "llm"}}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8000, "protocol": "TCP"}]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "traefik"}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "jupyterhub"}}},
        {"podSelector": {}},
    ]
    # the models' pods are the ones it selects
    deployment = v.vllm_deployment(v.vllm_spec(QWEN))
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    other = v.network_policy("llm", "nginx")
    assert other["spec"]["ingress"][0]["from"][0] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}


def test_cache_pvc_on_nfs_client():
    spec = v.vllm_spec(dict(QWEN, cache=True))
    pvc = v.vllm_cache_pvc(spec)
    assert pvc["metadata"]["name"] == "qwen-hf-cache"
    assert pvc["spec"]["storageClassName"] == "nfs-client"
    volumes = v.vllm_deployment(spec)["spec"]["template"]["spec"]["volumes"]
    assert {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "qwen-hf-cache"}} in volumes
    assert v.vllm_cache_pvc(v.vllm_spec(QWEN)) is None


def test_vllm_runtime_of_kimi():
    spec = v.vllm_spec(dict(KIMI, cache="2Ti"), engine="operator")
    runtime = v.vllm_runtime(spec)
    assert runtime["apiVersion"] == "production-stack.vllm.ai/v1alpha1" and runtime["kind"] == "VLLMRuntime"
    body = runtime["spec"]
    assert body["model"]["modelURL"] == "moonshotai/Kimi-K2.5"
    assert body["model"]["hfTokenSecret"] == {"hfTokenSecretName": "hf-token", "hfTokenKeyName": "token"}
    assert body["vllmConfig"]["tensorParallelSize"] == 8
    assert body["vllmConfig"]["gpuMemoryUtilization"] == "0.9"
    assert "--trust-remote-code" in body["vllmConfig"]["extraArgs"]
    assert body["deploymentConfig"]["image"] == {"registry": "docker.io", "name": "lmcache/vllm-openai:2025-05-27-v1",
                                                 "pullPolicy": "IfNotPresent"}
    assert body["deploymentConfig"]["resources"] == {"cpu": "16", "memory": "64Gi", "gpu": "8", "gpuType": "nvidia.com/gpu"}
    assert body["deploymentConfig"]["shmSize"] == "16Gi"
    assert body["storageConfig"]["size"] == "2Ti"
    assert [m["kind"] for m in v.vllm_manifests(spec)] == ["VLLMRuntime"]


def test_components_namespace_bundle_first_and_models_depend_on_it():
    components = v.vllm_components([QWEN, EMBED, dict(KIMI, namespace="big")])
    assert [c["name"] for c in components] == ["namespace-llm", "namespace-big", "qwen", "embed", "kimi"]
    llm = components[0]
    assert llm["namespace_labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    labels = {"gpu-cluster.cps/namespace": "llm", "gpu-cluster.cps/owner": "llm-serving"}
    assert llm["fleet_labels"] == labels
    assert [m["kind"] for m in c.component_manifests(llm)] == ["Namespace", "NetworkPolicy"]
    assert c.fleet_bundle(llm) == {"defaultNamespace": "llm", "namespaceLabels": llm["namespace_labels"],
                                   "labels": labels}
    qwen = components[2]
    assert "namespace_labels" not in qwen
    assert [m["kind"] for m in c.component_manifests(qwen)] == ["Deployment", "Service", "Ingress"]
    assert c.fleet_bundle(qwen)["dependsOn"] == [{"selector": {"matchLabels": {"gpu-cluster.cps/namespace": "llm"}}}]
    assert c.fleet_bundle(components[4])["dependsOn"][0]["selector"]["matchLabels"] == {"gpu-cluster.cps/namespace": "big"}
    assert all(c.validate_component(component) == [] for component in components)
    operator = v.vllm_components([QWEN], engine="operator")
    assert operator[1]["namespace_labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


OPERATOR_FILE = Path(__file__).resolve().parents[4] / "roles" / "llm_serving" / "files" / "production-stack-operator.yaml"
CRD_FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "llm" / "production-stack.vllm.ai_vllmruntimes.yaml"


def test_operator_installed_first_and_the_models_wait_for_it():
    components = v.vllm_components([QWEN, EMBED], engine="operator")
    assert [c_["name"] for c_ in components] == ["vllm-operator", "namespace-llm", "qwen", "embed"]
    operator = components[0]
    assert operator["namespace"] == "production-stack-system"
    assert operator["namespace_labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    kinds = [m["kind"] for m in c.component_manifests(operator)]
    assert kinds[0] == "Namespace" and kinds.count("CustomResourceDefinition") == 4 and "Deployment" in kinds
    for model in components[2:]:
        assert {"selector": {"matchLabels": {"gpu-cluster.cps/vllm-operator": "true"}}} in c.fleet_bundle(model)["dependsOn"]
    assert c.fleet_bundle(operator)["labels"]["gpu-cluster.cps/vllm-operator"] == "true"
    assert all(c.validate_component(component) == [] for component in components)
    # the cluster's own operator: nothing installed, nothing waited for
    own = v.vllm_components([QWEN], engine="operator", operator_install=False)
    assert [c_["name"] for c_ in own] == ["namespace-llm", "qwen"]
    assert len(c.fleet_bundle(own[1])["dependsOn"]) == 1
    # the deployment engine never installs it
    assert "vllm-operator" not in [c_["name"] for c_ in v.vllm_components([QWEN])]


def test_operator_manifests_are_the_vendored_install_with_the_image_pinned():
    """Everything of the vendored kustomize output but its Namespace, unchanged but for the controller's
    image (``latest`` upstream) and its pull policy; its VLLMRuntime CRD is the one the render tier
    validates the VLLMRuntimes against (both from the same upstream commit)."""
    vendored = [d for d in yaml.safe_load_all(OPERATOR_FILE.read_text()) if d]
    manifests = v.operator_manifests()
    assert len(manifests) == len(vendored) - 1
    assert next(d for d in vendored if d["kind"] == "Namespace")["metadata"]["name"] == v.OPERATOR_NAMESPACE
    upstream = next(d for d in vendored if d["kind"] == "Deployment")
    ours = next(d for d in manifests if d["kind"] == "Deployment")
    assert upstream["spec"]["template"]["spec"]["containers"][0]["image"] == "lmcache/production-stack-operator:latest"
    manager = ours["spec"]["template"]["spec"]["containers"][0]
    assert (manager["image"], manager["imagePullPolicy"]) == (v.OPERATOR_CONTROLLER_IMAGE, "IfNotPresent")
    manager.update(image=upstream["spec"]["template"]["spec"]["containers"][0]["image"], imagePullPolicy="Always")
    assert manifests == [d for d in vendored if d["kind"] != "Namespace"]
    crd = next(d for d in manifests if d["kind"] == "CustomResourceDefinition" and d["spec"]["names"]["kind"] == "VLLMRuntime")
    assert crd == yaml.safe_load(CRD_FIXTURE.read_text())
    assert all(d["metadata"].get("namespace") in (None, v.OPERATOR_NAMESPACE) for d in manifests)


def test_operator_namespace_is_refused_for_the_models():
    groups, hostvars = homelab()
    for variables in hostvars.values():
        variables["gpu_cluster_llm_models"] = [dict(QWEN)]
        variables["gpu_cluster_llm_namespace"] = "production-stack-system"
    assert any("the production-stack operator's own namespace" in p for p in v.llm_problems(groups, hostvars))
    for variables in hostvars.values():
        variables["gpu_cluster_llm_namespace"] = "llm"
        variables["gpu_cluster_llm_operator_install"] = "yes"
    assert any("gpu_cluster_llm_operator_install is 'yes'; use true or false" in p for p in v.llm_problems(groups, hostvars))
    assert any("namespace production-stack-system is the production-stack operator's own" in p
               for p in v.validate_model(dict(QWEN, namespace="production-stack-system")))


def test_model_named_like_a_namespace_bundle_is_refused():
    with pytest.raises(ValueError, match="name namespace-llm is the bundle of a namespace"):
        v.vllm_components([dict(QWEN, name="namespace-llm")])


def test_components_refuse_duplicate_names():
    with pytest.raises(ValueError, match="name qwen is used twice"):
        v.vllm_components([QWEN, dict(QWEN, model="a/b")])


# ------------------------------------------------------------------ preflight fit
HOMELAB_GROUPS = {"all": ["pve1", "cp1", "wk-gpu1", "wk-gpu2"], "gpu_workers": ["wk-gpu1", "wk-gpu2"]}


def _hostvars(models, counts=(2, 2), pools=None):
    # the management phase issues the Ingresses' certificates (TLS is on by default)
    hostvars = {"pve1": {}, "cp1": {"gpu_cluster_management_enabled": True}}
    for host, count in zip(("wk-gpu1", "wk-gpu2"), counts):
        hostvars[host] = {"gpu_cluster_gpu_count": count}
    for variables in hostvars.values():
        variables["gpu_cluster_llm_models"] = models
        if pools is not None:
            variables["gpu_cluster_gpu_pools"] = pools
    return hostvars


def test_kimi_fixture_is_refused_naming_the_largest_worker():
    models = yaml.safe_load((FIXTURES / "kimi-k2.5.yml").read_text())["gpu_cluster_llm_models"]
    (problem,) = v.llm_problems(HOMELAB_GROUPS, _hostvars(models))
    assert "model kimi (moonshotai/Kimi-K2.5) asks for 8 GPUs on one node" in problem
    assert "the largest worker of gpu_workers is wk-gpu1 with 2 GPU(s)" in problem


def test_largest_worker_is_named_when_workers_differ():
    (problem,) = v.llm_problems(HOMELAB_GROUPS, _hostvars([KIMI], counts=(1, 4)))
    assert "largest worker of gpu_workers is wk-gpu2 with 4 GPU(s); lower gpu to at most 4" in problem


def test_homelab_models_fit():
    assert v.llm_problems(HOMELAB_GROUPS, _hostvars([QWEN, EMBED])) == []
    assert v.llm_problems(HOMELAB_GROUPS, _hostvars([dict(QWEN, gpu=2)])) == []


def test_fit_within_the_pool():
    pools = [{"name": "small", "nodes": ["wk-gpu1"]}]
    (problem,) = v.llm_problems(HOMELAB_GROUPS, _hostvars([dict(QWEN, gpu=4, pool="small")], counts=(2, 4), pools=pools))
    assert "largest worker of GPU pool small is wk-gpu1 with 2 GPU(s)" in problem


def test_no_gpu_workers():
    groups = {"all": ["cp1"], "gpu_workers": []}
    (problem,) = v.llm_problems(groups, {"cp1": {"gpu_cluster_llm_models": [QWEN], "gpu_cluster_management_enabled": True}})
    assert "gpu_workers has no nodes" in problem


def test_no_models_no_problems():
    assert v.llm_problems(HOMELAB_GROUPS, {"cp1": {}}) == []
    assert "use a list of models" in v.llm_problems(HOMELAB_GROUPS, {"cp1": {"gpu_cluster_llm_models": "qwen"}})[0]


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("gpu_cluster_llm_engine", "kserve", "gpu_cluster_llm_engine is 'kserve'; use deployment"),
    ("gpu_cluster_llm_ingress_class", "Traefik Class", "gpu_cluster_llm_ingress_class is 'Traefik Class'"),
    ("gpu_cluster_llm_namespace", "LLM", "gpu_cluster_llm_namespace is 'LLM'; use a DNS-1123 label"),
])
def test_collection_settings_are_checked(variable, value, message):
    hostvars = _hostvars([QWEN])
    hostvars["cp1"][variable] = value
    (problem,) = v.llm_problems(HOMELAB_GROUPS, hostvars)
    assert message in problem


@pytest.mark.parametrize(("variables", "message"), [
    ({"gpu_cluster_llm_engine": "operator"}, "set gpu_cluster_llm_api_key: false to accept that"),
    ({"gpu_cluster_llm_api_key": "yes"}, "gpu_cluster_llm_api_key is 'yes'; use true or false"),
    ({"gpu_cluster_llm_tls": "no"}, "gpu_cluster_llm_tls is 'no'; use true or false"),
    ({"gpu_cluster_llm_client_namespaces": ["Team A"]}, "gpu_cluster_llm_client_namespaces is ['Team A']"),
    ({"gpu_cluster_llm_cert_issuer": "Lets Encrypt"}, "gpu_cluster_llm_cert_issuer is 'Lets Encrypt'"),
])
def test_access_settings_are_checked(variables, message):
    hostvars = _hostvars([QWEN])
    hostvars["cp1"].update(variables)
    problems = v.llm_problems(HOMELAB_GROUPS, hostvars)
    assert any(message in p for p in problems), problems


def test_a_model_host_nothing_issues_a_certificate_for_is_a_warning():
    hostvars = _hostvars([QWEN])
    hostvars["cp1"]["gpu_cluster_management_enabled"] = False
    assert v.llm_problems(HOMELAB_GROUPS, hostvars) == []
    (warning,) = v.llm_warnings(HOMELAB_GROUPS, hostvars)
    assert warning.startswith("the Ingress of model qwen is served over HTTPS with the ingress controller's "
                              "self-signed default certificate")
    hostvars["cp1"]["gpu_cluster_llm_tls"] = False
    assert v.llm_warnings(HOMELAB_GROUPS, hostvars) == []
    assert v.llm_warnings(HOMELAB_GROUPS, _hostvars([QWEN])) == []  # the cluster CA issues it


@pytest.mark.parametrize("variables", [
    {"gpu_cluster_management_enabled": False, "gpu_cluster_llm_tls": False},
    {"gpu_cluster_management_enabled": False, "gpu_cluster_llm_cert_issuer": "letsencrypt"},
    {"gpu_cluster_llm_engine": "operator", "gpu_cluster_llm_api_key": False},
])
def test_access_settings_accepted(variables):
    hostvars = _hostvars([QWEN])
    hostvars["cp1"].update(variables)
    assert v.llm_problems(HOMELAB_GROUPS, hostvars) == []


def test_invalid_entries_reach_preflight():
    problems = v.llm_problems(HOMELAB_GROUPS, _hostvars([dict(QWEN, gpu=3), QWEN]))
    assert any("gpu is 3" in p for p in problems)
    assert any("name qwen is used twice" in p for p in problems)


# ------------------------------------------------------------------ verify
def _fake(answers):
    calls = []

    def request(method, path, body):
        calls.append((method, path, body))
        answer = answers[path].pop(0) if isinstance(answers[path], list) else answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer
    return request, calls


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


MODELS_OK = (200, json.dumps({"data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct"}]}))
CHAT_OK = (200, json.dumps({"choices": [{"message": {"content": "ready"}}], "usage": {"completion_tokens": 2}}))


def test_chat_model_passes_both_checks():
    spec = v.vllm_spec(QWEN)
    request, calls = _fake({"/v1/models": MODELS_OK, "/v1/chat/completions": CHAT_OK})
    rows = vllm_endpoint.verify_rows(spec, vllm_endpoint.run_checks(request, spec))
    assert [r["status"] for r in rows] == ["PASS", "PASS"]
    assert rows[0]["check"] == "llm qwen GET /v1/models"
    assert rows[1]["check"] == "llm qwen POST /v1/chat/completions"
    assert rows[1]["detail"].startswith("2 token(s): ready in ")
    assert calls[1][2]["model"] == "Qwen/Qwen2.5-1.5B-Instruct"


def test_embedding_model_uses_embeddings():
    spec = v.vllm_spec(EMBED)
    models = (200, json.dumps({"data": [{"id": "BAAI/bge-base-en-v1.5"}]}))
    vector = (200, json.dumps({"data": [{"embedding": [0.1] * 768}]}))
    request, calls = _fake({"/v1/models": models, "/v1/embeddings": vector})
    rows = vllm_endpoint.verify_rows(spec, vllm_endpoint.run_checks(request, spec))
    assert [c[1] for c in calls] == ["/v1/models", "/v1/embeddings"]
    assert rows[1]["status"] == "PASS" and "768-dimensional" in rows[1]["detail"]


def test_waits_for_a_loading_model():
    spec = v.vllm_spec(QWEN)
    clock = Clock()
    request, calls = _fake({"/v1/models": [(503, "loading"), (503, "loading"), MODELS_OK],
                            "/v1/chat/completions": CHAT_OK})
    results = vllm_endpoint.run_checks(request, spec, wait_timeout=60, sleep=10, clock=clock, pause=clock.sleep)
    assert [r["status"] for r in results] == [200, 200]
    assert len(calls) == 4


def test_gives_up_after_the_timeout():
    spec = v.vllm_spec(QWEN)
    clock = Clock()
    request, _calls = _fake({"/v1/models": (503, "loading")})
    rows = vllm_endpoint.verify_rows(spec, vllm_endpoint.run_checks(request, spec, wait_timeout=30, sleep=10, clock=clock, pause=clock.sleep))
    assert rows[0]["status"] == "FAIL" and "HTTP 503 from /v1/models: loading" in rows[0]["detail"]
    assert rows[1] == {"check": "llm qwen POST /v1/chat/completions", "target": "", "status": "FAIL",
                       "detail": "not run: an earlier request failed"}


@pytest.mark.parametrize(("models", "chat", "detail"), [
    ((200, json.dumps({"data": [{"id": "other/model"}]})), CHAT_OK, "lists other/model, not Qwen"),
    ((200, "<html>"), CHAT_OK, "did not answer JSON"),
    (MODELS_OK, (200, json.dumps({"choices": [], "usage": {"completion_tokens": 0}})), "no completion"),
    (MODELS_OK, (500, "boom"), "HTTP 500 from /v1/chat/completions: boom"),
    (MODELS_OK, ConnectionError("refused"), "POST /v1/chat/completions failed: refused"),
])
def test_failures_say_what_failed(models, chat, detail):
    spec = v.vllm_spec(QWEN)
    request, _calls = _fake({"/v1/models": models, "/v1/chat/completions": chat})
    rows = vllm_endpoint.verify_rows(spec, vllm_endpoint.run_checks(request, spec))
    assert any(r["status"] == "FAIL" and detail in r["detail"] for r in rows), rows


def test_reasoning_models_count_reasoning_tokens():
    spec = v.vllm_spec(KIMI)
    answer = json.dumps({"choices": [{"message": {"content": None, "reasoning_content": "thinking"}}],
                         "usage": {"completion_tokens": 16}})
    passed, detail = vllm_endpoint.judge(vllm_endpoint.endpoint_checks(spec)[1], spec, 200, answer)
    assert passed and "thinking" in detail


# ------------------------------------------------------------------ removed models
def _found(kind, namespace, name, model=None):
    return {"apiVersion": "v1", "kind": kind, "metadata": {
        "namespace": namespace, "name": name,
        "labels": {"app.kubernetes.io/name": model or name, "app.kubernetes.io/component": "llm"}}}


def test_objects_of_removed_models_are_stale_and_the_cache_is_kept():
    components = v.vllm_components([QWEN])
    found = [_found("Deployment", "llm", "qwen"), _found("Service", "llm", "qwen"), _found("Ingress", "llm", "qwen"),
             _found("Deployment", "llm", "embed"), _found("Service", "llm", "embed"),
             _found("Deployment", "team-a", "qwen"),  # same name, another namespace: another model
             _found("PersistentVolumeClaim", "llm", "embed-cache", "embed")]
    stale = v.stale_objects(found, components)
    assert [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in stale] == [
        ("Deployment", "llm", "embed"), ("Service", "llm", "embed"), ("Deployment", "team-a", "qwen")]
    # every model gone: everything of them goes, the cache stays
    assert len(v.stale_objects(found, v.vllm_components([]))) == 6
    assert v.stale_objects([], components) == []


def test_every_bundle_of_the_models_carries_the_owner_label():
    for component in v.vllm_components([QWEN, EMBED]):
        assert component["fleet_labels"]["gpu-cluster.cps/owner"] == "llm-serving"
