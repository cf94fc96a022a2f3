"""JupyterHub profiles: generation on a CPU-only cluster, 2-GPU workers, mixed 1- and 4-GPU workers,
refused and dropped profiles, pool-backed profiles; the chart values, preflight and verify judging."""

from __future__ import annotations

import asyncio
import json
import shlex

import nativeauthenticator
import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import jupyterhub as j
from jupyterhub import orm
from nativeauthenticator.orm import UserInfo
from traitlets.config import Config

HOMELAB = {"wk-gpu1": 2, "wk-gpu2": 2, "wk-gpu3": 2, "wk-gpu4": 2}
MIXED = {"wk-small": 1, "wk-big": 4}
IMAGES = {"cpu": "quay.io/jupyter/scipy-notebook:2025-03-14", "pytorch": "nvcr.io/nvidia/pytorch:25.01-py3",
          "tensorflow": "nvcr.io/nvidia/tensorflow:25.01-tf2-py3"}
SCRATCH = {"size": "100Gi", "storage_class": "fast-scratch"}
POOLS = [
    {"name": "shared", "nodes": ["wk-gpu1"], "allocation": "timeslice", "replicas": 4, "renameByDefault": True,
     "namespaces": ["jupyterhub"]},
    {"name": "mig", "node_selector": {"example.org/mig": "true"}, "allocation": "mig", "mig_profile": "1g.10gb"},
    {"name": "whole", "nodes": ["wk-gpu2"], "allocation": "exclusive"},
    {"name": "llm-only", "nodes": ["wk-gpu3"], "allocation": "exclusive", "namespaces": ["llm"]},
]


def names(result):
    return [p["name"] for p in result["profiles"]]


def override(entry, pools=None):
    return j.kubespawner_override(j.profile_spec(entry, pools, images=IMAGES, scratch=SCRATCH))


# ----------------------------------------------------------------------------- generation
def test_cpu_only_cluster_offers_the_cpu_profile():
    result = j.resolve_profiles(None, {})
    assert names(result) == ["cpu"]
    assert result["refused"] == result["dropped"] == result["problems"] == []


def test_cpu_only_cluster_refuses_an_explicit_gpu_profile():
    result = j.resolve_profiles([{"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}], {})
    assert names(result) == ["cpu"]
    assert result["refused"] == ["gpu_cluster_jupyterhub_profiles: profile gpu-1 asks for 1 GPU(s) but gpu_workers "
                                 "has no nodes (a CPU-only cluster offers the CPU profile only)"]


def test_two_gpu_workers_refuse_the_default_4_gpu_profile_naming_the_largest_worker():
    result = j.resolve_profiles(None, HOMELAB)
    assert names(result) == ["cpu", "gpu-1", "gpu-2"]
    (message,) = result["refused"]
    assert message.startswith("gpu_cluster_jupyterhub_profiles: profile gpu-4 asks for 4 GPUs on one node, but the "
                              "largest worker of gpu_workers is wk-gpu1 with 2 GPU(s); offer at most gpu 2")
    assert "gpu_cluster_jupyterhub_drop_unsatisfiable_profiles: true" in message


def test_explicit_setting_drops_instead_of_refusing():
    result = j.resolve_profiles(None, HOMELAB, drop_unsatisfiable=True)
    assert names(result) == ["cpu", "gpu-1", "gpu-2"]
    assert result["refused"] == []
    assert len(result["dropped"]) == 1 and "profile gpu-4" in result["dropped"][0]


def test_reference_profiles_pass_on_two_gpu_workers():
    entries = [{"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}, {"name": "gpu-2", "gpu": 2}]
    result = j.resolve_profiles(entries, HOMELAB)
    assert names(result) == ["cpu", "gpu-1", "gpu-2"] and not result["refused"]


def test_mixed_1_and_4_gpu_workers_offer_every_default_and_refuse_8():
    result = j.resolve_profiles(None, MIXED)
    assert names(result) == ["cpu", "gpu-1", "gpu-2", "gpu-4"]
    result = j.resolve_profiles([{"name": "big", "gpu": 8}], MIXED)
    assert result["profiles"] == []
    assert "largest worker of gpu_workers is wk-big with 4 GPU(s); offer at most gpu 4" in result["refused"][0]


def test_all_dropped_is_a_problem():
    result = j.resolve_profiles([{"name": "big", "gpu": 4}], HOMELAB, drop_unsatisfiable=True)
    assert result["profiles"] == [] and result["dropped"]
    assert "no profile is left" in result["problems"][0]


@pytest.mark.parametrize("entry, message", [
    ({"name": "gpu-3", "gpu": 3}, "gpu is 3; use 0 (CPU only), 1, 2, 4 or 8"),
    ({"name": "GPU_1", "gpu": 1}, "name 'GPU_1' must be a short slug"),
    ({"name": "x", "gpu": 1, "cores": 4}, "unknown key(s) cores"),
    ({"name": "x", "gpu": 1, "image": "nvcr.io/nvidia/pytorch:latest"}, "must be pinned by tag or digest"),
    ({"name": "x", "gpu": 0, "pool": "shared"}, "pool 'shared' needs gpu of at least 1"),
    ({"name": "x", "gpu": 1, "pool": "nope"}, "pool 'nope' is not declared in gpu_cluster_gpu_pools (llm-only, mig, shared, whole)"),
])
def test_bad_entries(entry, message):
    result = j.resolve_profiles([entry], HOMELAB, POOLS)
    assert any(message in p for p in result["problems"]), result


def test_duplicate_names():
    result = j.resolve_profiles([{"name": "a", "gpu": 0}, {"name": "a", "gpu": 1}], HOMELAB)
    assert result["problems"] == ["gpu_cluster_jupyterhub_profiles: profile name a is used twice"]


# ----------------------------------------------------------------------------- overrides
def test_gpu_override_limit_toleration_selector_runtime_shm_scratch():
    o = override({"name": "gpu-2", "gpu": 2})
    assert o["extra_resource_limits"] == {"nvidia.com/gpu": "2"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in o["tolerations"]
    assert o["node_selector"] == {"gpu": "true"}
    assert o["extra_pod_config"] == {"runtimeClassName": "nvidia"}
    assert (o["cpu_guarantee"], o["cpu_limit"], o["mem_guarantee"], o["mem_limit"]) == (8.0, 16.0, "32G", "64G")
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in o["volumes"]
    scratch = next(v for v in o["volumes"] if v["name"] == "scratch")
    assert scratch["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "fast-scratch"
    assert {"name": "scratch", "mountPath": "/scratch"} in o["volume_mounts"]
    # the home volume is repeated exactly as the chart mounts it, since volumes replace the chart's list
    assert o["volumes"][0] == {"name": "volume-{user_server}", "persistentVolumeClaim": {"claimName": "{pvc_name}"}}
    assert "image" not in o  # two image choices: profile_options


def test_sizes_scale_with_the_gpu_count():
    rows = [override({"name": "p", "gpu": g}) for g in (0, 1, 2, 4)]
    guarantees = [r["cpu_guarantee"] for r in rows]
    assert guarantees == sorted(guarantees) and len(set(guarantees)) == 4
    shm = [next(v for v in r["volumes"] if v["name"] == "dshm")["emptyDir"]["sizeLimit"] for r in rows]
    assert shm == ["1Gi", "8Gi", "16Gi", "32Gi"]


def test_cpu_override_has_no_gpu_and_no_scratch():
    o = override({"name": "cpu", "gpu": 0})
    assert "extra_resource_limits" not in o and "tolerations" not in o and "extra_pod_config" not in o
    assert all(v["name"] != "scratch" for v in o["volumes"])
    assert o["image"] == IMAGES["cpu"]


def test_image_choices_and_per_profile_override():
    (entry,) = j.profile_list([{"name": "gpu-1", "gpu": 1}], images=IMAGES, scratch=SCRATCH)
    choices = entry["profile_options"]["image"]["choices"]
    assert {k: v["kubespawner_override"]["image"] for k, v in choices.items()} == {
        "pytorch": IMAGES["pytorch"], "tensorflow": IMAGES["tensorflow"]}
    assert entry["default"] is True
    (entry,) = j.profile_list([{"name": "gpu-1", "gpu": 1, "image": "registry.lan/pytorch:25.01"}], images=IMAGES)
    assert entry["kubespawner_override"]["image"] == "registry.lan/pytorch:25.01" and "profile_options" not in entry


def test_gpu_profiles_install_jupyterhub_only_when_missing():
    spec = j.profile_spec({"name": "g", "gpu": 1}, images=IMAGES, singleuser_package="jupyterhub==5.3.0")
    cmd = j.kubespawner_override(spec)["cmd"]
    assert cmd[:2] == ["sh", "-c"] and "command -v jupyterhub-singleuser" in cmd[2] and "'jupyterhub==5.3.0'" in cmd[2]
    assert cmd[2].endswith('exec jupyterhub-singleuser "$@"')
    assert "cmd" not in j.kubespawner_override(j.profile_spec({"name": "c", "gpu": 0}, images=IMAGES,
                                                              singleuser_package="jupyterhub==5.3.0"))


# ----------------------------------------------------------------------------- pools
def test_timeslice_pool_profile():
    o = override({"name": "shared", "gpu": 1, "pool": "shared"}, POOLS)
    assert o["extra_resource_limits"] == {"nvidia.com/gpu.shared": "1"}
    assert o["node_selector"] == {"gpu-cluster.cps/gpu-pool": "shared"}
    assert names(j.resolve_profiles([{"name": "s", "gpu": 1, "pool": "shared"}], HOMELAB, POOLS)) == ["s"]
    # a container gets at most one time-slice (failRequestsGreaterThanOne): more is refused, with why
    many = j.resolve_profiles([{"name": "s", "gpu": 2, "pool": "shared"}], HOMELAB, POOLS)
    assert names(many) == [] and "gpu is 2 but pool shared hands out timeslice" in many["problems"][0]
    assert "failRequestsGreaterThanOne" in many["problems"][0] and "use gpu: 1, or an exclusive pool" in many["problems"][0]
    refused = j.resolve_profiles([{"name": "w", "gpu": 4, "pool": "whole"}], HOMELAB, POOLS)["refused"]
    assert "largest worker of GPU pool whole is wk-gpu2 with 2 nvidia.com/gpu" in refused[0]


def test_mig_pool_profile_uses_the_mig_resource_and_the_pool_selector():
    o = override({"name": "mig", "gpu": 1, "pool": "mig"}, POOLS)
    assert o["extra_resource_limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert o["node_selector"] == {"example.org/mig": "true"}


def test_pool_reserved_for_other_namespaces_is_a_problem():
    result = j.resolve_profiles([{"name": "x", "gpu": 1, "pool": "llm-only"}], HOMELAB, POOLS)
    assert result["problems"] == ["gpu_cluster_jupyterhub_profiles: profile x: pool llm-only is reserved for "
                                  "namespace(s) llm, not jupyterhub; add jupyterhub to the pool's namespaces"]


def test_resolve_pool_contract():
    assert j.resolve_pool(POOLS, "nope") is None
    assert j.resolve_pool(POOLS, "whole")["resource"] == "nvidia.com/gpu"
    assert j.pool_capacity(j.resolve_pool(POOLS, "mig"), 2) == 14


# ----------------------------------------------------------------------------- values, objects
SETTINGS = {"namespace": "jupyterhub", "host": "jupyter.example.org", "auth": "native", "admin_users": ["admin"],
            "images": IMAGES, "llm_namespaces": ["llm"], "total_gpus": 8, "pause_image": "registry.k8s.io/pause:3.10.1"}


def test_the_image_puller_warms_every_gpu_image_on_the_gpu_workers_only():
    """Warm images (issue 30): the GPU profiles' images, each once, pulled on the GPU workers (the GPU
    node label, the GPU taint tolerated); the CPU image is not (CPU notebooks run anywhere)."""
    entries = [{"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}, {"name": "gpu-2", "gpu": 2},
               {"name": "custom", "gpu": 1, "image": "registry.lan/lab/notebook:1.0"}]
    puller = j.image_puller(SETTINGS, entries)
    spec = puller["spec"]["template"]["spec"]
    assert puller["kind"] == "DaemonSet" and puller["metadata"]["namespace"] == "jupyterhub"
    assert [c["image"] for c in spec["initContainers"]] == sorted(
        ["registry.lan/lab/notebook:1.0", IMAGES["pytorch"], IMAGES["tensorflow"]])
    assert all(c["command"] == ["sh", "-c", "exit 0"] for c in spec["initContainers"])
    assert spec["nodeSelector"] == {"gpu": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["containers"][0]["image"] == "registry.k8s.io/pause:3.10.1"
    assert "nvidia.com/gpu" not in json.dumps(spec["containers"]) + json.dumps(spec["initContainers"])
    # in the component's manifests, after the quota and the limits
    component = j.jupyterhub_component(SETTINGS, entries, {"repo": "r", "name": "jupyterhub", "version": "4.4.0", "release": "jupyterhub"})
    assert [o["kind"] for o in component["manifests"]] == ["ResourceQuota", "LimitRange", "DaemonSet"]


def test_no_image_puller_when_switched_off_or_without_gpu_profiles():
    gpu = [{"name": "gpu-1", "gpu": 1}]
    assert j.image_puller(dict(SETTINGS, prepull=False), gpu) is None
    assert j.image_puller(SETTINGS, [{"name": "cpu", "gpu": 0}]) is None
    with pytest.raises(ValueError, match="pause_image"):
        j.image_puller(dict(SETTINGS, pause_image=""), gpu)


def test_values_native_auth_culling_storage_ingress_network_policy():
    values = j.chart_values(SETTINGS, [{"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}])
    assert values["hub"]["config"]["JupyterHub"]["authenticator_class"] == "nativeauthenticator.NativeAuthenticator"
    assert values["hub"]["config"]["Authenticator"] == {"admin_users": ["admin"]}
    assert values["cull"]["timeout"] == 3600
    assert values["singleuser"]["storage"]["dynamic"]["storageClass"] == "nfs-client"
    assert values["singleuser"]["cloudMetadata"] == {"blockWithIptables": False}
    policy = values["singleuser"]["networkPolicy"]
    assert policy["egressAllowRules"]["privateIPs"] is False and policy["egressAllowRules"]["cloudMetadataServer"] is False
    assert policy["egress"][0]["to"][0]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "llm"}}
    assert values["ingress"]["hosts"] == ["jupyter.example.org"]
    # nothing issues a certificate here: HTTPS only all the same, with Traefik's default certificate
    assert values["ingress"]["tls"] == [{"hosts": ["jupyter.example.org"]}]
    assert values["ingress"]["annotations"] == {"traefik.ingress.kubernetes.io/router.entrypoints": "websecure"}
    assert values["hub"]["services"] == {"cps-verify": {}}  # its token: generated by the chart, never here


def test_tls_with_cert_manager_issuer():
    values = j.chart_values(dict(SETTINGS, cert_issuer="letsencrypt"), [{"name": "cpu", "gpu": 0}])
    # Traefik serves it on the HTTPS entrypoint only: no password over plain HTTP
    assert values["ingress"]["annotations"] == {"cert-manager.io/cluster-issuer": "letsencrypt",
                                                "traefik.ingress.kubernetes.io/router.entrypoints": "websecure"}
    assert values["ingress"]["tls"] == [{"hosts": ["jupyter.example.org"], "secretName": "jupyterhub-tls"}]
    other = j.chart_values(dict(SETTINGS, cert_issuer="letsencrypt", ingress_class="nginx"), [{"name": "cpu", "gpu": 0}])
    assert other["ingress"]["annotations"] == {"cert-manager.io/cluster-issuer": "letsencrypt"}


def test_tls_by_default_from_the_cluster_ca_when_management_installs_it():
    values = j.chart_values(dict(SETTINGS, management=True), [{"name": "cpu", "gpu": 0}])
    assert values["ingress"]["annotations"]["cert-manager.io/cluster-issuer"] == "gpu-cluster-ca"
    assert values["ingress"]["tls"] == [{"hosts": ["jupyter.example.org"], "secretName": "jupyterhub-tls"}]
    plain = j.chart_values(dict(SETTINGS, management=True, tls=False), [{"name": "cpu", "gpu": 0}])
    assert "tls" not in plain["ingress"] and "annotations" not in plain["ingress"]
    assert plain["ingress"]["hosts"] == ["jupyter.example.org"]


def test_hub_database_on_a_local_volume_on_the_state_node():
    values = j.chart_values(SETTINGS, [{"name": "cpu", "gpu": 0}])
    assert values["hub"]["db"] == {"type": "sqlite-pvc", "pvc": {
        "storageClassName": "local-path", "annotations": {"helm.sh/resource-policy": "keep"}}}
    assert values["hub"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": "true"}
    infra = j.chart_values(dict(SETTINGS, infra=True, state_storage_class="local-ssd"), [{"name": "cpu", "gpu": 0}])
    assert infra["hub"]["db"]["pvc"]["storageClassName"] == "local-ssd"
    assert infra["hub"]["nodeSelector"] == {"node-role.kubernetes.io/infra": "true"}
    assert infra["hub"]["tolerations"] == [{"key": "node-role.kubernetes.io/infra", "operator": "Equal",
                                           "value": "true", "effect": "NoSchedule"}]


# ----------------------------------------------------------------------------- the admins exist before sign-up
ADMIN_PASSWORD = "first-admin-password-42"


def _hub_authenticator(values, db):
    """The authenticator the hub builds from the chart values, the way the chart's jupyterhub_config.py
    does (tests/fixtures/charts/helm/jupyterhub-4.4.0/files/hub/jupyterhub_config.py: hub.config
    sections, then hub.extraConfig in key order), against a real hub database."""
    config = Config()
    for section, cfg in values["hub"]["config"].items():
        config[section].update(cfg)
    for _key, code in sorted((values["hub"].get("extraConfig") or {}).items()):
        exec(compile(code, "extraConfig", "exec"), {"c": config})  # the chart's jupyterhub_config.py does the same
    cls = config.JupyterHub.authenticator_class
    if isinstance(cls, str):
        cls = nativeauthenticator.NativeAuthenticator
    return cls(config=config, _deprecated_db_session=db)


@pytest.fixture
def hub_db(tmp_path):
    return orm.new_session_factory("sqlite:///%s" % (tmp_path / "jupyterhub.sqlite"))()


def test_admin_accounts_exist_before_sign_up_and_nobody_can_claim_them(hub_db, monkeypatch):
    values = j.chart_values(SETTINGS, [{"name": "cpu", "gpu": 0}])
    assert values["hub"]["extraEnv"]["CPS_JUPYTERHUB_ADMIN_PASSWORD"] == {"valueFrom": {"secretKeyRef": {
        "name": "jupyterhub-admin", "key": "password"}}}
    monkeypatch.setenv("CPS_JUPYTERHUB_ADMIN_PASSWORD", ADMIN_PASSWORD)
    auth = _hub_authenticator(values, hub_db)
    assert type(auth).__name__ == "CpsNativeAuthenticator" and auth.open_signup is False
    admin = UserInfo.find(hub_db, "admin")
    assert admin is not None and admin.is_authorized and admin.is_valid_password(ADMIN_PASSWORD)
    # whoever signs up first under the admin's name gets nothing
    assert auth.create_user("admin", "attacker-password-1234") is None
    assert asyncio.run(auth.authenticate(None, {"username": "admin", "password": "attacker-password-1234"})) is None
    assert asyncio.run(auth.authenticate(None, {"username": "admin", "password": ADMIN_PASSWORD})) == "admin"
    # a new user signs up unauthorized (an admin approves at /hub/authorize)
    assert auth.create_user("alice", "alice-password-1234").is_authorized is False
    # a restart keeps the admin's own (changed) password
    auth.change_password("admin", "changed-by-the-admin-1")
    monkeypatch.setenv("CPS_JUPYTERHUB_ADMIN_PASSWORD", "another-first-password")
    _hub_authenticator(values, hub_db)
    assert UserInfo.find(hub_db, "admin").is_valid_password("changed-by-the-admin-1")


def test_without_the_seeding_the_first_sign_up_claims_the_admin(hub_db):
    """What the seeding prevents: NativeAuthenticator alone pre-authorizes an admin name for
    whoever signs up with it first (the values before this change)."""
    values = j.chart_values(SETTINGS, [{"name": "cpu", "gpu": 0}])
    del values["hub"]["extraConfig"]["cps-native-admins"]
    auth = _hub_authenticator(values, hub_db)
    assert auth.create_user("admin", "attacker-password-1234").is_authorized is True


def test_the_hub_does_not_start_without_a_first_password(hub_db, monkeypatch):
    values = j.chart_values(SETTINGS, [{"name": "cpu", "gpu": 0}])
    monkeypatch.setenv("CPS_JUPYTERHUB_ADMIN_PASSWORD", "short")
    with pytest.raises(SystemExit, match="at least 12 characters"):
        _hub_authenticator(values, hub_db)


def test_oauth_secret_only_by_reference():
    settings = dict(SETTINGS, auth="github", oauth={"client_id": "abc", "allowed_organizations": ["cps"]})
    values = j.chart_values(settings, [{"name": "cpu", "gpu": 0}])
    assert values["hub"]["config"]["GitHubOAuthenticator"] == {
        "client_id": "abc", "oauth_callback_url": "https://jupyter.example.org/hub/oauth_callback",
        "allowed_organizations": ["cps"]}
    assert values["hub"]["extraEnv"] == {"OAUTH_CLIENT_SECRET": {"valueFrom": {"secretKeyRef": {
        "name": "jupyterhub-oauth", "key": "client-secret"}}}}
    secret = j.oauth_secret(settings, "s3cr3t")
    assert secret["stringData"] == {"client-secret": "s3cr3t"} and "s3cr3t" not in repr(values)


def test_quota_and_limit_range():
    quota, limits = j.namespace_objects(SETTINGS, [{"name": "cpu", "gpu": 0}, {"name": "g", "gpu": 2}])
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    assert limits["spec"]["limits"][0]["max"] == {"cpu": "16", "memory": "64Gi"}
    quota, _limits = j.namespace_objects(dict(SETTINGS, quota={"gpu": 6}), [{"name": "g", "gpu": 2}])
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "6"


def test_component_namespace_is_baseline():
    component = j.jupyterhub_component(SETTINGS, [{"name": "cpu", "gpu": 0}],
                                       {"repo": "https://hub.jupyter.org/helm-chart/", "name": "jupyterhub",
                                        "version": "4.4.0", "release": "jupyterhub"})
    assert component["name"] == "jupyterhub"
    assert set(component["namespace_labels"].values()) == {"baseline"}
    assert [m["kind"] for m in component["manifests"]] == ["ResourceQuota", "LimitRange"]


# ----------------------------------------------------------------------------- preflight
def inventory(**variables):
    groups = {"all": ["cp1", "wk-gpu1", "wk-gpu2"], "gpu_workers": ["wk-gpu1", "wk-gpu2"]}
    common = dict({"gpu_cluster_jupyterhub_enabled": True, "gpu_cluster_jupyterhub_admin_users": ["admin"]}, **variables)
    hostvars = {"cp1": dict(common), "wk-gpu1": dict(common, gpu_cluster_gpu_count=2),
                "wk-gpu2": dict(common, gpu_cluster_gpu_count=2)}
    return groups, hostvars


def test_preflight_off_when_not_enabled():
    groups, hostvars = inventory(gpu_cluster_jupyterhub_enabled=False, gpu_cluster_jupyterhub_auth="nonsense")
    assert j.jupyterhub_problems(groups, hostvars) == [] and j.jupyterhub_warnings(groups, hostvars) == []


def test_preflight_refuses_4_gpus_and_passes_with_the_reference_profiles():
    problems = j.jupyterhub_problems(*inventory())
    assert len(problems) == 1 and "largest worker of gpu_workers is wk-gpu1 with 2 GPU(s)" in problems[0]
    assert j.jupyterhub_problems(*inventory(gpu_cluster_jupyterhub_profiles=[
        {"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}, {"name": "gpu-2", "gpu": 2}])) == []


def test_preflight_drop_is_a_warning():
    groups, hostvars = inventory(gpu_cluster_jupyterhub_drop_unsatisfiable_profiles=True)
    assert j.jupyterhub_problems(groups, hostvars) == []
    (warning,) = j.jupyterhub_warnings(groups, hostvars)
    assert "profile gpu-4" in warning and warning.endswith("(dropped)")


def test_preflight_dummy_needs_the_insecure_lab_switch_and_warns_loudly():
    problems = j.jupyterhub_problems(*inventory(gpu_cluster_jupyterhub_auth="dummy", gpu_cluster_jupyterhub_drop_unsatisfiable_profiles=True))
    assert any("needs gpu_cluster_jupyterhub_insecure_lab: true" in p for p in problems)
    groups, hostvars = inventory(gpu_cluster_jupyterhub_auth="dummy", gpu_cluster_jupyterhub_insecure_lab=True,
                                 gpu_cluster_jupyterhub_drop_unsatisfiable_profiles=True)
    assert j.jupyterhub_problems(groups, hostvars) == []
    assert j.jupyterhub_warnings(groups, hostvars)[0].startswith("!!! INSECURE: JupyterHub uses the dummy authenticator")


@pytest.mark.parametrize("variables, message", [
    ({"gpu_cluster_jupyterhub_auth": "ldap"}, "gpu_cluster_jupyterhub_auth is 'ldap'; use native, github, generic-oauth or dummy"),
    ({"gpu_cluster_jupyterhub_auth": "github"}, "gpu_cluster_jupyterhub_oauth lacks client_id"),
    ({"gpu_cluster_jupyterhub_admin_users": []}, "nobody could approve a sign-up"),
    ({"gpu_cluster_jupyterhub_host": "Jupyter_Hub"}, "gpu_cluster_jupyterhub_host is 'Jupyter_Hub'; use a DNS name"),
    ({"gpu_cluster_jupyterhub_cull_timeout": 10}, "gpu_cluster_jupyterhub_cull_timeout is 10"),
    ({"gpu_cluster_jupyterhub_quota": {"gpus": 4}}, "gpu_cluster_jupyterhub_quota is {'gpus': 4}"),
    ({"gpu_cluster_jupyterhub_admin_password": "short"}, "gpu_cluster_jupyterhub_admin_password is too short"),
    ({"gpu_cluster_jupyterhub_tls": "yes"}, "gpu_cluster_jupyterhub_tls is 'yes'; use true or false"),
])
def test_preflight_settings(variables, message):
    problems = j.jupyterhub_problems(*inventory(gpu_cluster_jupyterhub_drop_unsatisfiable_profiles=True, **variables))
    assert any(message in p for p in problems), problems


@pytest.mark.parametrize("variables", [
    {"gpu_cluster_management_enabled": True},
    {"gpu_cluster_jupyterhub_cert_issuer": "letsencrypt"},
    {"gpu_cluster_jupyterhub_tls": False},
])
def test_preflight_tls_has_an_issuer_or_is_switched_off(variables):
    hub = inventory(gpu_cluster_jupyterhub_profiles=[{"name": "cpu", "gpu": 0}],
                    gpu_cluster_jupyterhub_host="jupyter.example.org", **variables)
    assert j.jupyterhub_problems(*hub) == [] and j.jupyterhub_warnings(*hub) == []


def test_preflight_warns_when_nothing_issues_the_hub_certificate():
    hub = inventory(gpu_cluster_jupyterhub_profiles=[{"name": "cpu", "gpu": 0}], gpu_cluster_jupyterhub_host="jupyter.example.org")
    assert j.jupyterhub_problems(*hub) == []
    (warning,) = j.jupyterhub_warnings(*hub)
    assert warning.startswith("JupyterHub (gpu_cluster_jupyterhub_host) is served over HTTPS with the ingress "
                              "controller's self-signed default certificate")


def test_preflight_never_prints_the_admin_password():
    problems = j.jupyterhub_problems(*inventory(gpu_cluster_jupyterhub_drop_unsatisfiable_profiles=True,
                                                gpu_cluster_jupyterhub_admin_password="s3cret-x"))
    assert problems and not any("s3cret-x" in p for p in problems)


# ----------------------------------------------------------------------------- verify
def test_verify_plan_has_one_step_per_gpu_profile():
    entries = [{"name": "cpu", "gpu": 0}, {"name": "gpu-1", "gpu": 1}, {"name": "s", "gpu": 2, "pool": "shared"}]
    assert j.verify_plan(entries, POOLS) == [{"profile": "gpu-1", "gpu": 1, "resource": "nvidia.com/gpu"},
                                             {"profile": "s", "gpu": 2, "resource": "nvidia.com/gpu.shared"}]


def test_api_command_is_one_shell_safe_command_without_the_token():
    command = j.hub_api_command("POST", "/users/u/server", {"profile": "gpu-1"})
    argv = shlex.split(command)
    assert argv[0:2] == ["python3", "-c"] and argv[3:] == ["POST", "/users/u/server", '{"profile": "gpu-1"}']
    assert "hub.services.cps-verify.apiToken" in argv[2]
    compile(argv[2], "hub_api", "exec")
    assert shlex.split(j.hub_api_command("GET", "/users/u"))[-1] == ""


def test_parse_api_output():
    assert j.parse_api_output('200 {"name": "u"}\n') == (200, '{"name": "u"}')
    assert j.parse_api_output("Traceback ...") == (0, "Traceback ...")


def test_server_ready():
    assert j.server_ready('200 {"servers": {"": {"ready": true}}}') is True
    assert j.server_ready('200 {"servers": {"": {"ready": false, "pending": "spawn"}}}') is False
    assert j.server_ready('200 {"servers": {}}') is False
    assert j.server_ready('404 {"status": 404}') is False
    assert j.server_ready("200 not json") is False


def pod(node, gpus, resource="nvidia.com/gpu"):
    return {"spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {"limits": {resource: gpus}}}]}}


def test_judge_pod():
    step = {"profile": "gpu-2", "gpu": 2, "resource": "nvidia.com/gpu"}
    assert j.judge_pod(step, pod("wk-gpu1", "2"), ["wk-gpu1"]) == (True, "on wk-gpu1 with 2 nvidia.com/gpu")
    assert j.judge_pod(step, pod("cp1", "2"), ["wk-gpu1"])[0] is False
    assert j.judge_pod(step, pod("wk-gpu1", "1"), ["wk-gpu1"]) == (False, "pod on wk-gpu1 has 1 nvidia.com/gpu, expected 2")


def test_judge_nvidia_smi():
    step = {"profile": "gpu-2", "gpu": 2, "resource": "nvidia.com/gpu"}
    two = "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-a)\nGPU 1: NVIDIA A100 80GB PCIe (UUID: GPU-b)\n"
    assert j.judge_nvidia_smi(step, two)[0] is True
    assert j.judge_nvidia_smi(step, two.splitlines()[0])[0] is False
    mig = {"profile": "m", "gpu": 1, "resource": "nvidia.com/mig-1g.10gb"}
    out = "GPU 0: NVIDIA A100 (UUID: GPU-a)\n  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n"
    assert j.judge_nvidia_smi(mig, out) == (True, "nvidia-smi -L lists 1: MIG 1g.10gb     Device  0: (UUID: MIG-x)")


def test_rows():
    assert j.row("jupyterhub pod", "profile gpu-1", True, "ok") == {
        "check": "jupyterhub pod", "target": "profile gpu-1", "status": "PASS", "detail": "ok"}
    assert j.skipped_row("jupyterhub", "jupyterhub", "fleet")["status"] == "SKIPPED"
