"""Delivery logic: what fleet.yaml and the manifests contain, GPU Operator values."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components as c

CHART_COMPONENT = {
    "name": "gpu-operator",
    "namespace": "gpu-operator",
    "namespace_labels": {"pod-security.kubernetes.io/enforce": "privileged"},
    "chart": {
        "repo": "https://helm.ngc.nvidia.com/nvidia",
        "name": "gpu-operator",
        "version": "v26.7.0",
        "release": "gpu-operator",
        "values": {"driver": {"enabled": False}, "toolkit": {"env": [{"name": "A", "value": "b"}]}},
    },
}

MANIFESTS_COMPONENT = {
    "name": "local-path-not-default",
    "namespace": "kube-system",
    "manifests": [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "local-path"}, "provisioner": "rancher.io/local-path"},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "My_Config"}, "data": {"a": "b"}},
    ],
}


def test_fleet_bundle_of_a_chart_with_values():
    bundle = c.fleet_bundle(CHART_COMPONENT)
    assert bundle == {
        "defaultNamespace": "gpu-operator",
        "namespaceLabels": {"pod-security.kubernetes.io/enforce": "privileged"},
        "helm": {
            "repo": "https://helm.ngc.nvidia.com/nvidia",
            "chart": "gpu-operator",
            "version": "v26.7.0",
            "releaseName": "gpu-operator",
            "values": {"driver": {"enabled": False}, "toolkit": {"env": [{"name": "A", "value": "b"}]}},
        },
    }


def test_fleet_bundle_values_are_a_copy():
    bundle = c.fleet_bundle(CHART_COMPONENT)
    bundle["helm"]["values"]["driver"]["enabled"] = True
    assert CHART_COMPONENT["chart"]["values"]["driver"]["enabled"] is False


def test_fleet_bundle_of_a_manifests_only_component():
    bundle = c.fleet_bundle(MANIFESTS_COMPONENT)
    assert bundle == {"defaultNamespace": "kube-system"}
    files = c.manifest_files(MANIFESTS_COMPONENT)
    assert [f["path"] for f in files] == ["00-storageclass-local-path.yaml", "01-configmap-my-config.yaml"]
    assert files[0]["content"] == MANIFESTS_COMPONENT["manifests"][0]


def test_chart_component_gets_its_namespace_manifest_first():
    manifests = c.component_manifests(CHART_COMPONENT)
    assert manifests == [{"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": "gpu-operator",
                                       "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}]


def test_chart_version_is_a_string():
    component = dict(CHART_COMPONENT, chart=dict(CHART_COMPONENT["chart"], version=4.1))
    assert c.fleet_bundle(component)["helm"]["version"] == "4.1"


@pytest.mark.parametrize(("component", "problem"), [
    ({"name": "x", "namespace": "y"}, "neither a chart nor manifests"),
    ({"name": "Bad_Name", "namespace": "y", "manifests": [{}]}, "DNS label"),
    ({"name": "x", "namespace": "y", "manifests": [{"kind": "Pod"}]}, "manifest #0"),
    (dict(CHART_COMPONENT, chart=dict(CHART_COMPONENT["chart"], version="latest")), "pinned"),
    (dict(CHART_COMPONENT, chart={"repo": "r", "name": "n", "version": "1.0.0"}), "chart.release"),
])
def test_validate_component_names_the_problem(component, problem):
    problems = c.validate_component(component)
    assert any(problem in p for p in problems), problems


def test_fleet_bundle_refuses_a_broken_component():
    with pytest.raises(ValueError, match="neither a chart nor manifests"):
        c.fleet_bundle({"name": "x", "namespace": "y"})


@pytest.mark.parametrize(("k3s", "operator", "mode"), [
    ("v1.33.5+k3s1", "v26.7.0", "cdi"),
    ("v1.31.6+k3s1", "v25.10.1", "cdi"),
    ("v1.31.5+k3s1", "v26.7.0", "legacy"),
    ("v1.30.9+k3s1", "v25.10.1", "legacy"),
    ("v1.33.5+k3s1", "v25.3.4", "legacy"),
])
def test_containerd_mode(k3s, operator, mode):
    assert c.containerd_mode(k3s, operator) == mode


def test_toolkit_env_cdi_is_only_the_socket():
    assert c.toolkit_env("v1.33.5+k3s1", "v26.7.0") == [
        {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"}]


def test_toolkit_env_legacy():
    env = {e["name"]: e["value"] for e in c.toolkit_env("v1.30.9+k3s1", "v25.10.1")}
    assert env == {
        "CONTAINERD_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
        "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock",
        "CONTAINERD_RUNTIME_CLASS": "nvidia",
        "CONTAINERD_SET_AS_DEFAULT": "true",
    }


def test_gpu_operator_values():
    values = c.gpu_operator_values("v1.33.5+k3s1", "v26.7.0")
    assert values["driver"] == {"enabled": True}
    assert values["nfd"]["enabled"] and values["gfd"]["enabled"]
    assert values["dcgmExporter"]["enabled"] and values["migManager"]["enabled"]
    assert c.GPU_TAINT_TOLERATION in values["daemonsets"]["tolerations"]
    assert c.GPU_TAINT_TOLERATION in values["node-feature-discovery"]["worker"]["tolerations"]
    assert values["daemonsets"]["annotations"]["gpu-cluster.cps/containerd-mode"] == "cdi"


def test_gpu_operator_node_feature_rules_switch():
    """nfd.nodefeaturerules is the chart's switch for its NodeFeatureRule (gpu-operator values.yaml:
    ``nfd.nodefeaturerules: false`` upstream; templates/nodefeaturerules.yaml renders only when it is true)."""
    assert c.gpu_operator_values("v1.33.5+k3s1", "v26.7.0")["nfd"] == {"enabled": True, "nodefeaturerules": True}
    off = c.gpu_operator_values("v1.33.5+k3s1", "v26.7.0", node_feature_rules=False)
    assert off["nfd"] == {"enabled": True, "nodefeaturerules": False}


def test_gpu_operator_values_host_driver_and_extra_values():
    values = c.gpu_operator_values("v1.30.9+k3s1", "v25.10.1", driver_enabled=False, driver_version="570.1",
                                   extra_values={"dcgmExporter": {"serviceMonitor": {"enabled": True}}})
    assert values["driver"] == {"enabled": False}
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": True}}
    assert values["daemonsets"]["annotations"]["gpu-cluster.cps/containerd-mode"] == "legacy"
    assert values["cdi"]["enabled"] is False


def test_parse_version_rejects_garbage():
    with pytest.raises(ValueError, match=r"v1\.33\.5"):
        c.parse_version("latest")
    assert c.kubernetes_minor("v1.33.5+k3s1") == "1.33"


def test_cuda_smoke_pod():
    pod = c.cuda_smoke_pod()
    spec = pod["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"] == {"gpu": "true"}
    # the contract's taint by key and effect, any value (issue 44: an Equal "true" refused the NVIDIA/GKE
    # spelling nvidia.com/gpu=present:NoSchedule); kube-scheduler's TaintToleration: Exists matches any value
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    other = [{"key": "example.com/accelerator", "operator": "Exists", "effect": "NoSchedule"}]
    assert c.cuda_smoke_pod(tolerations=other)["spec"]["tolerations"] == other
    with pytest.raises(ValueError, match="gpu_tolerations must be a list"):
        c.cuda_smoke_pod(tolerations="nvidia.com/gpu")


def test_namespace_only_component_and_fleet_ordering():
    component = {"name": "namespace-llm", "namespace": "llm",
                 "namespace_labels": {"pod-security.kubernetes.io/enforce": "restricted"},
                 "fleet_labels": {"gpu-cluster.cps/namespace": "llm"}}
    assert c.validate_component(component) == []
    assert [m["kind"] for m in c.component_manifests(component)] == ["Namespace"]
    assert c.fleet_bundle(component)["labels"] == {"gpu-cluster.cps/namespace": "llm"}
    depends = [{"selector": {"matchLabels": {"gpu-cluster.cps/namespace": "llm"}}}]
    bundle = c.fleet_bundle(dict(MANIFESTS_COMPONENT, fleet_depends_on=depends))
    assert bundle["dependsOn"] == depends
    assert "dependsOn" not in c.fleet_bundle(MANIFESTS_COMPONENT)
