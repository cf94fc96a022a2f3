# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU monitoring: kube-prometheus-stack values, the DCGM exporter's ServiceMonitor, the GPU
PrometheusRule (alerts named after the reference design) and the Grafana dashboard, as pure functions.

Metric names are those of kube-state-metrics (``kube_node_labels``, ``kube_node_status_allocatable``,
``kube_pod_container_resource_requests``; label and resource names sanitised to ``[a-zA-Z0-9_]``) and
of the DCGM exporter's default counters (``DCGM_FI_DEV_GPU_TEMP``, ``DCGM_FI_DEV_XID_ERRORS``, ...).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_logs, cluster_model
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.gpu_pools import POOL_LABEL, pool_capacity
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import VOLUME_SIZE as SIZE_RE

RUNBOOK = "https://github.com/cps/gpu_cluster/blob/main/docs/gpu-pools.md#%s"
ALERTS = ("GPUDriverMissing", "GPUNodeWithoutPool", "GPUPoolCapacityLow", "GPUPoolUsageHigh", "GPUXidErrors",
          "GPUTemperatureHigh", "GPUNodeInMaintenance", "GPUPoolMisconfigured")
MAINTENANCE_LABEL = cluster_model.MAINTENANCE_LABEL
# Every GPU resource the device plugin can advertise (kube-state-metrics' spelling).
GPU_RESOURCES_RE = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.*"
INFRA_LABEL = cluster_model.INFRA_LABEL
INFRA_TOLERATION = cluster_model.INFRA_TOLERATION
DASHBOARD_LABEL = "grafana_dashboard"
BUNDLE_LABEL = "gpu-cluster.cps/bundle"
DCGM_SERVICE_LABELS = {"app": "nvidia-dcgm-exporter"}
DCGM_PORT = "gpu-metrics"
DURATION_RE = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")


def settings_problems(retention=None, storage_size=None):
    """The monitoring settings as the stack takes them, for preflight (issue 43): the retention a
    Prometheus duration above zero (a zero retention keeps nothing), the volume a whole number of Gi
    or Ti above zero (VOLUME_SIZE). ``None``: not set."""
    problems = []
    if retention is not None and not (isinstance(retention, str) and DURATION_RE.fullmatch(retention)
                                      and any(int(n) for n in re.findall(r"[0-9]+", retention))):
        problems.append("gpu_cluster_monitoring_retention is %r; use a Prometheus duration above zero, like 15d "
                        "(units ms, s, m, h, d, w, y)" % (retention,))
    if storage_size is not None and not (isinstance(storage_size, str) and SIZE_RE.fullmatch(storage_size)):
        problems.append("gpu_cluster_monitoring_storage_size is %r; use a whole number of Gi or Ti above zero, like 50Gi"
                        % (storage_size,))
    return problems


def ksm_label(label):
    """kube-state-metrics' name of a Kubernetes label in ``kube_node_labels``: ``label_`` + sanitised."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def ksm_resource(resource):
    """kube-state-metrics' ``resource`` label value: ``nvidia.com/mig-1g.10gb`` -> ``nvidia_com_mig_1g_10gb``."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


# kube-state-metrics' resource names back to Kubernetes' (what the docs and the other alerts show):
# (regex on the ksm value, replacement), applied with PromQL's label_replace, whose regex is anchored.
# The GPU resources the device plugin advertises: nvidia.com/gpu, nvidia.com/gpu.shared (time-slicing with
# renameByDefault) and nvidia.com/mig-<g>g.<mem>gb, with +me for the media-extension profiles.
RESOURCE_SPELLINGS = (
    ("nvidia_com_gpu", "nvidia.com/gpu"),
    ("nvidia_com_gpu_shared", "nvidia.com/gpu.shared"),
    ("nvidia_com_mig_([0-9]+g)_([0-9]+gb)", "nvidia.com/mig-$1.$2"),
    ("nvidia_com_mig_([0-9]+g)_([0-9]+gb)_me", "nvidia.com/mig-$1.$2+me"),
)


def docs_resource(expr):
    """``expr`` with its ``resource`` label spelt as Kubernetes spells the resource (``nvidia.com/gpu``),
    not as kube-state-metrics does (``nvidia_com_gpu``), so every GPU alert names it the same way."""
    for regex, replacement in RESOURCE_SPELLINGS:
        expr = "label_replace(%s, \"resource\", \"%s\", \"resource\", \"%s\")" % (expr, replacement, regex)
    return expr


def retention_size(storage_size):
    """Prometheus ``retentionSize`` for a volume of ``storage_size`` (``50Gi``): 85 % of it (Prometheus'
    ``GB`` is 2**30 bytes, a Gi), so old blocks are dropped before the volume fills."""
    match = SIZE_RE.fullmatch(str(storage_size))
    if not match:
        raise ValueError("storage size %r must be a whole number of Gi or Ti, like 50Gi" % (storage_size,))
    gib = int(match.group(1)) * (1024 if match.group(2) == "Ti" else 1)
    return "%dGB" % max(1, int(gib * 0.85))


def _placement(infra):
    if not infra:
        return {}
    return {"nodeSelector": {INFRA_LABEL: "true"}, "tolerations": [dict(INFRA_TOLERATION)]}


def stack_values(retention="15d", storage_size="50Gi", *, grafana_storage_size="10Gi",
                 storage_class=cluster_model.STATE_STORAGE_CLASS,
                 infra=False, logs=False, extra=None):
    """kube-prometheus-stack values: Prometheus retention and storage, Grafana storage and dashboards
    sidecar, every ServiceMonitor/PrometheusRule of the cluster selected, kube-state-metrics exporting
    the GPU node labels the alerts read, and infra-node placement when ``infra``. Prometheus and
    Grafana keep their databases on local volumes (``storage_class``, k3s's local-path by default: the
    TSDB and SQLite do not lock on NFS), on the infra nodes or else the servers
    (:func:`cluster_model.state_placement`). ``logs``: Grafana gets the Loki data source
    (:func:`cluster_logs.datasource`)."""
    if not isinstance(retention, str) or not DURATION_RE.fullmatch(retention):
        raise ValueError("retention %r must be a Prometheus duration, like 15d" % (retention,))
    retention_size(grafana_storage_size)
    placement = _placement(infra)
    state = cluster_model.state_placement(infra)
    prometheus_spec = {
        "retention": retention,
        "retentionSize": retention_size(storage_size),
        "storageSpec": {"volumeClaimTemplate": {"spec": {
            "storageClassName": storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": str(storage_size)}},
        }}},
        # Select every ServiceMonitor, PodMonitor, Probe and PrometheusRule, not only the release's.
        "ruleSelectorNilUsesHelmValues": False,
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "probeSelectorNilUsesHelmValues": False,
    }
    prometheus_spec.update(state)
    values = {
        "prometheus": {"prometheusSpec": prometheus_spec},
        "alertmanager": {"alertmanagerSpec": dict(placement)},
        "prometheusOperator": dict(placement),
        "grafana": dict({
            # keep: its database (dashboards, users) outlives an uninstall, like the hub's (docs/gpu-pools.md)
            "persistence": {"enabled": True, "storageClassName": storage_class, "size": str(grafana_storage_size),
                            "annotations": {"helm.sh/resource-policy": "keep"}},
            "sidecar": {"dashboards": {"enabled": True, "label": DASHBOARD_LABEL, "labelValue": "1",
                                       "searchNamespace": "ALL"}},
        }, **state),
        "kube-state-metrics": dict({
            "metricLabelsAllowlist": ["nodes=[gpu,%s,nvidia.com/device-plugin.config,nvidia.com/mig.config,%s]"
                                      % (POOL_LABEL, MAINTENANCE_LABEL)],
        }, **placement),
    }
    if logs:
        values["grafana"]["additionalDataSources"] = [cluster_logs.datasource()]
    return _merge(values, extra or {})


def _merge(base, override):
    result = dict(base)
    for key, value in override.items():
        result[key] = _merge(result[key], value) if isinstance(value, dict) and isinstance(result.get(key), dict) else value
    return result


def dcgm_service_monitor(namespace="monitoring", operator_namespace="gpu-operator", interval="15s"):
    """ServiceMonitor scraping the GPU Operator's DCGM exporter (Service ``nvidia-dcgm-exporter``, port
    ``gpu-metrics``); the scraped pod's node becomes the ``node`` label (joins with kube-state-metrics)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "nvidia-dcgm-exporter", "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}},
        "spec": {
            "namespaceSelector": {"matchNames": [operator_namespace]},
            "selector": {"matchLabels": dict(DCGM_SERVICE_LABELS)},
            "endpoints": [{
                "port": DCGM_PORT,
                "path": "/metrics",
                "interval": interval,
                "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node",
                                 "action": "replace"}],
            }],
        },
    }


def _rule(alert, expr, summary, description, *, severity="warning", duration="15m", labels=None):
    rule_labels = {"severity": severity}
    rule_labels.update(labels or {})
    return {
        "alert": alert,
        "expr": expr,
        "for": duration,
        "labels": rule_labels,
        "annotations": {"summary": summary, "description": description, "runbook_url": RUNBOOK % alert.lower()},
    }


def _pool_join(metric, resource, pool):
    return ("%s{resource=\"%s\"} * on (node) group_left () max by (node) (kube_node_labels{%s=\"%s\"})"
            % (metric, ksm_resource(resource), ksm_label(POOL_LABEL), pool))


def alert_rules(pools=None, workers=None, *, usage_threshold=0.9, temperature_threshold=85):
    """The rule groups of the GPU PrometheusRule. ``GPUNodeWithoutPool``, ``GPUPoolCapacityLow`` and
    ``GPUPoolUsageHigh`` are written only when pools are declared (one of the latter two per pool and
    resource, with the pool's expected capacity from ``pool_capacity``).

    The DCGM rules read only series that carry the ``node`` label our ServiceMonitor adds: another scrape
    of the same exporter (the GPU Operator's own ServiceMonitor, which the collection switches off, or a
    user's) cannot make them fire twice. A node in maintenance holds back GPUDriverMissing and
    GPUPoolMisconfigured (its driver and MIG layout may change while it is out) and its pool's
    GPUPoolCapacityLow; GPUNodeInMaintenance fires instead. Capacity counts only nodes that are Ready and
    schedulable (a NotReady node keeps its allocatable in kube-state-metrics)."""
    gpu_label = ksm_label("gpu")
    in_maintenance = "max by (node) (kube_node_labels{%s=\"true\"})" % ksm_label(MAINTENANCE_LABEL)
    node_rules = [
        _rule("GPUDriverMissing",
              "(max by (node) (kube_node_labels{%s=\"true\"}) unless on (node) "
              "(max by (node) (kube_node_status_allocatable{resource=~\"nvidia_com_gpu.*|nvidia_com_mig_.*\"}) > 0)) "
              "unless on (node) %s" % (gpu_label, in_maintenance),
              "GPU node {{ $labels.node }} advertises no GPU resource",
              "Node {{ $labels.node }} is labelled gpu=true but advertises no nvidia.com GPU resource: the driver or "
              "the device plugin is not running there."),
        _rule("GPUXidErrors",
              "(max by (node, gpu, UUID) (changes(DCGM_FI_DEV_XID_ERRORS{node!=\"\"}[15m])) > 0) "
              "and on (node, gpu, UUID) (max by (node, gpu, UUID) (DCGM_FI_DEV_XID_ERRORS{node!=\"\"}) > 0)",
              "GPU {{ $labels.gpu }} on {{ $labels.node }} reported an XID error",
              "DCGM reports a new XID error on GPU {{ $labels.gpu }} ({{ $labels.UUID }}) of node {{ $labels.node }}.",
              severity="critical", duration="0m"),
        _rule("GPUTemperatureHigh",
              "max by (node, gpu, UUID) (DCGM_FI_DEV_GPU_TEMP{node!=\"\"}) > %d" % int(temperature_threshold),
              "GPU {{ $labels.gpu }} on {{ $labels.node }} is at {{ $value }} C",
              "GPU {{ $labels.gpu }} of node {{ $labels.node }} has been above %d C for 10 minutes." % int(temperature_threshold),
              duration="10m"),
        _rule("GPUNodeInMaintenance",
              "max by (node) (kube_node_labels{%s=\"true\", %s=\"true\"})" % (gpu_label, ksm_label(MAINTENANCE_LABEL)),
              "GPU node {{ $labels.node }} is in maintenance",
              "Node {{ $labels.node }} is cordoned for maintenance (label %s=true, playbooks/gpu_node_maintenance.yml): "
              "its pool runs with less capacity, and its GPUPoolCapacityLow alert is held back until it is back."
              % MAINTENANCE_LABEL,
              severity="info", duration="0m"),
    ]
    groups = [{"name": "gpu-nodes", "rules": node_rules}]
    if pools:
        pool_rules = [_rule(
            "GPUNodeWithoutPool",
            "max by (node) (kube_node_labels{%s=\"true\", %s=\"\"})" % (gpu_label, ksm_label(POOL_LABEL)),
            "GPU node {{ $labels.node }} is in no GPU pool",
            "Node {{ $labels.node }} is labelled gpu=true but has no %s label; add it to gpu_cluster_gpu_pools." % POOL_LABEL)]
        for pool in pool_capacity(pools, workers):
            in_pool = "max by (node) (kube_node_labels{%s=\"%s\"})" % (ksm_label(POOL_LABEL), pool["name"])
            expected = "|".join(ksm_resource(r) for r in sorted(pool["resources"]))
            pool_rules.append(_rule(
                "GPUPoolMisconfigured",
                docs_resource(
                    "max by (node, resource) ((kube_node_status_allocatable{resource=~\"%s\", resource!~\"%s\"} > 0) "
                    "* on (node) group_left () %s) unless on (node) %s"
                    % (GPU_RESOURCES_RE, expected, in_pool, in_maintenance)),
                "GPU node {{ $labels.node }} of pool %s advertises the wrong GPU resource" % pool["name"],
                "Node {{ $labels.node }} is in GPU pool %s (%s), which offers %s, but it advertises "
                "{{ $labels.resource }}: its device plugin or MIG configuration does not match the pool "
                "(nvidia.com/device-plugin.config, nvidia.com/mig.config)."
                % (pool["name"], pool["allocation"], ", ".join(sorted(pool["resources"]))),
                labels={"pool": pool["name"]}))
            maintenance = ("max(kube_node_labels{%s=\"%s\", %s=\"true\"})"
                           % (ksm_label(POOL_LABEL), pool["name"], ksm_label(MAINTENANCE_LABEL)))
            for resource, count in sorted(pool["resources"].items()):
                labels = {"pool": pool["name"], "resource": resource}
                allocatable = _pool_join("kube_node_status_allocatable", resource, pool["name"])
                # what the pool offers: its Ready, schedulable nodes' allocatable (a NotReady node keeps its
                # allocatable in kube-state-metrics; the runbook looks for NotReady and cordoned nodes)
                offered = ("%s * on (node) group_left () (max by (node) "
                           "(kube_node_status_condition{condition=\"Ready\", status=\"true\"}) == 1) "
                           "unless on (node) (max by (node) (kube_node_spec_unschedulable) == 1)" % allocatable)
                pool_rules.append(_rule(
                    "GPUPoolCapacityLow",
                    # held back while one of the pool's nodes is in maintenance (GPUNodeInMaintenance says so)
                    "((sum(%s) or vector(0)) < %d) unless on () %s" % (offered, count, maintenance),
                    "GPU pool %s offers fewer %s than expected" % (pool["name"], resource),
                    "GPU pool %s has {{ $value }} allocatable %s, expected %d." % (pool["name"], resource, count),
                    labels=labels))
                requests = ("(kube_pod_container_resource_requests{resource=\"%s\"} unless on (namespace, pod) "
                            "(kube_pod_status_phase{phase=~\"Succeeded|Failed\"} == 1))"
                            % ksm_resource(resource))
                pool_rules.append(_rule(
                    "GPUPoolUsageHigh",
                    "sum(%s * on (node) group_left () max by (node) (kube_node_labels{%s=\"%s\"})) / sum(%s) > %s"
                    % (requests, ksm_label(POOL_LABEL), pool["name"], allocatable, _number(usage_threshold)),
                    "GPU pool %s is almost fully requested" % pool["name"],
                    "Pods request {{ $value | humanizePercentage }} of GPU pool %s's %s." % (pool["name"], resource),
                    labels=labels))
        groups.append({"name": "gpu-pools", "rules": pool_rules})
    return groups


def _number(value):
    number = float(value)
    if not 0 < number <= 1:
        raise ValueError("usage threshold %r must be a fraction in (0, 1], like 0.9" % (value,))
    return ("%g" % number)


def prometheus_rule(pools=None, workers=None, *, namespace="monitoring", usage_threshold=0.9, temperature_threshold=85):
    """The PrometheusRule ``gpu-cluster-gpu`` holding :func:`alert_rules`."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gpu-cluster-gpu", "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}},
        "spec": {"groups": alert_rules(pools, workers, usage_threshold=usage_threshold,
                                       temperature_threshold=temperature_threshold)},
    }


def panel(panel_id, title, expr, legend, unit):
    x, y = (panel_id - 1) % 2 * 12, (panel_id - 1) // 2 * 8
    return {
        "id": panel_id, "type": "timeseries", "title": title, "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
    }


def dashboard(pools=None):
    """The Grafana dashboard (a dict) for GPUs and pools; ``$pool`` selects a pool's nodes."""
    pool_nodes = "on (node) group_left () max by (node) (kube_node_labels{%s=~\"$pool\"})" % ksm_label(POOL_LABEL)
    panels = [
        panel(1, "GPU utilisation", "avg by (node, gpu) (DCGM_FI_DEV_GPU_UTIL * %s)" % pool_nodes, "{{node}} GPU {{gpu}}", "percent"),
        panel(2, "GPU memory used", "sum by (node, gpu) (DCGM_FI_DEV_FB_USED * %s) * 1048576" % pool_nodes, "{{node}} GPU {{gpu}}",
              "bytes"),
        panel(3, "GPU temperature", "max by (node, gpu) (DCGM_FI_DEV_GPU_TEMP * %s)" % pool_nodes, "{{node}} GPU {{gpu}}",
              "celsius"),
        panel(4, "GPU power", "sum by (node, gpu) (DCGM_FI_DEV_POWER_USAGE * %s)" % pool_nodes, "{{node}} GPU {{gpu}}", "watt"),
        panel(5, "Allocatable GPU resources per pool",
              "sum by (%s, resource) (kube_node_status_allocatable{resource=~\"nvidia_com_.*\"} * on (node) group_left (%s) "
              "max by (node, %s) (kube_node_labels{%s=~\"$pool\"}))" % ((ksm_label(POOL_LABEL),) * 4),
              "{{%s}} {{resource}}" % ksm_label(POOL_LABEL), "short"),
        panel(6, "Requested GPU resources per pool",
              "sum by (%s, resource) (kube_pod_container_resource_requests{resource=~\"nvidia_com_.*\"} * on (node) group_left (%s) "
              "max by (node, %s) (kube_node_labels{%s=~\"$pool\"}))" % ((ksm_label(POOL_LABEL),) * 4),
              "{{%s}} {{resource}}" % ksm_label(POOL_LABEL), "short"),
        panel(7, "XID errors (last code)", "max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS * %s)" % pool_nodes, "{{node}} GPU {{gpu}}",
              "none"),
    ]
    names = sorted(p.get("name") for p in pools or [] if isinstance(p, dict) and isinstance(p.get("name"), str))
    return grafana_dashboard("gpu-cluster-gpus", "GPUs and GPU pools", ["gpu", "gpu-cluster"], ("pool", "GPU pool", names),
                             panels)


def grafana_dashboard(uid, title, tags, variable, panels):
    """A Grafana dashboard (a dict) over the Prometheus data source, ``variable`` = (name, label,
    values) a multi-select with "All" that the panels' expressions read as ``$<name>``."""
    name, label, values = variable
    return {
        "uid": uid,
        "title": title,
        "tags": list(tags),
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {"name": name, "type": "custom", "label": label, "includeAll": True, "multi": True, "allValue": ".*",
             "query": ",".join(values), "current": {"text": "All", "value": "$__all"}},
        ]},
        "panels": panels,
    }


def dashboard_configmap(pools=None, namespace="monitoring"):
    """ConfigMap the Grafana sidecar loads (label ``grafana_dashboard=1``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "gpu-cluster-gpu-dashboard", "namespace": namespace,
                     "labels": {DASHBOARD_LABEL: "1", "app.kubernetes.io/part-of": "gpu-cluster"}},
        "data": {"gpu-cluster-gpus.json": json.dumps(dashboard(pools), indent=2, sort_keys=True)},
    }


def rule_expressions(rule_object):
    """Every PromQL expression of a PrometheusRule (alert name or record, expr)."""
    return [(r.get("alert") or r.get("record"), r["expr"])
            for group in rule_object["spec"]["groups"] for r in group["rules"]]


def dashboard_expressions(configmap):
    """Every PromQL expression of a dashboard ConfigMap, Grafana variables replaced by a matching regex."""
    result = []
    for text in configmap["data"].values():
        for panel in json.loads(text)["panels"]:
            for target in panel["targets"]:
                result.append((panel["title"], target["expr"].replace("$pool", ".*")))
    return result
