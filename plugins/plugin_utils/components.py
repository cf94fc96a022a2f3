# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic for in-cluster components: one description, two deliveries.

A *component* is a dict::

    name: gpu-operator              # DNS label, also the Fleet bundle directory
    namespace: gpu-operator
    namespace_labels: {...}         # optional: a Namespace manifest is added first
    fleet_labels: {...}             # optional: labels of the Fleet bundle
    fleet_depends_on: [...]         # optional: Fleet dependsOn (bundles deployed before this one)
    chart:                          # optional
      repo: https://helm.ngc.nvidia.com/nvidia
      name: gpu-operator
      version: v26.7.0
      release: gpu-operator
      values: {...}
    manifests: [ {...}, ... ]       # optional plain Kubernetes objects

``direct`` delivery applies :func:`component_manifests` and installs the chart;
``fleet`` delivery writes :func:`fleet_bundle` as ``fleet.yaml`` and
:func:`manifest_files` beside it.  Both read the same values and manifests.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import DNS_LABEL, copy_data

VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", re.ASCII)  # \d: 0-9 only, as Go's

# Pod Security admission labels for a namespace whose pods need privileged/hostPID.
PRIVILEGED_NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}

GPU_TAINT_TOLERATION = cluster_model.GPU_TOLERATION

K3S_CONTAINERD_SOCKET = "/run/k3s/containerd/containerd.sock"
# k3s renders config.toml from this template when it exists; the legacy
# toolkit writes its runtime entries into it so they survive k3s restarts.
K3S_CONTAINERD_CONFIG_TEMPLATE = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl"
# k3s v1.31.6 is the first release shipping containerd 2 with CDI enabled.
K3S_CDI_MIN = (1, 31, 6)
# GPU Operator v25.10 is the first whose toolkit needs only the socket on containerd 2.
OPERATOR_CDI_MIN = (25, 10, 0)
# The GPU Operator chart versions this collection's values are made for: the one
# list the gpu_operator role (gpu_operator_supported_versions) and preflight read.
GPU_OPERATOR_SUPPORTED_VERSIONS = ("v25.10.1", "v26.7.0")


def supported_versions(component):
    """The chart versions this collection supports for a component (``gpu-operator``), as a list."""
    known = {"gpu-operator": GPU_OPERATOR_SUPPORTED_VERSIONS}
    if component not in known:
        raise ValueError("no supported versions are recorded for component %r (known: %s)" % (component, ", ".join(sorted(known))))
    return list(known[component])


def parse_version(version):
    """``"v1.33.5+k3s1"`` -> ``(1, 33, 5)``; raises ValueError for anything else."""
    match = VERSION.match(str(version).strip())
    if not match:
        raise ValueError("cannot read a version from %r (expected e.g. v1.33.5+k3s1)" % (version,))
    return tuple(int(part or 0) for part in match.groups())


def kubernetes_minor(k3s_version):
    """``"v1.33.5+k3s1"`` -> ``"1.33"`` (the schema version to validate against)."""
    major, minor, _patch = parse_version(k3s_version)
    return "%d.%d" % (major, minor)


def containerd_mode(k3s_version, operator_version):
    """``"cdi"`` when k3s ships containerd 2 with CDI and the operator supports it, else ``"legacy"``."""
    if parse_version(k3s_version) >= K3S_CDI_MIN and parse_version(operator_version) >= OPERATOR_CDI_MIN:
        return "cdi"
    return "legacy"


def toolkit_env(k3s_version, operator_version):
    """The container toolkit's env for k3s's containerd (a list of name/value dicts)."""
    if containerd_mode(k3s_version, operator_version) == "cdi":
        return [{"name": "CONTAINERD_SOCKET", "value": K3S_CONTAINERD_SOCKET}]
    return [
        {"name": "CONTAINERD_CONFIG", "value": K3S_CONTAINERD_CONFIG_TEMPLATE},
        {"name": "CONTAINERD_SOCKET", "value": K3S_CONTAINERD_SOCKET},
        {"name": "CONTAINERD_RUNTIME_CLASS", "value": "nvidia"},
        {"name": "CONTAINERD_SET_AS_DEFAULT", "value": "true"},
    ]


def gpu_operator_values(k3s_version, operator_version, *, driver_enabled=True, driver_version=None,
                        mig_strategy="single", dcgm_exporter_enabled=True, extra_values=None, driver_upgrade_policy=None,
                        gpu_tolerations=None, node_feature_rules=True):
    """Values for the NVIDIA GPU Operator chart on k3s.

    ``node_feature_rules``: the chart's NodeFeatureRule support (``nfd.nodefeaturerules``): a
    NodeFeatureRule ``nvidia-kernel-modules`` that labels the nodes whose loaded kernel modules make them
    capable of GPUDirect RDMA (``nvidia.com/peermem.capable``), GPUDirect Storage (``nvidia.com/gds.capable``)
    and GDRCopy (``nvidia.com/gdrcopy.capable``), labels a platform team's pools can select on.

    ``gpu_tolerations``: the cluster model's (``gpu_tolerations``, the taint the GPU workers carry); the
    operator gives ``daemonsets.tolerations`` to every operand (driver, toolkit, device plugin, DCGM
    exporter, GFD, MIG manager, validator) and NFD's worker gets them too. None: the contract's default.

    The toolkit env is chosen by :func:`containerd_mode`; the choice is named in
    ``toolkit.env`` itself and in the pod annotation
    ``gpu-cluster.cps/containerd-mode`` of every operand (``daemonsets.annotations``)
    so it is visible in the rendered values and on the cluster.
    """
    mode = containerd_mode(k3s_version, operator_version)
    gpu = cluster_model.given_gpu_tolerations(gpu_tolerations)
    driver = {"enabled": bool(driver_enabled)}
    if driver_enabled and driver_version:
        driver["version"] = str(driver_version)
    if driver_enabled and driver_upgrade_policy:
        # gpu_driver.upgrade_policy: node by node, GPU pods stopped first (docs/components.md, GPU driver)
        driver["upgradePolicy"] = copy_data(driver_upgrade_policy)
    values = {
        # We label the namespace ourselves (Namespace manifest of this component).
        "psa": {"enabled": False},
        "cdi": {"enabled": mode == "cdi"},
        "nfd": {"enabled": True, "nodefeaturerules": bool(node_feature_rules)},
        "node-feature-discovery": {
            "worker": {"tolerations": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal",
                 "value": "", "effect": "NoSchedule"},
                *copy_data(gpu),
            ]},
        },
        "daemonsets": {
            "annotations": {"gpu-cluster.cps/containerd-mode": mode},
            "tolerations": copy_data(gpu),
        },
        "operator": {"runtimeClass": "nvidia"},
        "driver": driver,
        "toolkit": {"enabled": True, "env": toolkit_env(k3s_version, operator_version)},
        "devicePlugin": {"enabled": True},
        "gfd": {"enabled": True},
        # The chart's own DCGM ServiceMonitor (values.yaml dcgmExporter.serviceMonitor.enabled: true in the
        # pinned v26.7.0, false in v25.10.1) has no node relabelling, and Prometheus selects every
        # ServiceMonitor: each DCGM series was scraped twice and the GPU alerts fired twice (once without
        # `node`). The gpu-alerts component delivers the exporter's one ServiceMonitor, with `node` (issue 44).
        "dcgmExporter": {"enabled": bool(dcgm_exporter_enabled), "serviceMonitor": {"enabled": False}},
        "mig": {"strategy": mig_strategy},
        "migManager": {"enabled": True},
    }
    return merge(values, extra_values or {})


def merge(base, override):
    """Deep-merge ``override`` into a copy of ``base`` (dicts merge, everything else replaces)."""
    result = copy_data(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy_data(value)
    return result


def validate_component(component):
    """Return a list of problems with a component description (empty when it is usable)."""
    problems = []
    if not isinstance(component, dict):
        return ["a component must be a dict, got %s" % type(component).__name__]
    name = component.get("name")
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        problems.append("component name %r must be a DNS label (lower-case letters, digits, '-')" % (name,))
    namespace = component.get("namespace")
    if not isinstance(namespace, str) or not DNS_LABEL.match(namespace):
        problems.append("component %s: namespace %r must be a DNS label" % (name, namespace))
    chart = component.get("chart")
    manifests = component.get("manifests") or []
    if not chart and not manifests and not component.get("namespace_labels"):
        problems.append("component %s has neither a chart nor manifests (nor namespace_labels)" % (name,))
    if chart:
        for key in ("repo", "name", "version", "release"):
            if not chart.get(key):
                problems.append("component %s: chart.%s is required" % (name, key))
        if str(chart.get("version", "")).strip() in ("latest", "*"):
            problems.append("component %s: chart.version must be pinned, not %r" % (name, chart.get("version")))
        if not isinstance(chart.get("values", {}), dict):
            problems.append("component %s: chart.values must be a dict" % (name,))
    for index, manifest in enumerate(manifests):
        if not isinstance(manifest, dict) or not all(manifest.get(k) for k in ("apiVersion", "kind")) \
                or not (manifest.get("metadata") or {}).get("name"):
            problems.append("component %s: manifest #%d needs apiVersion, kind and metadata.name" % (name, index))
    return problems


def component_manifests(component):
    """Every plain object of a component, in apply order: its Namespace first (when labelled)."""
    manifests = []
    labels = component.get("namespace_labels")
    if labels:
        manifests.append({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": component["namespace"], "labels": dict(labels)},
        })
    manifests.extend(copy_data(m) for m in component.get("manifests") or [])
    return manifests


def manifest_filename(index, manifest):
    """``01-storageclass-fast-scratch.yaml``: ordered, readable, stable."""
    name = re.sub(r"[^a-z0-9.-]+", "-", manifest["metadata"]["name"].lower()).strip("-")
    return "%02d-%s-%s.yaml" % (index, manifest["kind"].lower(), name)


def manifest_files(component):
    """``[{"path": "00-namespace-x.yaml", "content": {...}}, ...]`` for the bundle directory."""
    return [{"path": manifest_filename(index, manifest), "content": manifest}
            for index, manifest in enumerate(component_manifests(component))]


def fleet_bundle(component):
    """The ``fleet.yaml`` of a component's Fleet bundle (chart, repo, version, release, namespace, values)."""
    problems = validate_component(component)
    if problems:
        raise ValueError("; ".join(problems))
    bundle = {"defaultNamespace": component["namespace"]}
    if component.get("namespace_labels"):
        bundle["namespaceLabels"] = dict(component["namespace_labels"])
    # Optional Fleet ordering: bundle labels and dependsOn (name or label selector of other bundles).
    if component.get("fleet_labels"):
        bundle["labels"] = dict(component["fleet_labels"])
    if component.get("fleet_depends_on"):
        bundle["dependsOn"] = copy_data(component["fleet_depends_on"])
    chart = component.get("chart")
    if chart:
        bundle["helm"] = {
            "repo": chart["repo"],
            "chart": chart["name"],
            "version": str(chart["version"]),
            "releaseName": chart["release"],
            "values": copy_data(chart.get("values") or {}),
        }
    return bundle


def cuda_smoke_pod(name="cuda-smoke-test", namespace="default",
                   image="nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04", gpus=1, tolerations=None):
    """A pod that runs a CUDA sample once on a GPU worker through k3s's ``nvidia`` RuntimeClass.

    ``tolerations``: the cluster model's ``gpu_tolerations`` (the taint the GPU workers carry, whatever its
    value); None: the contract's default taint's (``nvidia.com/gpu``, ``Exists``).

    It meets the ``restricted`` Pod Security level (the K3s CIS profile's cluster default), so it
    runs in any namespace: non-root, no privilege escalation, no capabilities, RuntimeDefault seccomp.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": name,
                                "app.kubernetes.io/part-of": "gpu-cluster"}},
        "spec": {
            "runtimeClassName": "nvidia",
            "restartPolicy": "Never",
            "nodeSelector": {"gpu": "true"},
            "tolerations": cluster_model.given_gpu_tolerations(tolerations),
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "cuda",
                "image": image,
                "resources": {"limits": {"nvidia.com/gpu": int(gpus)}},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }
