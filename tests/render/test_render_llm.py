"""LLM models rendered by playbooks/render.yml: the homelab's qwen and embed bundles, and the
production-stack engine (VLLMRuntime) with Kimi K2.5 added.

* every Kubernetes object strict-valid for the cluster's version (kubernetes-validate);
* every VLLMRuntime valid against the operator CRD's openAPIV3Schema (jsonschema), and every field
  we set declared there (the API server prunes undeclared fields silently);
* the Deployment's pod passes Pod Security ``restricted`` and its namespace enforces it.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm
from test_render_components import HOMELAB, fleet, inventory_k8s_version, manifests
from test_render_gpu_pools import crd_schema as monitoring_crd_schema
from test_render_operations import OPERATIONS_RENDER, OPERATIONS_SETTINGS

REPO = Path(__file__).resolve().parents[2]
LLM_FIXTURES = REPO / "tests" / "fixtures" / "llm"
CRD = LLM_FIXTURES / "production-stack.vllm.ai_vllmruntimes.yaml"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"


RENDERS = {
    "deployment": (HOMELAB,),
    # Kimi K2.5 needs 8 GPUs on one node: preflight refuses it on the homelab's 2-GPU workers
    # (tests/integration/preflight_cases.yml); here only its VLLMRuntime's shape is under test.
    "operator": (HOMELAB, "gpu_cluster_llm_engine=operator", f"@{LLM_FIXTURES / 'kimi-k2.5.yml'}",
                 '{"gpu_cluster_preflight": false}'),
    # the homelab with its commented model metrics switched on (docs/llm.md, Watching the models),
    # and its backups and logs (one render: test_render_operations.py reads it too)
    "monitored": OPERATIONS_RENDER,
}
RENDERS_USED = list(RENDERS.values())  # started with the session (conftest.py)


@pytest.fixture(scope="module")
def renders(renders_cache):
    return {name: renders_cache.get(*args)[0] / "homelab" for name, args in RENDERS.items()}


def objects(bundle):
    return {(doc["kind"], doc["metadata"]["name"]): doc for _path, doc in manifests(bundle)}


def crd_schema():
    crd = yaml.safe_load(CRD.read_text())
    assert crd["spec"]["names"]["kind"] == "VLLMRuntime"
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


def undeclared(value, schema, path=""):
    """Fields of ``value`` that ``schema`` does not declare (what the API server would prune)."""
    missing = []
    if isinstance(value, dict) and schema.get("type") == "object" and "properties" in schema:
        for key, item in value.items():
            if key not in schema["properties"]:
                missing.append(path + key)
            else:
                missing += undeclared(item, schema["properties"][key], path + key + ".")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            missing += undeclared(item, schema["items"], f"{path}{index}.")
    return missing


def restricted_violations(pod_spec):
    """The Pod Security Standards ``restricted`` (and so ``baseline``) rules a pod spec breaks."""
    problems = []
    pod_sc = pod_spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(field):
            problems.append(field)
    allowed_volumes = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret"}
    for volume in pod_spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= allowed_volumes:
            problems.append(f"volume {volume['name']} uses {kinds - allowed_volumes}")
    for container in pod_spec["containers"] + pod_spec.get("initContainers", []):
        sc = container.get("securityContext") or {}
        name = container["name"]
        if sc.get("privileged"):
            problems.append(f"{name} privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation must be false")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            problems.append(f"{name}: capabilities must drop ALL")
        if set((sc.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds capabilities")
        if not (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))):
            problems.append(f"{name}: runAsNonRoot must be true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            problems.append(f"{name}: runAsUser 0")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile must be RuntimeDefault")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                problems.append(f"{name}: hostPort")
    return problems


def test_homelab_writes_qwen_with_ingress_and_embed(renders):
    cluster = renders["deployment"]
    qwen, embed = objects(cluster / "qwen"), objects(cluster / "embed")
    assert set(objects(cluster / "namespace-llm")) == {("Namespace", "llm"), ("NetworkPolicy", "llm-ingress")}
    assert set(qwen) == {("Deployment", "qwen"), ("Service", "qwen"), ("Ingress", "qwen")}
    assert set(embed) == {("Deployment", "embed"), ("Service", "embed")}
    # the namespace bundle of this cluster: two clusters may share one Fleet repository
    on_namespace = [{"selector": {"matchLabels": {"gpu-cluster.cps/namespace": "llm", "gpu-cluster.cps/cluster": "homelab"}}}]
    # both ask for a GPU: they also wait for the GPU Operator's bundle (management.bundle_dependencies)
    on_operator = [{"selector": {"matchLabels": {"gpu-cluster.cps/bundle": "gpu-operator", "gpu-cluster.cps/cluster": "homelab"}}}]
    # qwen's Ingress asks cert-manager for its certificate: it also waits for cert-manager's bundle
    on_cert_manager = [{"selector": {"matchLabels": {"gpu-cluster.cps/bundle": "cert-manager",
                                                     "gpu-cluster.cps/cluster": "homelab"}}}]
    assert fleet(cluster / "qwen")["dependsOn"] == on_namespace + on_cert_manager + on_operator
    assert fleet(cluster / "embed")["dependsOn"] == on_namespace + on_operator
    # every bundle carries its name and cluster (fleet_ordered_component); this one also the namespace it makes
    assert fleet(cluster / "namespace-llm")["labels"] == {"gpu-cluster.cps/namespace": "llm",
                                                          "gpu-cluster.cps/owner": "llm-serving",
                                                          "gpu-cluster.cps/bundle": "namespace-llm",
                                                          "gpu-cluster.cps/cluster": "homelab"}
    ingress = qwen[("Ingress", "qwen")]["spec"]
    assert ingress["ingressClassName"] == "traefik"
    assert ingress["rules"][0]["host"] == "qwen.127.0.0.1.nip.io"
    assert ingress["rules"][0]["http"]["paths"][0]["backend"]["service"] == {"name": "qwen", "port": {"name": "http"}}
    # HTTPS only, from the cluster CA the homelab's management phase installs
    assert ingress["tls"] == [{"hosts": ["qwen.127.0.0.1.nip.io"], "secretName": "qwen-tls"}]
    annotations = qwen[("Ingress", "qwen")]["metadata"]["annotations"]
    assert annotations["cert-manager.io/cluster-issuer"] == "gpu-cluster-ca"
    assert annotations["traefik.ingress.kubernetes.io/router.entrypoints"] == "websecure"
    # the API key from the namespace's Secret, never in the bundle
    for name, model in (("qwen", qwen), ("embed", embed)):
        (container,) = model[("Deployment", name)]["spec"]["template"]["spec"]["containers"]
        assert "--api-key" in container["args"] and "$(VLLM_API_KEY)" in container["args"]
        assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "llm-api-key", "key": "api-key"}}} \
            in container["env"]
    assert not any(kind == "Secret" for bundle in ("namespace-llm", "qwen", "embed")
                   for kind, _name in objects(cluster / bundle))
    # only the ingress controller, JupyterHub's notebooks (the homelab enables JupyterHub) and the
    # namespace itself may connect to the models
    policy = objects(cluster / "namespace-llm")[("NetworkPolicy", "llm-ingress")]["spec"]
    assert [peer.get("namespaceSelector", {}).get("matchLabels") for peer in policy["ingress"][0]["from"]] == [
        {"kubernetes.io/metadata.name": "kube-system"}, {"kubernetes.io/metadata.name": "jupyterhub"}, None]
    assert fleet(cluster / "qwen")["defaultNamespace"] == "llm"
    assert fleet(cluster / "embed")["defaultNamespace"] == "llm"


def test_homelab_llm_objects_are_strict_valid(renders):
    version = inventory_k8s_version(HOMELAB)
    for name in ("namespace-llm", "qwen", "embed"):
        for path, doc in manifests(renders["deployment"] / name):
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{path.name}: {exc.message} at {list(exc.path)}")


def test_rendered_pods(renders):
    cluster = renders["deployment"]
    qwen = objects(cluster / "qwen")[("Deployment", "qwen")]
    embed = objects(cluster / "embed")[("Deployment", "embed")]
    # qwen on whole GPUs; embed on one MIG slice of the pool inference (the homelab's llm.yml, issue 43)
    for deployment, memory, args, selector, gpu in (
            (qwen, "8Gi", [], {"gpu": "true"}, "nvidia.com/gpu"),
            (embed, "4Gi", ["--runner", "pooling"], {"gpu-cluster.cps/gpu-pool": "inference"}, "nvidia.com/mig-1g.10gb")):
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"].startswith("docker.io/vllm/vllm-openai:v")
        assert pod["runtimeClassName"] == "nvidia"
        assert pod["nodeSelector"] == selector
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}} in pod["volumes"]
        assert container["resources"]["limits"] == {"cpu": "2", "memory": memory, gpu: "1"}
        assert container["args"][-len(args):] == args if args else "--runner" not in container["args"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}


def test_pods_pass_pod_security_restricted(renders):
    cluster = renders["deployment"]
    namespace = objects(cluster / "namespace-llm")[("Namespace", "llm")]
    assert namespace["metadata"]["labels"][PSA_ENFORCE] == "restricted"
    assert fleet(cluster / "namespace-llm")["namespaceLabels"][PSA_ENFORCE] == "restricted"
    for name in ("qwen", "embed"):
        pod = objects(cluster / name)[("Deployment", name)]["spec"]["template"]["spec"]
        assert restricted_violations(pod) == []


def test_restricted_check_catches_a_root_pod():
    pod = {"containers": [{"name": "c", "securityContext": {"runAsUser": 0}}],
           "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    assert len(restricted_violations(pod)) >= 5


def test_operator_engine_renders_vllmruntimes_valid_against_the_crd(renders):
    cluster = renders["operator"]
    schema = crd_schema()
    runtimes = {}
    for name in ("namespace-llm", "qwen", "embed", "kimi"):
        for (kind, _obj), doc in objects(cluster / name).items():
            if kind == "VLLMRuntime":
                jsonschema.validate(doc, schema)
                assert undeclared(doc["spec"], schema["properties"]["spec"]) == []
                runtimes[name] = doc
            else:
                kubernetes_validate.validate(doc, inventory_k8s_version(HOMELAB), strict=True)
    assert set(runtimes) == {"qwen", "embed", "kimi"}
    kimi = runtimes["kimi"]["spec"]
    assert kimi["vllmConfig"]["tensorParallelSize"] == 8
    assert kimi["deploymentConfig"]["resources"]["gpu"] == "8"
    assert kimi["model"]["hfTokenSecret"]["hfTokenSecretName"] == "hf-token"
    assert kimi["storageConfig"]["storageClassName"] == "nfs-client"
    assert runtimes["embed"]["spec"]["vllmConfig"]["extraArgs"] == ["--runner", "pooling"]
    # the operator creates the Service; our Ingress points at its name and port
    assert ("Ingress", "qwen") in objects(cluster / "qwen")
    assert ("Deployment", "qwen") not in objects(cluster / "qwen")
    assert fleet(cluster / "namespace-llm")["namespaceLabels"][PSA_ENFORCE] == "baseline"


def test_operator_engine_installs_the_operator_first(renders):
    """Issue 47: the operator engine's render carries the production-stack operator itself, bundle
    vllm-operator: every object strict-valid for the cluster's Kubernetes (the CRDs as
    apiextensions.k8s.io/v1 objects), its VLLMRuntime CRD the one the runtimes above are validated
    against, the controller pinned (versions.yml) and passing Pod Security restricted in a namespace that
    enforces it; every model bundle depends on it in Fleet."""
    cluster = renders["operator"]
    operator = objects(cluster / "vllm-operator")
    version = inventory_k8s_version(HOMELAB)
    for (kind, name), doc in operator.items():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"vllm-operator {kind} {name}: {exc.message} at {list(exc.path)}")
    crds = {doc["spec"]["names"]["kind"]: doc for (kind, _n), doc in operator.items() if kind == "CustomResourceDefinition"}
    assert set(crds) == {"VLLMRuntime", "VLLMRouter", "CacheServer", "LoraAdapter"}
    assert crds["VLLMRuntime"] == yaml.safe_load(CRD.read_text())
    (deployment,) = [doc for (kind, _n), doc in operator.items() if kind == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    versions = yaml.safe_load((REPO / "versions.yml").read_text())
    assert pod["containers"][0]["image"] == versions["production_stack_operator_image"]
    assert restricted_violations(pod) == []
    assert operator[("Namespace", "production-stack-system")]["metadata"]["labels"][PSA_ENFORCE] == "restricted"
    assert fleet(cluster / "vllm-operator")["labels"]["gpu-cluster.cps/vllm-operator"] == "true"
    for name in ("qwen", "embed", "kimi"):
        selectors = [d["selector"]["matchLabels"] for d in fleet(cluster / name)["dependsOn"]]
        assert any(s.get("gpu-cluster.cps/vllm-operator") == "true" for s in selectors), name
    assert not (renders["deployment"] / "vllm-operator").exists()


def test_crd_validation_catches_mistakes():
    schema = crd_schema()
    bad = {"apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime", "metadata": {"name": "x"},
           "spec": {"model": {"modelURL": "a/b"}, "vllmConfig": {"tensorParallelSize": "8"},
                    "deploymentConfig": {"image": {"registry": "docker.io", "name": "x:1"}, "resources": {}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert undeclared({"model": {"modelURL": "a/b", "modelUrl": "a/b"}}, schema["properties"]["spec"]) == ["model.modelUrl"]


@pytest.mark.parametrize("gpu", [2, 4, 8])
def test_multi_gpu_kimi_objects_are_strict_valid_and_restricted(gpu):
    """The Deployment engine for Kimi K2.5 (cache PVC, token Secret, tensor parallelism) on bigger
    workers than the homelab's, straight from the module_utils (the homelab refuses it at preflight)."""
    models = yaml.safe_load((LLM_FIXTURES / "kimi-k2.5.yml").read_text())["gpu_cluster_llm_models"]
    kimi = dict(next(m for m in models if m["name"] == "kimi"), gpu=gpu)
    spec = vllm.vllm_spec(kimi)
    docs = vllm.vllm_manifests(spec)
    assert [d["kind"] for d in docs] == ["PersistentVolumeClaim", "Deployment", "Service", "Ingress"]
    for doc in docs:
        kubernetes_validate.validate(doc, inventory_k8s_version(HOMELAB), strict=True)
    pod = docs[1]["spec"]["template"]["spec"]
    assert restricted_violations(pod) == []
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert pod["containers"][0]["args"][pod["containers"][0]["args"].index("--tensor-parallel-size") + 1] == str(gpu)


def test_model_metrics_render_valid_against_the_prometheus_operator_crds(renders):
    """The homelab with gpu_cluster_llm_monitoring_enabled: the llm-monitoring bundle's custom
    resources valid against the prometheus-operator CRDs (unknown fields refused), its ConfigMap
    strict-valid, its PromQL parsed; the models' NetworkPolicy lets Prometheus in, and nothing else
    of the models changes."""
    cluster = renders["monitored"]
    watched = objects(cluster / "llm-monitoring")
    assert set(watched) == {("ServiceMonitor", "vllm-models"), ("PrometheusRule", "gpu-cluster-llm"),
                            ("ConfigMap", "gpu-cluster-llm-dashboard")}
    for (kind, _name), plural in ((("ServiceMonitor", "vllm-models"), "servicemonitors"),
                                  (("PrometheusRule", "gpu-cluster-llm"), "prometheusrules")):
        jsonschema.Draft202012Validator(monitoring_crd_schema(plural)).validate(watched[(kind, _name)])
    kubernetes_validate.validate(watched[("ConfigMap", "gpu-cluster-llm-dashboard")], inventory_k8s_version(HOMELAB),
                                 strict=True)
    assert fleet(cluster / "llm-monitoring")["defaultNamespace"] == "monitoring"
    on_monitoring = {"selector": {"matchLabels": {"gpu-cluster.cps/bundle": "monitoring", "gpu-cluster.cps/cluster": "homelab"}}}
    assert on_monitoring in fleet(cluster / "llm-monitoring")["dependsOn"]
    rules = watched[("PrometheusRule", "gpu-cluster-llm")]["spec"]["groups"][0]["rules"]
    assert sorted((r["alert"], r["labels"].get("model", "")) for r in rules) == [
        ("VLLMModelDown", "embed"), ("VLLMModelDown", "qwen"), ("VLLMQueueGrowing", "")]
    assert "> 40)" in rules[-1]["expr"]
    promql_parser = pytest.importorskip("promql_parser")
    for rule in rules:
        promql_parser.parse(rule["expr"])
    peers = objects(cluster / "namespace-llm")[("NetworkPolicy", "llm-ingress")]["spec"]["ingress"][0]["from"]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}} in peers
    # the models themselves are the plain render's, but for the GPU taint that render spells with another
    # key (OPERATIONS_SETTINGS, issue 44): their pods tolerate that one instead
    key = OPERATIONS_SETTINGS["gpu_cluster_gpu_taint"].partition("=")[0]
    for name in ("qwen", "embed"):
        monitored, plain = objects(cluster / name), objects(renders["deployment"] / name)
        pod = monitored[("Deployment", name)]["spec"]["template"]["spec"]
        assert pod["tolerations"] == [{"key": key, "operator": "Exists", "effect": "NoSchedule"}]
        pod["tolerations"] = plain[("Deployment", name)]["spec"]["template"]["spec"]["tolerations"]
        assert monitored == plain
    assert not (renders["deployment"] / "llm-monitoring").exists()
