"""Render every in-cluster component with playbooks/render.yml and validate it.

* every manifest against the Kubernetes OpenAPI schema of the cluster's version
  (kubernetes-validate, strict: unknown fields fail);
* every chart's values: against the chart's values.schema.json where the chart
  has one, else every key we set must exist in the chart's values.yaml;
* the GPU Operator values against the ClusterPolicy CRD's openAPIV3Schema for
  the operand sections the chart copies into the ClusterPolicy spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
CHARTS = FIXTURES / "charts"
HOMELAB = REPO / "inventories" / "homelab"
CPU_ONLY = FIXTURES / "components" / "inventory-cpu-only"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"


RENDERS = {
    "homelab": (HOMELAB,),
    "cpu_only": (CPU_ONLY,),
    # The seed's operator on a k3s older than containerd 2. Preflight refuses a k3s older than
    # v1.31.6, so it is skipped for this render: the test is of the legacy toolkit settings.
    "legacy": (HOMELAB, "gpu_cluster_gpu_operator_version=v25.10.1", "gpu_cluster_k3s_version=v1.30.9+k3s1",
               "gpu_cluster_preflight=false",
               # and a user's namespace exempt from Pod Security admission
               json.dumps({"gpu_cluster_pod_security_exempt_namespaces": ["jupyterhub", "kube-system"]})),
}
# the plain homelab with the management phase switched off (test_without_the_management_phase_only_kube_system_is_exempt)
# and the GPU taint as NVIDIA and GKE spell it (issue 44; test_render_gpu_taint.py reads this render too)
NO_MANAGEMENT_GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
NO_MANAGEMENT = (HOMELAB, json.dumps({"gpu_cluster_management_enabled": False, "gpu_cluster_gpu_taint": NO_MANAGEMENT_GPU_TAINT}))
RENDERS_USED = [*RENDERS.values(), NO_MANAGEMENT]  # started with the session (conftest.py)


@pytest.fixture(scope="module")
def rendered(renders_cache):
    """{name: render_dir} for the homelab, the CPU-only inventory and the seed operator on an older k3s."""
    return {name: renders_cache.get(*args)[0] for name, args in RENDERS.items()}


@pytest.fixture(scope="module")
def homelab(rendered):
    return rendered["homelab"] / "homelab"


@pytest.fixture(scope="module")
def cpu_only(rendered):
    return rendered["cpu_only"]


@pytest.fixture(scope="module")
def legacy(rendered):
    return rendered["legacy"] / "homelab"


def inventory_k8s_version(inventory):
    for path in sorted(inventory.glob("group_vars/**/*.yml")) + sorted(inventory.glob("group_vars/*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        if "gpu_cluster_k3s_version" in data:
            major, minor = data["gpu_cluster_k3s_version"].lstrip("v").split(".")[:2]
            return f"{major}.{minor}"
    raise AssertionError(f"no gpu_cluster_k3s_version in {inventory}")


def bundles(cluster_dir):
    return {d.name: d for d in sorted(cluster_dir.iterdir()) if d.is_dir()}


def fleet(bundle_dir):
    return yaml.safe_load((bundle_dir / "fleet.yaml").read_text())


def manifests(root):
    found = []
    for path in sorted(root.rglob("*.yaml")):
        if path.name == "fleet.yaml" or "_k3s" in path.relative_to(root).parts:
            continue  # _k3s/: the k3s servers' config files, not Kubernetes objects (tested below)
        if "_gpu_pools" in path.relative_to(root).parts:
            continue  # _gpu_pools/: node labels, not objects (tests/render/test_render_gpu_pools.py)
        if "_management" in path.relative_to(root).parts:
            continue  # the Fleet GitRepo: validated against Fleet's CRD (test_render_management.py)
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append((path, doc))
    return found


def assert_valid_manifests(root, version):
    found = manifests(root)
    assert found, f"nothing rendered under {root}"
    for path, doc in found:
        if str(doc.get("apiVersion", "")).startswith("monitoring.coreos.com/"):
            continue  # custom resources: against their CRDs in tests/render/test_render_gpu_pools.py
        if str(doc.get("apiVersion", "")).startswith("cert-manager.io/"):
            continue  # cert-manager's CRD objects: validated against its CRDs (test_render_management.py)
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {exc.message} at {list(exc.path)}")


def test_schema_version_is_shipped():
    """kubernetes-validate 1.37.0 ships schemas 1.25 .. 1.37; k3s v1.36 validates against 1.36."""
    assert inventory_k8s_version(HOMELAB) == "1.36"
    assert "1.36.0" in kubernetes_validate.utils.all_versions()


def test_homelab_manifests_are_valid(homelab):
    assert_valid_manifests(homelab.parent, inventory_k8s_version(HOMELAB))


def test_cpu_only_manifests_are_valid(cpu_only):
    assert_valid_manifests(cpu_only, inventory_k8s_version(CPU_ONLY))


def test_strict_validation_catches_unknown_fields():
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"},
          "provisioner": "p", "volumeBindingMod": "WaitForFirstConsumer"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sc, "1.36", strict=True)


def test_homelab_components(homelab):
    assert set(bundles(homelab)) == {"nfs-subdir-external-provisioner", "local-path-not-default",
                                     "fast-scratch", "gpu-operator", "namespace-llm", "qwen", "embed",
                                     # GPU pools and monitoring (tests/render/test_render_gpu_pools.py)
                                     "gpu-quota-llm", "gpu-quota-default", "monitoring", "gpu-alerts",
                                     "jupyterhub",
                                     # the management phase (gpu_cluster_management_enabled, docs/gitops.md)
                                     "cert-manager", "cluster-ca", "rancher"}


def test_cpu_only_has_no_gpu_operator(cpu_only):
    cluster = cpu_only / "cpu-lab"
    assert set(bundles(cluster)) == {"nfs-subdir-external-provisioner", "local-path-not-default"}
    assert not (cpu_only / "_verify").exists()
    assert "gpu-operator" not in "".join(p.read_text() for p in cpu_only.rglob("*.yaml"))


def test_nfs_client_is_the_only_default_class(homelab):
    nfs = fleet(homelab / "nfs-subdir-external-provisioner")
    assert nfs["helm"]["chart"] == "nfs-subdir-external-provisioner"
    assert str(nfs["helm"]["version"]) == "4.0.18"
    values = nfs["helm"]["values"]
    assert values["storageClass"]["name"] == "nfs-client"
    assert values["storageClass"]["defaultClass"] is True
    # the homelab writes out gpu_cluster_nfs_mount_options (inventories/homelab/group_vars/all/main.yml)
    homelab_vars = yaml.safe_load((REPO / "inventories" / "homelab" / "group_vars" / "all" / "main.yml").read_text())
    assert values["nfs"] == {"server": "10.0.0.30", "path": "/export/k3s",
                             "mountOptions": homelab_vars["gpu_cluster_nfs_mount_options"]}
    classes = {doc["metadata"]["name"]: doc for _path, doc in manifests(homelab) if doc["kind"] == "StorageClass"}
    assert set(classes) == {"local-path", "fast-scratch"}
    for sc in classes.values():
        assert sc["metadata"]["annotations"][DEFAULT_CLASS] == "false"


def test_nfs_mount_options_default_without_the_setting(cpu_only):
    """An inventory without gpu_cluster_nfs_mount_options (the CPU-only one) gets the collection's
    tuned options (docs/components.md, storage_components.NFS_MOUNT_OPTIONS)."""
    values = fleet(cpu_only / "cpu-lab" / "nfs-subdir-external-provisioner")["helm"]["values"]
    assert values["nfs"]["mountOptions"] == ["nfsvers=4.1", "rsize=1048576", "wsize=1048576", "hard", "timeo=600",
                                             "retrans=2", "noatime"]


def test_local_path_redeclared_exactly_as_k3s_ships_it(homelab):
    """Only the default annotation differs from k3s's bundled class (its fields are immutable)."""
    k3s_manifest = (CHARTS / "local-path-provisioner" / "k3s-bundled-local-storage.yaml").read_text()
    bundled = next(d for d in yaml.safe_load_all(k3s_manifest) if d and d["kind"] == "StorageClass")
    ours = next(d for _path, d in manifests(homelab / "local-path-not-default"))
    assert bundled["metadata"]["annotations"][DEFAULT_CLASS] == "true"
    for key in ("apiVersion", "kind", "provisioner", "volumeBindingMode", "reclaimPolicy"):
        assert ours[key] == bundled[key]
    assert ours["metadata"]["name"] == bundled["metadata"]["name"]
    expected = dict(bundled["metadata"]["annotations"], **{DEFAULT_CLASS: "false"})
    assert ours["metadata"]["annotations"] == expected


def test_fast_scratch_on_gpu_workers_only(homelab):
    docs = {(d["kind"], d["metadata"]["name"]): d for _path, d in manifests(homelab / "fast-scratch")}
    sc = docs[("StorageClass", "fast-scratch")]
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc["reclaimPolicy"] == "Delete"
    config = json.loads(docs[("ConfigMap", "fast-scratch-config")]["data"]["config.json"])
    hosts = yaml.safe_load((HOMELAB / "hosts.yml").read_text())
    workers = hosts["all"]["children"]["k3s_cluster"]["children"]["k3s_agents"]["children"]["gpu_workers"]["hosts"]
    assert config["nodePathMap"] == [{"node": n, "paths": ["/mnt/fast-scratch"]} for n in sorted(workers)]


# The Pod Security level each component's pods need under the CIS profile's restricted default:
# the GPU Operator's operands run privileged with hostPID; the fast-scratch provisioner's helper pods
# mount the scratch disk through hostPath (privileged only); the NFS provisioner mounts the export as
# an nfs volume (baseline allows it, restricted does not). kube-system is exempt (k3s's add-ons).
NAMESPACE_LEVELS = {"gpu-operator": "privileged", "fast-scratch": "privileged", "nfs-provisioner": "baseline",
                    # the vLLM pods meet restricted (tests/render/test_render_llm.py)
                    "llm": "restricted",
                    # node-exporter needs host namespaces and host paths
                    "monitoring": "privileged",
                    # the notebooks need baseline (tests/render/test_render_jupyterhub.py)
                    "jupyterhub": "baseline",
                    # cert-manager meets restricted; Rancher's controllers need privileged (its hardening guide)
                    "cert-manager": "restricted", "cattle-system": "privileged"}
PSA_MODES = ("enforce", "audit", "warn")


def admission_exemptions(render_root):
    config = yaml.safe_load((render_root / "pod-security-admission.yaml").read_text())
    return config["plugins"][0]["configuration"]["exemptions"]["namespaces"]


# The namespaces Rancher and Fleet own that Rancher 2.14 requires exempt under a restricted default
# (https://ranchermanager.docs.rancher.com/v2.14/reference-guides/rancher-security/psa-restricted-exemptions):
# issue 27, the homelab's management phase is on.
RANCHER_EXEMPT = {"cattle-system", "cattle-fleet-system", "cattle-fleet-local-system", "cattle-impersonation-system",
                  "fleet-local", "fleet-default"}


def test_every_component_namespace_has_the_level_its_pods_need(homelab):
    """Under the restricted default, each component's namespace is labelled (Namespace object and
    Fleet namespaceLabels alike) with the level its pods need, or is exempt."""
    exempt = admission_exemptions(homelab.parent / "_k3s" / "homelab")
    namespaces = {d["metadata"]["name"]: d for _path, d in manifests(homelab) if d["kind"] == "Namespace"}
    seen = set()
    for name, bundle in bundles(homelab).items():
        namespace = fleet(bundle)["defaultNamespace"]
        if namespace in exempt:
            assert namespace == "kube-system" or namespace.startswith(("cattle-", "fleet-")), name
            continue
        if name.startswith("gpu-quota-"):
            continue  # only a ResourceQuota, no pods (docs/gpu-pools.md)
        seen.add(namespace)
        level = NAMESPACE_LEVELS[namespace]
        labels = namespaces[namespace]["metadata"]["labels"]
        for mode in PSA_MODES:
            assert labels[f"pod-security.kubernetes.io/{mode}"] == level, (namespace, mode)
        fleet_labels = fleet(bundle).get("namespaceLabels")
        if fleet_labels is None:
            # a bundle that does not own its namespace (an LLM model) waits for the one that does
            assert fleet(bundle).get("dependsOn"), name
            continue
        for mode in PSA_MODES:
            assert fleet_labels[f"pod-security.kubernetes.io/{mode}"] == level, (namespace, mode)
    assert seen == set(NAMESPACE_LEVELS) - set(exempt)


def test_only_the_namespaces_that_need_it_are_privileged(homelab):
    namespaces = [d for _path, d in manifests(homelab) if d["kind"] == "Namespace"]
    privileged = {d["metadata"]["name"] for d in namespaces
                  if (d["metadata"].get("labels") or {}).get(PSA_ENFORCE) == "privileged"}
    assert privileged == {"gpu-operator", "fast-scratch", "monitoring", "cattle-system"}


def test_pod_security_admission_configuration_validates(homelab, legacy):
    schema = json.loads((FIXTURES / "k3s" / "admission-configuration.schema.json").read_text())
    for root in (homelab.parent / "_k3s" / "homelab", legacy.parent / "_k3s" / "homelab"):
        config = yaml.safe_load((root / "pod-security-admission.yaml").read_text())
        jsonschema.Draft202012Validator(schema).validate(config)
        pod_security = config["plugins"][0]["configuration"]
        assert {pod_security["defaults"][mode] for mode in PSA_MODES} == {"restricted"}
    homelab_exempt = admission_exemptions(homelab.parent / "_k3s" / "homelab")
    assert RANCHER_EXEMPT <= set(homelab_exempt) and "kube-system" in homelab_exempt
    assert all(n == "kube-system" or n.startswith(("cattle-", "fleet-")) for n in homelab_exempt)
    assert {"jupyterhub", "kube-system"} | RANCHER_EXEMPT <= set(admission_exemptions(legacy.parent / "_k3s" / "homelab"))


def test_without_the_management_phase_only_kube_system_is_exempt(renders_cache):
    """Rancher's exemptions come with the management phase only (gpu_cluster_management_enabled)."""
    root = renders_cache.get(*NO_MANAGEMENT)[0]
    assert admission_exemptions(root / "_k3s" / "homelab") == ["kube-system"]


def test_audit_policy_validates(homelab):
    schema = json.loads((FIXTURES / "k3s" / "audit-policy.schema.json").read_text())
    policy = yaml.safe_load((homelab.parent / "_k3s" / "homelab" / "audit-policy.yaml").read_text())
    jsonschema.Draft202012Validator(schema).validate(policy)
    assert policy["rules"][-1] == {"level": "Metadata"}


def test_server_config_references_the_rendered_files(homelab):
    root = homelab.parent / "_k3s" / "homelab"
    server = yaml.safe_load((root / "config-cis-server.yaml").read_text())
    agent = yaml.safe_load((root / "config-cis-agent.yaml").read_text())
    args = dict(arg.split("=", 1) for arg in server["kube-apiserver-arg"])
    assert args["admission-control-config-file"] == "/etc/rancher/k3s/pod-security-admission.yaml"
    assert args["audit-policy-file"] == "/etc/rancher/k3s/audit-policy.yaml"
    assert args["audit-log-path"] == "/var/lib/rancher/k3s/server/logs/audit.log"
    assert (args["audit-log-maxage"], args["audit-log-maxbackup"], args["audit-log-maxsize"]) == ("30", "10", "100")
    assert "tls-cipher-suites" in args
    for config in (server, agent):
        assert config["protect-kernel-defaults"] is True
        kubelet = dict(arg.split("=", 1) for arg in config["kubelet-arg"])
        assert kubelet["streaming-connection-idle-timeout"] == "5m"
        assert "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" in kubelet["tls-cipher-suites"].split(",")
    assert "kube-apiserver-arg" not in agent


def test_gpu_operator_values_for_k3s_with_containerd2(homelab):
    helm = fleet(homelab / "gpu-operator")["helm"]
    assert helm["chart"] == "gpu-operator"
    assert helm["version"] == "v26.7.0"
    assert helm["releaseName"] == "gpu-operator"
    values = helm["values"]
    assert values["toolkit"]["env"] == [{"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"}]
    assert values["daemonsets"]["annotations"]["gpu-cluster.cps/containerd-mode"] == "cdi"
    assert values["driver"]["enabled"] is True
    assert values["nfd"]["enabled"] and values["gfd"]["enabled"]
    assert values["dcgmExporter"]["enabled"] and values["migManager"]["enabled"]
    gpu_taint = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert gpu_taint in values["daemonsets"]["tolerations"]
    assert gpu_taint in values["node-feature-discovery"]["worker"]["tolerations"]


def test_gpu_operator_legacy_values_and_seed_version(legacy):
    helm = fleet(legacy / "gpu-operator")["helm"]
    assert helm["version"] == "v25.10.1"
    env = {e["name"]: e["value"] for e in helm["values"]["toolkit"]["env"]}
    assert env["CONTAINERD_CONFIG"] == "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"
    assert env["CONTAINERD_SOCKET"] == "/run/k3s/containerd/containerd.sock"
    assert env["CONTAINERD_RUNTIME_CLASS"] == "nvidia"
    assert env["CONTAINERD_SET_AS_DEFAULT"] == "true"
    assert helm["values"]["daemonsets"]["annotations"]["gpu-cluster.cps/containerd-mode"] == "legacy"


def unknown_keys(ours, chart, prefix=""):
    """Keys we set that the chart's values.yaml does not have (a {} or null default accepts anything)."""
    missing = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if not isinstance(chart, dict) or key not in chart:
            missing.append(path)
        elif isinstance(value, dict) and isinstance(chart[key], dict) and chart[key]:
            missing += unknown_keys(value, chart[key], path + ".")
    return missing


def chart_values(chart_dir):
    """(schema or None, defaults) of a chart copied into tests/fixtures/charts."""
    schema = chart_dir / "values.schema.json"
    return (json.loads(schema.read_text()) if schema.is_file() else None,
            yaml.safe_load((chart_dir / "values.yaml").read_text()))


def pinned_chart_dir(key):
    """tests/fixtures/charts/<chart>-<version> of a chart pin of versions.yml (scripts/refresh-chart-fixtures.py)."""
    text = (REPO / "versions.yml").read_text()
    chart = text.split("\n" + key + ":")[0].rsplit("depName=", 1)[1].split()[0]
    version = yaml.safe_load(text)[key]
    return f"{chart}-{version}"


@pytest.mark.parametrize(("bundle", "chart_dir"), [
    ("nfs-subdir-external-provisioner", pinned_chart_dir("nfs_subdir_external_provisioner_chart")),
    ("gpu-operator", pinned_chart_dir("gpu_operator_chart")),
])
def test_chart_values_match_the_chart(homelab, bundle, chart_dir):
    assert (CHARTS / chart_dir).is_dir(), f"no fixture {chart_dir} for the pinned chart: run scripts/refresh-chart-fixtures.py"
    values = fleet(homelab / bundle)["helm"]["values"]
    schema, defaults = chart_values(CHARTS / chart_dir)
    if schema is not None:
        jsonschema.validate(values, schema)
    assert unknown_keys(values, defaults) == []


def test_unknown_keys_would_be_caught():
    assert unknown_keys({"toolkit": {"envv": []}, "nope": 1}, {"toolkit": {"env": []}}) == ["toolkit.envv", "nope"]


def test_gpu_operator_values_against_clusterpolicy_crd(homelab):
    crd = yaml.safe_load((CHARTS / pinned_chart_dir("gpu_operator_chart") / "nvidia.com_clusterpolicies.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    values = fleet(homelab / "gpu-operator")["helm"]["values"]
    checked = []
    for section, ours in values.items():
        if section not in spec["properties"]:
            continue  # chart-only settings (nfd, node-feature-discovery subchart)
        schema = spec["properties"][section]
        jsonschema.validate(ours, schema)
        # The API server prunes fields the CRD does not declare: they would be silently lost.
        assert set(ours) <= set(schema["properties"]), (section, set(ours) - set(schema["properties"]))
        checked.append(section)
    assert {"driver", "toolkit", "daemonsets", "gfd", "dcgmExporter", "migManager", "mig", "operator"} <= set(checked)


def restricted_violations(spec):
    """What keeps a pod spec from the ``restricted`` Pod Security level (the checks of the Pod
    Security Standards that our pods could trip: host namespaces, privileged, escalation,
    capabilities, non-root, seccomp, volume types)."""
    problems = []
    pod_ctx = spec.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            problems.append(key)
    allowed_volumes = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret"}
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= allowed_volumes:
            problems.append(f"volume {volume['name']}: {sorted(kinds - allowed_volumes)}")
    for container in spec.get("initContainers", []) + spec["containers"]:
        ctx = container.get("securityContext") or {}
        name = container["name"]
        if ctx.get("privileged"):
            problems.append(f"{name}: privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation must be false")
        if (ctx.get("capabilities") or {}).get("drop") != ["ALL"]:
            problems.append(f"{name}: capabilities.drop must be [ALL]")
        if set((ctx.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: capabilities.add")
        if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
            problems.append(f"{name}: runAsNonRoot")
        if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
            problems.append(f"{name}: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile")
    return problems


def test_restricted_check_can_fail():
    assert "cuda: runAsNonRoot" in restricted_violations({"containers": [{"name": "cuda"}]})
    assert restricted_violations({"hostPID": True, "containers": [{"name": "x", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"}}}]}) == ["hostPID"]


def test_cuda_smoke_test_pod(homelab):
    pod = yaml.safe_load((homelab.parent / "_verify" / "homelab" / "cuda-smoke-test.yaml").read_text())
    kubernetes_validate.validate(pod, "1.36", strict=True)
    # it runs in the default namespace, which the CIS profile leaves at restricted
    assert restricted_violations(pod["spec"]) == []
    spec = pod["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"] == {"gpu": "true"}
    assert any(t["key"] == "nvidia.com/gpu" and t["effect"] == "NoSchedule" for t in spec["tolerations"])


def test_a_first_render_prints_no_warning(renders_cache):
    """Issue 43: a first render into an empty directory printed two Ansible warnings, a template error
    (a task name templated with its own loop variable, which Ansible templates before the loop) and a
    skipped path (``find`` in the cluster directory the render had not written yet)."""
    _root, output = renders_cache.get(HOMELAB)
    assert "[WARNING]" not in output, [line for line in output.splitlines() if "WARNING" in line]
