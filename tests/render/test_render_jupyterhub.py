"""JupyterHub rendered by playbooks/render.yml: the homelab's jupyterhub/ bundle, and a variant with a
time-sliced GPU pool profile, GitHub OAuth and cert-manager TLS.

* the chart values, merged over the chart's values.yaml, validate against the chart's own values
  schema (tests/fixtures/charts/zero-to-jupyterhub-4.4.0, additionalProperties: false: strict);
* for every profile (and every image choice of it) the real KubeSpawner builds the pod: a KubeSpawner
  configured from the values the way the chart's hub configures it, the profile chosen through
  ``load_user_options`` (KubeSpawner's own profile and ``kubespawner_override`` handling), and
  ``get_pod_manifest`` (which calls ``kubespawner.objects.make_pod``); the Pod validates strictly
  against the Kubernetes schema of the cluster's version, with the GPU limit, toleration, selector,
  runtime class, home, /dev/shm and /scratch checked;
* the ResourceQuota and LimitRange validate; the namespace enforces baseline and every pod passes it;
* no secret is written to the bundle.
"""

from __future__ import annotations

import asyncio
import copy
import json

import jsonschema
import kubernetes_validate
import pytest
import yaml
from test_render_components import CHARTS, HOMELAB, fleet, inventory_k8s_version, manifests

kubespawner = pytest.importorskip("kubespawner", reason="jupyterhub-kubespawner (requirements-dev.txt) is needed")
from kubernetes_asyncio.client import ApiClient  # noqa: E402  (installed with kubespawner)
from traitlets.config import Config  # noqa: E402

CHART = CHARTS / "zero-to-jupyterhub-4.4.0"
SECRET_MARKER = "render-test-oauth-secret-0123456789"
VARIANT = {
    "gpu_cluster_gpu_pools": [{"name": "shared", "nodes": ["wk-gpu1", "wk-gpu2"], "allocation": "timeslice",
                               "replicas": 4, "renameByDefault": True}],
    "gpu_cluster_jupyterhub_profiles": [
        {"name": "cpu", "gpu": 0},
        {"name": "gpu-1", "gpu": 1, "image": "registry.lan/nvidia/pytorch:25.01-py3"},
        {"name": "shared-1", "gpu": 1, "pool": "shared", "default": True},
        {"name": "gpu-4", "gpu": 4},
    ],
    "gpu_cluster_jupyterhub_drop_unsatisfiable_profiles": True,
    "gpu_cluster_jupyterhub_auth": "github",
    "gpu_cluster_jupyterhub_oauth": {"client_id": "abc123", "allowed_organizations": ["cps"]},
    "gpu_cluster_jupyterhub_oauth_client_secret": SECRET_MARKER,
    "gpu_cluster_jupyterhub_cert_issuer": "letsencrypt",
    "gpu_cluster_jupyterhub_named_servers": True,
    # the homelab's models, on whole GPUs: this variant's only pool is "shared" (the homelab's embed names
    # the pool inference, which preflight requires to exist)
    "gpu_cluster_llm_models": [dict((k, v) for k, v in model.items() if k != "pool")
                               for model in yaml.safe_load((HOMELAB / "group_vars" / "all" / "llm.yml").read_text())
                               ["gpu_cluster_llm_models"]],
}
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: render, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: render, user: {token: render-only}}]
contexts: [{name: render, context: {cluster: render, user: render}}]
current-context: render
"""


RENDERS = {"homelab": (HOMELAB,), "variant": (HOMELAB, json.dumps(VARIANT))}
RENDERS_USED = list(RENDERS.values())  # started with the session (conftest.py)


@pytest.fixture(scope="module")
def renders(renders_cache):
    return {name: renders_cache.get(*args) for name, args in RENDERS.items()}


def bundle(renders, name):
    return renders[name][0] / "homelab" / "jupyterhub"


def values_of(renders, name):
    return fleet(bundle(renders, name))["helm"]["values"]


def merge(base, override):
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def chart_schema():
    return yaml.safe_load((CHART / "values.schema.yaml").read_text())


def chart_defaults():
    return yaml.safe_load((CHART / "values.yaml").read_text())


# ----------------------------------------------------------------------------- values schema
@pytest.mark.parametrize("name", ["homelab", "variant"])
def test_values_validate_strictly_against_the_chart_schema(renders, name):
    merged = merge(chart_defaults(), values_of(renders, name))
    jsonschema.Draft7Validator(chart_schema()).validate(merged)


def test_schema_is_strict():
    merged = merge(chart_defaults(), {"singleuser": {"storage": {"capcity": "10Gi"}}})
    with pytest.raises(jsonschema.ValidationError, match="capcity"):
        jsonschema.Draft7Validator(chart_schema()).validate(merged)


# ----------------------------------------------------------------------------- the spawner builds every pod
def spawner_config(values):
    """A KubeSpawner Config from chart values, as the chart's hub (jupyterhub_config.py) maps the
    settings these values use."""
    su = values["singleuser"]
    c = Config()
    k = c.KubeSpawner
    k.namespace = "jupyterhub"
    k.image = "{}:{}".format(su["image"]["name"], su["image"]["tag"])
    k.cmd = su["cmd"]
    k.uid = su["uid"]
    k.fs_gid = su["fsGid"]
    k.allow_privilege_escalation = su["allowPrivilegeEscalation"]
    k.start_timeout = su["startTimeout"]
    k.cpu_guarantee, k.cpu_limit = su["cpu"]["guarantee"], su["cpu"]["limit"]
    k.mem_guarantee, k.mem_limit = su["memory"]["guarantee"], su["memory"]["limit"]
    k.extra_labels = dict(su["extraLabels"])
    k.node_selector = dict(su.get("nodeSelector") or {})
    k.tolerations = list(values["scheduling"]["userPods"]["tolerations"]) + list(su.get("extraTolerations") or [])
    storage = su["storage"]
    assert storage["type"] == "dynamic"
    k.storage_pvc_ensure = True
    k.storage_class = storage["dynamic"]["storageClass"]
    k.storage_capacity = storage["capacity"]
    volume = storage["dynamic"]["volumeNameTemplate"]
    k.volumes = [{"name": volume, "persistentVolumeClaim": {"claimName": "{pvc_name}"}}, *list(storage["extraVolumes"] or [])]
    k.volume_mounts = [{"mountPath": storage["homeMountPath"], "name": volume}, *list(storage["extraVolumeMounts"] or [])]
    k.profile_list = su["profileList"]
    return c


def choices(profile):
    options = (profile.get("profile_options") or {}).get("image")
    return list(options["choices"]) if options else [None]


def build_pod(values, slug, choice, tmp_path, monkeypatch):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)  # KubeSpawner loads a client config; nothing is contacted
    # read at import time from $KUBECONFIG by kubernetes_asyncio: point its default at our file
    monkeypatch.setattr("kubernetes_asyncio.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))

    async def build():
        spawner = kubespawner.KubeSpawner(config=spawner_config(values), _mock=True)
        spawner.user_options = {"profile": slug, **({"image": choice} if choice else {})}
        await spawner.load_user_options()
        return await spawner.get_pod_manifest()

    pod = asyncio.run(build())
    return ApiClient.sanitize_for_serialization(ApiClient.__new__(ApiClient), pod)


BASELINE_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}


def baseline_violations(spec):
    problems = [f for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]
    for volume in spec.get("volumes") or []:
        if not set(volume) - {"name"} <= BASELINE_VOLUMES:
            problems.append(f"volume {volume['name']}")
    for container in spec["containers"] + (spec.get("initContainers") or []):
        sc = container.get("securityContext") or {}
        if sc.get("privileged") or (sc.get("capabilities") or {}).get("add"):
            problems.append(f"{container['name']} privileged or adds capabilities")
    return problems


def every_profile(renders):
    for name in ("homelab", "variant"):
        for profile in values_of(renders, name)["singleuser"]["profileList"]:
            for choice in choices(profile):
                yield name, profile, choice


def test_every_override_key_is_a_kubespawner_trait(renders):
    """KubeSpawner sets any attribute an override names; a misspelt one would be silently ignored."""
    traits = set(kubespawner.KubeSpawner.class_trait_names())
    for name, profile, _choice in every_profile(renders):
        overrides = [profile["kubespawner_override"]] + [
            c["kubespawner_override"] for o in (profile.get("profile_options") or {}).values() for c in o["choices"].values()]
        for override in overrides:
            assert set(override) <= traits, (name, profile["slug"], set(override) - traits)


# the label selector of the notebook servers, from the role that deletes them
ROLE_VARS = yaml.safe_load((HOMELAB.parents[1] / "roles" / "jupyterhub" / "vars" / "main.yml").read_text())
USER_PODS = ROLE_VARS["__jupyterhub_user_pods"]


def test_every_profile_pod_is_built_by_kubespawner_and_valid(renders, tmp_path, monkeypatch):
    version = inventory_k8s_version(HOMELAB)
    built = []
    for name, profile, choice in every_profile(renders):
        values = merge(chart_defaults(), values_of(renders, name))
        pod = build_pod(values, profile["slug"], choice, tmp_path, monkeypatch)
        pod["metadata"]["namespace"] = "jupyterhub"
        where = f"{name} profile {profile['slug']} {choice or ''}"
        try:
            kubernetes_validate.validate(pod, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")
        assert baseline_violations(pod["spec"]) == [], where
        check_pod(pod, profile, choice, where)
        # removing a switched-off hub deletes the notebook servers by this selector (roles/jupyterhub/tasks/remove.yml)
        key, value = USER_PODS.split("=")
        assert pod["metadata"]["labels"][key] == value, where
        built.append(where)
    # homelab: cpu, gpu-1 x2 images, gpu-2 x2, shared-1 x2; variant: cpu, gpu-1 (one image), shared-1 x2 (gpu-4 dropped)
    assert len(built) == 11, built


def check_pod(pod, profile, choice, where):
    spec = pod["spec"]
    (container,) = spec["containers"]
    limits = container["resources"]["limits"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    override = profile["kubespawner_override"]
    gpu_resources = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
    assert mounts["/home/jovyan"].startswith("volume-") and \
        volumes[mounts["/home/jovyan"]]["persistentVolumeClaim"]["claimName"].startswith("claim-"), where
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory", where
    if profile["slug"] == "cpu":
        assert gpu_resources == {} and "runtimeClassName" not in spec and "/scratch" not in mounts, where
        assert container["image"].startswith("quay.io/jupyter/scipy-notebook:"), where
        return
    expected = override["extra_resource_limits"]
    assert gpu_resources == expected and list(expected.values()) != ["0"], where
    assert spec["runtimeClassName"] == "nvidia", where
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"], where
    assert spec["nodeSelector"] == override["node_selector"], where
    scratch = volumes[mounts["/scratch"]]["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert scratch["storageClassName"] == "fast-scratch", where
    gpus = int(next(iter(expected.values())))
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["sizeLimit"] == {1: "8Gi", 2: "16Gi", 4: "32Gi"}[gpus], where
    if choice == "pytorch":
        assert container["image"].startswith("nvcr.io/nvidia/pytorch:"), where
    elif choice == "tensorflow":
        assert container["image"].startswith("nvcr.io/nvidia/tensorflow:"), where
    # NGC images lack jupyterhub-singleuser: the start command installs it when missing
    assert container["args"][:2] == ["sh", "-c"] and "jupyterhub-singleuser" in container["args"][2], where


def test_homelab_profiles_are_cpu_1_and_2_gpus_and_a_time_sliced_share(renders):
    # inventories/homelab/group_vars/all/jupyterhub.yml: shared-1 on the time-sliced pool notebooks (issue 43:
    # each pool of the reference homelab serves a workload)
    profiles = values_of(renders, "homelab")["singleuser"]["profileList"]
    assert [p["slug"] for p in profiles] == ["cpu", "gpu-1", "gpu-2", "shared-1"]
    assert profiles[0].get("default") is True
    shared = profiles[3]["kubespawner_override"]
    assert shared["extra_resource_limits"] == {"nvidia.com/gpu.shared": "1"}
    assert shared["node_selector"] == {"gpu-cluster.cps/gpu-pool": "notebooks"}


def test_variant_pool_profile_and_dropped_profile(renders):
    values = values_of(renders, "variant")
    profiles = {p["slug"]: p for p in values["singleuser"]["profileList"]}
    assert set(profiles) == {"cpu", "gpu-1", "shared-1"}
    shared = profiles["shared-1"]["kubespawner_override"]
    assert shared["extra_resource_limits"] == {"nvidia.com/gpu.shared": "1"}
    assert shared["node_selector"] == {"gpu-cluster.cps/gpu-pool": "shared"}
    assert profiles["shared-1"]["default"] is True
    output = renders["variant"][1]
    assert "profile gpu-4 asks for 4 GPUs on one node, but the largest worker of gpu_workers is wk-gpu1" in output
    assert "(dropped)" in output


# ----------------------------------------------------------------------------- objects, secrets, auth
@pytest.mark.parametrize("name", ["homelab", "variant"])
def test_namespace_objects_are_valid(renders, name):
    version = inventory_k8s_version(HOMELAB)
    found = manifests(bundle(renders, name))
    assert sorted(d["kind"] for _p, d in found) == ["DaemonSet", "LimitRange", "Namespace", "ResourceQuota"]
    for path, doc in found:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {exc.message} at {list(exc.path)}")
    namespace = next(d for _p, d in found if d["kind"] == "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert fleet(bundle(renders, name))["namespaceLabels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_the_gpu_profiles_images_are_warm_on_the_gpu_workers(renders):
    """Warm images (issue 30): the puller pulls exactly the images the rendered GPU profiles offer, on the
    GPU workers (their label, their taint tolerated), meeting Pod Security restricted."""
    for name in ("homelab", "variant"):
        puller = next(d for _p, d in manifests(bundle(renders, name)) if d["kind"] == "DaemonSet")
        spec = puller["spec"]["template"]["spec"]
        offered = set()
        for profile in values_of(renders, name)["singleuser"]["profileList"]:
            if not profile["kubespawner_override"].get("extra_resource_limits"):
                continue
            offered.update(c["kubespawner_override"]["image"]
                           for o in (profile.get("profile_options") or {}).values() for c in o["choices"].values())
            if profile["kubespawner_override"].get("image"):
                offered.add(profile["kubespawner_override"]["image"])
        assert offered and {c["image"] for c in spec["initContainers"]} == offered, name
        assert spec["nodeSelector"] == {"gpu": "true"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
        assert baseline_violations(spec) == []
        assert puller["metadata"]["name"] == ROLE_VARS["__jupyterhub_image_puller"]  # what removing the hub deletes
        for container in spec["initContainers"] + spec["containers"]:
            assert container["securityContext"]["runAsNonRoot"] and container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_quota_from_the_inventory(renders):
    quota = next(d for _p, d in manifests(bundle(renders, "homelab")) if d["kind"] == "ResourceQuota")
    # the homelab's gpu_cluster_jupyterhub_quota gpu: 4, for each GPU resource its profiles use (no more than the
    # pool training's 4 whole GPUs; 4 of the pool notebooks' 8 shares)
    assert quota["spec"]["hard"] == {"requests.cpu": "96", "requests.memory": "512Gi", "persistentvolumeclaims": "100",
                                     "requests.nvidia.com/gpu": "4", "requests.nvidia.com/gpu.shared": "4"}
    quota = next(d for _p, d in manifests(bundle(renders, "variant")) if d["kind"] == "ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == "4"


def test_no_secret_in_the_bundle(renders):
    for name in ("homelab", "variant"):
        for path in bundle(renders, name).rglob("*"):
            text = path.read_text() if path.is_file() else ""
            assert SECRET_MARKER not in text, path
            assert "kind: Secret" not in text, path
    values = values_of(renders, "variant")
    for key in ("cookieSecret", "existingSecret"):
        assert not values["hub"].get(key)
    assert not values["proxy"].get("secretToken")
    assert values["hub"]["services"] == {"cps-verify": {}}
    assert values["hub"]["extraEnv"]["OAUTH_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "jupyterhub-oauth"


def test_auth_ingress_culling(renders):
    homelab, variant = values_of(renders, "homelab"), values_of(renders, "variant")
    assert homelab["hub"]["config"]["JupyterHub"]["authenticator_class"] == "nativeauthenticator.NativeAuthenticator"
    assert homelab["hub"]["config"]["Authenticator"]["admin_users"] == ["admin"]
    # TLS by default from the cluster CA the management phase installs; HTTPS only
    assert homelab["ingress"] == {"enabled": True, "ingressClassName": "traefik", "hosts": ["jupyter.127.0.0.1.nip.io"],
                                  "annotations": {"cert-manager.io/cluster-issuer": "gpu-cluster-ca",
                                                  "traefik.ingress.kubernetes.io/router.entrypoints": "websecure"},
                                  "tls": [{"hosts": ["jupyter.127.0.0.1.nip.io"], "secretName": "jupyterhub-tls"}]}
    # the admin's account is created by the hub at start from the Secret (never in the bundle)
    assert "cps-native-admins" in homelab["hub"]["extraConfig"]
    assert homelab["hub"]["extraEnv"]["CPS_JUPYTERHUB_ADMIN_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "jupyterhub-admin", "key": "password"}
    # its database on a local volume on a server (the homelab has no infra nodes), not on NFS
    assert homelab["hub"]["db"] == {"type": "sqlite-pvc", "pvc": {
        "storageClassName": "local-path", "annotations": {"helm.sh/resource-policy": "keep"}}}
    assert homelab["hub"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": "true"}
    assert homelab["cull"]["timeout"] == 3600 and homelab["cull"]["enabled"] is True
    assert variant["hub"]["config"]["GitHubOAuthenticator"]["oauth_callback_url"] == \
        "https://jupyter.127.0.0.1.nip.io/hub/oauth_callback"
    assert variant["ingress"]["tls"] == [{"hosts": ["jupyter.127.0.0.1.nip.io"], "secretName": "jupyterhub-tls"}]
    assert variant["hub"]["allowNamedServers"] is True


def test_network_policy_allows_the_llm_endpoints_and_blocks_metadata(renders):
    policy = values_of(renders, "homelab")["singleuser"]["networkPolicy"]
    assert policy["enabled"] is True
    assert policy["egressAllowRules"]["privateIPs"] is False
    assert policy["egressAllowRules"]["cloudMetadataServer"] is False
    (rule,) = policy["egress"]
    assert rule["to"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "llm"}
    assert rule["ports"] == [{"port": 8000, "protocol": "TCP"}]
    # the iptables blocker needs a privileged init container, which baseline refuses
    assert values_of(renders, "homelab")["singleuser"]["cloudMetadata"]["blockWithIptables"] is False
