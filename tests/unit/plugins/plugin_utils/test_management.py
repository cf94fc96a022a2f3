"""Management phase logic: chart values, GitRepo, credentials Secrets, bundle order, masking."""

from __future__ import annotations

import base64

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import management as m

SETTINGS = {
    "mode": "rancher",
    "servers": 3,
    "ingress_class": "traefik",
    "cert_manager": {"repo": "https://charts.jetstack.io", "version": "v1.19.6", "namespace": "cert-manager", "values": {}},
    "rancher": {"repo": "https://releases.rancher.com/server-charts/stable", "version": "2.14.4",
                "hostname": "rancher.homelab.lan", "tls_source": "rancher", "letsencrypt_email": "", "values": {}},
    "fleet": {"repo": "https://rancher.github.io/fleet-helm-charts/", "version": "0.15.6",
              "namespace": "cattle-fleet-system", "values": {}},
}


def comp(name, **extra):
    return dict({"name": name, "namespace": name}, **extra)


# ---------------------------------------------------------------- values and components

@pytest.mark.parametrize(("servers", "replicas"), [(1, 1), (2, 1), (3, 3), (5, 3)])
def test_rancher_replicas_follow_ha(servers, replicas):
    assert m.rancher_replicas(servers) == replicas
    assert m.rancher_values("rancher.lan", servers)["replicas"] == replicas


def test_rancher_values_carry_no_password():
    values = m.rancher_values("rancher.lan", 3, tls_source="secret", ingress_class="traefik",
                              extra={"resources": {"limits": {"memory": "4Gi"}}})
    assert "bootstrapPassword" not in values
    assert values["ingress"] == {"ingressClassName": "traefik",
                                 "tls": {"source": "secret", "secretName": "tls-rancher-ingress"}}
    assert values["resources"]["limits"]["memory"] == "4Gi"


def test_rancher_letsencrypt_needs_email():
    with pytest.raises(ValueError, match="gpu_cluster_rancher_letsencrypt_email"):
        m.rancher_values("rancher.lan", 1, tls_source="letsEncrypt")
    values = m.rancher_values("rancher.lan", 1, tls_source="letsEncrypt", letsencrypt_email="a@b.c")
    assert values["letsEncrypt"] == {"email": "a@b.c", "ingress": {"class": "traefik"}}


@pytest.mark.parametrize(("hostname", "source", "needle"), [
    ("Rancher_Lan", "rancher", "gpu_cluster_rancher_hostname"),
    ("", "rancher", "gpu_cluster_rancher_hostname"),
    ("rancher.lan", "selfsigned", "gpu_cluster_rancher_tls_source"),
])
def test_rancher_problems_name_the_variable(hostname, source, needle):
    assert any(needle in p for p in m.rancher_problems(hostname, source))


def test_cert_manager_installs_and_keeps_its_crds():
    values = m.cert_manager_values(2, {"prometheus": {"enabled": False}})
    assert values["crds"] == {"enabled": True, "keep": True}
    assert values["replicaCount"] == values["webhook"]["replicaCount"] == values["cainjector"]["replicaCount"] == 2
    assert values["prometheus"] == {"enabled": False}


def test_management_components_rancher_order():
    components = m.management_components(SETTINGS)
    assert [c["name"] for c in components] == ["cert-manager", "cluster-ca", "rancher"]
    assert components[0]["namespace_labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert components[2]["namespace"] == "cattle-system"
    assert components[2]["chart"]["values"]["replicas"] == 3
    assert components[0]["chart"]["values"]["replicaCount"] == 2


def test_management_components_fleet_alone():
    components = m.management_components(dict(SETTINGS, mode="fleet", servers=1))
    assert [c["name"] for c in components] == ["cert-manager", "cluster-ca", "fleet-crd", "fleet"]
    assert {c["chart"]["version"] for c in components[2:]} == {"0.15.6"}
    assert components[0]["chart"]["values"]["replicaCount"] == 1
    # Fleet cannot upgrade the agent that applies it: fleet and fleet-crd are no bundles
    assert [c["name"] for c in m.fleet_bundled_components(components)] == ["cert-manager", "cluster-ca"]


def test_management_components_refuse_unknown_mode():
    with pytest.raises(ValueError, match="gpu_cluster_management_mode"):
        m.management_components(dict(SETTINGS, mode="argo"))


def test_cluster_ca_can_be_left_out():
    names = [c["name"] for c in m.management_components(dict(SETTINGS, cluster_ca=False))]
    assert names == ["cert-manager", "rancher"]


# ---------------------------------------------------------------- GitRepo and Secrets

def test_gitrepo_targets_the_local_cluster_with_every_component_path():
    repo = m.gitrepo("https://git.lan/cm.git", "main", "homelab", polling_interval="5m",
                     client_secret_name="cm-git-auth")
    assert repo["metadata"]["namespace"] == "fleet-local"
    spec = repo["spec"]
    assert spec["paths"] == ["homelab/*"]
    assert spec["branch"] == "main"
    assert spec["pollingInterval"] == "5m"
    assert spec["clientSecretName"] == "cm-git-auth"
    assert spec["targets"] == [{"name": "local", "clusterName": "local"}]


def test_gitrepo_without_credentials_names_no_secret():
    assert "clientSecretName" not in m.gitrepo("git@git.lan:ops/cm.git", "main", "homelab")["spec"]


@pytest.mark.parametrize(("args", "needle"), [
    (("ftp://x", "main", "homelab"), "gpu_cluster_fleet_repo"),
    (("https://x/y.git", "", "homelab"), "gpu_cluster_fleet_branch"),
    (("https://x/y.git", "main", "Home_Lab"), "gpu_cluster_name"),
])
def test_gitrepo_problems(args, needle):
    with pytest.raises(ValueError, match=needle):
        m.gitrepo(*args)


def test_gitrepo_polling_interval_must_be_a_duration():
    assert any("gpu_cluster_fleet_polling_interval" in p
               for p in m.gitrepo_problems("https://x/y.git", "main", "c", polling_interval="often"))


def decoded(secret):
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_git_credentials_basic_auth_in_data_not_string_data():
    secret = m.git_credentials_secret("cm-git-auth", username="fleet", password="tok3n")
    assert secret["type"] == "kubernetes.io/basic-auth"
    assert "stringData" not in secret
    assert decoded(secret) == {"username": "fleet", "password": "tok3n"}
    assert "tok3n" not in repr(secret)


def test_git_credentials_ssh():
    secret = m.git_credentials_secret("k", ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nx",
                                      known_hosts="git.lan ssh-ed25519 AAAA")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert set(decoded(secret)) == {"ssh-privatekey", "known_hosts"}


@pytest.mark.parametrize("kwargs", [{}, {"username": "u"}, {"username": "u", "password": "p", "ssh_private_key": "k"}])
def test_git_credentials_refuse_incomplete_or_both(kwargs):
    with pytest.raises(ValueError, match="gpu_cluster_fleet_git"):
        m.git_credentials_secret("k", **kwargs)


def test_bootstrap_secret_is_what_rancher_reads():
    secret = m.bootstrap_password_secret("correct-horse-battery")
    assert secret["metadata"] == {"name": "bootstrap-secret", "namespace": "cattle-system"}
    assert decoded(secret) == {"bootstrapPassword": "correct-horse-battery"}
    with pytest.raises(ValueError, match="12 characters"):
        m.bootstrap_password_secret("short")


def test_tls_secret_needs_pem():
    with pytest.raises(ValueError, match="PEM"):
        m.tls_secret("cert", "key")
    secret = m.tls_secret("-----BEGIN CERTIFICATE-----\n", "-----BEGIN PRIVATE KEY-----\n")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"tls.crt", "tls.key"}


# ---------------------------------------------------------------- bundle order

GPU_POD = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def test_gpu_users_depend_on_the_gpu_operator_only_when_present():
    model = comp("qwen", manifests=[GPU_POD])
    assert m.bundle_dependencies(model, [comp("gpu-operator"), comp("nfs-subdir-external-provisioner")]) == ["gpu-operator"]
    assert m.bundle_dependencies(model, [comp("nfs-subdir-external-provisioner")]) == []


def test_runtime_class_and_mig_resources_count_as_gpu_use():
    mig = comp("a", manifests=[{"kind": "Pod", "metadata": {"name": "a"},
                                "spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}]}}])
    runtime = comp("b", chart={"values": {"singleuser": {"extraPodConfig": {"runtimeClassName": "nvidia"}}}})
    assert m.asks_for_gpus(mig) and m.asks_for_gpus(runtime)
    # the operator itself names nvidia.com/gpu only as a toleration value, and is no GPU user
    assert not m.asks_for_gpus(comp("gpu-operator", manifests=[GPU_POD]))
    assert not m.asks_for_gpus(comp("c", manifests=[{"tolerations": [{"key": "nvidia.com/gpu"}]}]))


def test_storage_users_depend_on_the_provider_of_their_class():
    nfs = comp("nfs-subdir-external-provisioner", chart={"values": {"storageClass": {"create": True, "name": "nfs-client"}}})
    scratch = comp("fast-scratch", manifests=[{"kind": "StorageClass", "metadata": {"name": "fast-scratch"}}])
    user = comp("notebooks", chart={"values": {"storage": {"storageClass": "nfs-client"},
                                               "volumes": [{"ephemeral": {"spec": {"storageClassName": "fast-scratch"}}}]}})
    assert m.bundle_dependencies(user, [nfs, scratch]) == ["fast-scratch", "nfs-subdir-external-provisioner"]
    # a bare name (a bundle already on disk) gives no content to match classes against
    assert m.bundle_dependencies(user, ["nfs-subdir-external-provisioner"]) == []


def test_table_entries_for_bundles_other_features_add():
    present = ["nfs-subdir-external-provisioner", "fast-scratch", "gpu-operator", "cert-manager", "jupyterhub"]
    assert m.bundle_dependencies(comp("jupyterhub"), present) == [
        "cert-manager", "fast-scratch", "gpu-operator", "nfs-subdir-external-provisioner"]
    assert m.bundle_dependencies(comp("gpu-pools"), present) == ["gpu-operator"]
    assert m.bundle_dependencies(comp("monitoring"), ["gpu-operator"]) == ["gpu-operator"]
    # the GPU alerts are Prometheus operator objects: after the monitoring bundle, when it is rendered
    assert m.bundle_dependencies(comp("gpu-alerts"), ["monitoring", "gpu-operator"]) == ["monitoring"]
    assert m.bundle_dependencies(comp("gpu-alerts"), ["gpu-operator"]) == []
    assert m.bundle_dependencies(comp("rancher"), present) == ["cert-manager"]
    assert m.bundle_dependencies(comp("rancher"), []) == []
    # an unknown bundle with no content rule depends on nothing
    assert m.bundle_dependencies(comp("my-app"), present) == []


def test_cert_manager_users_depend_on_cert_manager():
    ingress = comp("web", manifests=[{"kind": "Ingress", "metadata": {
        "name": "w", "annotations": {"cert-manager.io/cluster-issuer": "gpu-cluster-ca"}}}])
    assert m.bundle_dependencies(ingress, ["cert-manager"]) == ["cert-manager"]
    assert m.bundle_dependencies(comp("cluster-ca", manifests=[m.self_signed_issuer()]), ["cert-manager"]) == ["cert-manager"]


def test_every_table_entry_names_a_known_kind_of_bundle():
    for name, needs in m.BUNDLE_DEPENDENCIES.items():
        assert name not in needs
        for need in needs:
            assert need in m.BUNDLE_DEPENDENCIES, f"{name} needs {need}, which the table does not know"


def test_ordered_component_labels_and_selectors():
    model = comp("qwen", manifests=[GPU_POD], fleet_depends_on=[{"selector": {"matchLabels": {"ns": "llm"}}}])
    ordered = m.ordered_component(model, ["gpu-operator", "qwen"], "homelab")
    assert ordered["fleet_labels"] == {m.BUNDLE_LABEL: "qwen", m.CLUSTER_LABEL: "homelab"}
    # the component's own selector is limited to this cluster's bundles, like the table's
    assert ordered["fleet_depends_on"] == [
        {"selector": {"matchLabels": {"ns": "llm", m.CLUSTER_LABEL: "homelab"}}},
        {"selector": {"matchLabels": {m.BUNDLE_LABEL: "gpu-operator", m.CLUSTER_LABEL: "homelab"}}},
    ]
    assert "fleet_labels" not in model  # the input is not changed
    assert model["fleet_depends_on"] == [{"selector": {"matchLabels": {"ns": "llm"}}}]
    again = m.ordered_component(ordered, ["gpu-operator"], "homelab")
    assert again["fleet_depends_on"] == ordered["fleet_depends_on"]


def test_own_depends_on_kept_without_a_cluster_or_a_label_selector():
    by_name = {"name": "other-bundle"}
    own = [{"selector": {"matchLabels": {"ns": "llm", m.CLUSTER_LABEL: "other"}}},
           by_name, {"selector": {"matchExpressions": [{"key": "ns", "operator": "Exists"}]}},
           {"selector": {"matchLabels": {}}}]
    assert m.ordered_component(comp("qwen", fleet_depends_on=own), [], "homelab")["fleet_depends_on"] == own
    plain = [{"selector": {"matchLabels": {"ns": "llm"}}}]
    assert m.ordered_component(comp("qwen", fleet_depends_on=plain), [], "")["fleet_depends_on"] == plain


def fleet(name, deps=(), cluster="c"):
    return {"labels": {m.BUNDLE_LABEL: name, m.CLUSTER_LABEL: cluster},
            "dependsOn": [m.bundle_selector(d, cluster) for d in deps]}


def test_bundle_order_problems_and_install_order():
    bundles = {"cert-manager": fleet("cert-manager"), "rancher": fleet("rancher", ["cert-manager"]),
               "jupyterhub": fleet("jupyterhub", ["cert-manager", "gpu-operator"]), "gpu-operator": fleet("gpu-operator")}
    assert m.bundle_order_problems(bundles) == []
    order = m.install_order(bundles)
    assert order.index("cert-manager") < order.index("rancher")
    assert order.index("gpu-operator") < order.index("jupyterhub")


def test_bundle_order_problems_catch_dangling_self_and_cycles():
    dangling = {"a": fleet("a", ["gone"])}
    assert "matches no bundle" in m.bundle_order_problems(dangling)[0]
    other_cluster = {"a": fleet("a", ["b"]), "b": fleet("b", cluster="other")}
    assert "matches no bundle" in m.bundle_order_problems(other_cluster)[0]
    cycle = {"a": fleet("a", ["b"]), "b": fleet("b", ["a"])}
    assert any(p.startswith("dependency cycle") for p in m.bundle_order_problems(cycle))
    with pytest.raises(ValueError, match="cycle"):
        m.install_order(cycle)
    assert any("itself" in p for p in m.bundle_order_problems({"a": fleet("a", ["a"])}))


# ---------------------------------------------------------------- preflight and masking

def check(**overrides):
    base = {"enabled": True, "mode": "rancher", "cluster": "homelab", "rancher_hostname": "rancher.lan",
            "tls_source": "rancher", "bootstrap_password_length": 20, "gitrepo_url": "https://git.lan/cm.git",
            "gitrepo_branch": "main", "gitrepo_name": "cluster-maintenance", "polling_interval": "60s"}
    base.update(overrides)
    return base


def test_management_problems_off_is_always_fine():
    assert m.management_problems(check(enabled=False, mode="argo")) == []
    assert m.management_problems(check()) == []


@pytest.mark.parametrize(("overrides", "needle"), [
    ({"bootstrap_password_length": 0}, "gpu_cluster_rancher_bootstrap_password"),
    ({"tls_source": "secret"}, "gpu_cluster_rancher_tls_certificate"),
    ({"polling_interval": "1 minute"}, "gpu_cluster_fleet_polling_interval"),
    ({"git_basic_auth_set": True, "git_ssh_key_set": True}, "not both"),
    ({"git_basic_auth_set": True, "git_basic_auth_complete": False}, "gpu_cluster_fleet_git_password"),
    ({"mode": "argo"}, "gpu_cluster_management_mode"),
])
def test_management_problems_name_the_variable(overrides, needle):
    assert any(needle in p for p in m.management_problems(check(**overrides)))


def test_inventory_preflight_ignores_vaulted_values():
    hostvars = {"cp1": {"gpu_cluster_management_enabled": True, "gpu_cluster_name": "homelab",
                        "gpu_cluster_rancher_hostname": "rancher.lan"}}
    assert m.management_inventory_problems({"all": ["cp1"]}, hostvars) == []
    hostvars["cp1"]["gpu_cluster_fleet_repo"] = "not a url"
    assert any("gpu_cluster_fleet_repo" in p for p in m.management_inventory_problems({"all": ["cp1"]}, hostvars))


def test_mask_secrets():
    config = {"token": "abc", "etcd-s3-secret-key": "s3cr3t", "etcd-s3-access-key": "AKIA", "node-ip": "10.0.0.1",
              "kube-apiserver-arg": ["audit-log-maxage=30", "service-account-signing-key-file=/x", "oidc-client-secret=zz",
                                     "service-account-extend-token-expiration=true"],
              "agent-token": "", "cluster-init": True}
    masked = m.mask_secrets(config)
    assert masked["token"] == masked["etcd-s3-secret-key"] == masked["etcd-s3-access-key"] == "<masked>"
    assert masked["node-ip"] == "10.0.0.1"
    assert masked["kube-apiserver-arg"] == ["audit-log-maxage=30", "service-account-signing-key-file=/x",
                                            "oidc-client-secret=<masked>", "service-account-extend-token-expiration=true"]
    assert masked["agent-token"] == ""  # nothing to hide
    assert masked["cluster-init"] is True
    for secret in ("abc", "s3cr3t", "AKIA", "zz"):
        assert secret not in repr(masked)


# Issue 43: Fleet reads a zero polling interval as not set and polls every 15 s (rancher/fleet, the gitjob
# controller's getPollingIntervalDuration: Duration == 0 -> defaultPollingSyncInterval = 15 * time.Second).
@pytest.mark.parametrize(("interval", "zero"), [
    ("0s", True), ("0m0s", True), ("0.0h", True), ("60s", False), ("1m30s", False), ("500ms", False)])
def test_gitrepo_polling_interval_of_zero_is_refused(interval, zero):
    problems = m.gitrepo_problems("https://x/y.git", "main", "c", polling_interval=interval)
    assert any("is zero, which Fleet takes for its default of 15s" in p for p in problems) is zero, problems


def test_preflight_refuses_an_ssh_key_and_a_password_for_fleet_without_showing_them():
    """Issue 43: both credentials for the Fleet repository (the GitRepo takes one clientSecretName, of one
    type: kubernetes.io/ssh-auth or kubernetes.io/basic-auth) are refused by preflight, not only by the phase."""
    both = {"gpu_cluster_management_enabled": True, "gpu_cluster_management_mode": "fleet", "gpu_cluster_name": "homelab",
            "gpu_cluster_fleet_repo": "ssh://git@git.lan/ops.git",
            "gpu_cluster_fleet_git_ssh_private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nk3y\n-----END OPENSSH PRIVATE KEY-----\n",
            "gpu_cluster_fleet_git_password": "pa55word"}
    problems = m.management_inventory_problems({"all": ["cp1"]}, {"cp1": both})
    assert any("not both" in p for p in problems), problems
    assert "pa55word" not in " ".join(problems) and "k3y" not in " ".join(problems)
    one = {k: v for k, v in both.items() if k != "gpu_cluster_fleet_git_password"}
    assert m.management_inventory_problems({"all": ["cp1"]}, {"cp1": one}) == []
