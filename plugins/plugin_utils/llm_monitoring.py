# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model serving you can watch (issue 30, item 5): the vLLM models' ServiceMonitor, their alerts and
their Grafana dashboard, as pure functions of the model specs (:func:`vllm.vllm_spec`).

vLLM serves Prometheus metrics at ``/metrics`` on its API port, outside the API key (which guards
``/v1`` only). Metric names are those of vLLM's V1 engine: ``vllm:num_requests_waiting``,
``vllm:num_requests_running``, ``vllm:kv_cache_usage_perc`` (0..1), ``vllm:generation_tokens_total``,
``vllm:prompt_tokens_total``, ``vllm:request_success_total`` and the histograms
``vllm:e2e_request_latency_seconds`` and ``vllm:time_to_first_token_seconds``. The ServiceMonitor
adds ``namespace`` and ``service`` (the model's name) to every series; the alerts and the dashboard
group by those two.

Only the deployment engine is watched: the production-stack operator writes its own Service, whose
labels the collection does not control (preflight refuses monitoring with that engine).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_monitoring

COMPONENT = "llm-monitoring"
NAMESPACE = "monitoring"
SERVICE_MONITOR = "vllm-models"
RULE = "gpu-cluster-llm"
DASHBOARD = "gpu-cluster-llm-dashboard"
DASHBOARD_FILE = "gpu-cluster-llm.json"
RUNBOOK = "https://github.com/cps/gpu_cluster/blob/main/docs/llm.md#%s"
ALERTS = ("VLLMModelDown", "VLLMQueueGrowing")
# The Services of our models (vllm.vllm_service): what the ServiceMonitor selects.
SERVICE_LABELS = {"app.kubernetes.io/component": "llm", "app.kubernetes.io/part-of": "gpu-cluster"}
# kube-prometheus-stack's Prometheus pods: the ones the models' NetworkPolicy lets scrape.
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
DEFAULT_QUEUE_THRESHOLD = 20
MAX_QUEUE_THRESHOLD = 100000
SCRAPE_INTERVAL = "30s"
PART_OF = {"app.kubernetes.io/part-of": "gpu-cluster"}


def settings(monitoring=None):
    """``{enabled, namespace, queue_threshold}`` from the role's ``monitoring`` mapping (None: off).
    Raises ValueError for a threshold that is not a whole number in 1..100000."""
    monitoring = monitoring or {}
    enabled = monitoring.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ValueError("gpu_cluster_llm_monitoring_enabled is %r; use true or false (a YAML boolean)" % (enabled,))
    return {"enabled": enabled, "namespace": monitoring.get("namespace") or NAMESPACE,
            "queue_threshold": queue_threshold(monitoring.get("queue_threshold", DEFAULT_QUEUE_THRESHOLD))}


def queue_threshold(value):
    """The waiting-request count above which VLLMQueueGrowing fires (a whole number, 1..100000)."""
    problem = queue_threshold_problem(value)
    if problem:
        raise ValueError(problem)
    return int(value)


def queue_threshold_problem(value, name="gpu_cluster_llm_queue_alert_threshold"):
    """The preflight message for a bad threshold, or ''."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_QUEUE_THRESHOLD:
        return ("%s is %r; use a whole number of waiting requests from 1 to %d, like %d"
                % (name, value, MAX_QUEUE_THRESHOLD, DEFAULT_QUEUE_THRESHOLD))
    return ""


def _namespaces(specs):
    result = []
    for spec in specs:
        if spec["namespace"] not in result:
            result.append(spec["namespace"])
    return result


def service_monitor(specs, namespace=NAMESPACE):
    """One ServiceMonitor in the monitoring namespace for the models' Services in every LLM namespace."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": SERVICE_MONITOR, "namespace": namespace, "labels": dict(PART_OF)},
        "spec": {
            "namespaceSelector": {"matchNames": sorted(_namespaces(specs))},
            "selector": {"matchLabels": dict(SERVICE_LABELS)},
            "endpoints": [{"port": "http", "path": "/metrics", "interval": SCRAPE_INTERVAL}],
        },
    }


def _rule(alert, expr, summary, description, *, severity, duration, labels):
    return {"alert": alert, "expr": expr, "for": duration, "labels": dict(labels, severity=severity),
            "annotations": {"summary": summary, "description": description, "runbook_url": RUNBOOK % alert.lower()}}


def _selector(specs):
    return "namespace=~\"%s\"" % "|".join(sorted(_namespaces(specs)))


def alert_rules(specs, threshold=DEFAULT_QUEUE_THRESHOLD):
    """``VLLMModelDown`` per model (no target answers its /metrics, or none exists: the model's pods
    are gone) and ``VLLMQueueGrowing`` for any model whose waiting requests stay above ``threshold``
    and still grow."""
    threshold = queue_threshold(threshold)
    rules = []
    for spec in specs:
        target = "namespace=\"%s\", service=\"%s\"" % (spec["namespace"], spec["name"])
        rules.append(_rule(
            "VLLMModelDown", "(max(up{%s}) or vector(0)) == 0" % target,
            "Model %s/%s does not answer" % (spec["namespace"], spec["name"]),
            "No pod of model %s (%s) in namespace %s answers its metrics endpoint: it is not running, "
            "still loading, or crashing." % (spec["name"], spec["model"], spec["namespace"]),
            severity="critical", duration="10m", labels={"namespace": spec["namespace"], "model": spec["name"]}))
    # The model is the Service the ServiceMonitor scraped (label ``service``), named ``model`` as in
    # VLLMModelDown: label_replace copies it before the sums keep only namespace and model.
    waiting = "label_replace(vllm:num_requests_waiting{%s}, \"model\", \"$1\", \"service\", \"(.+)\")" % _selector(specs)
    growing = ("label_replace(deriv(vllm:num_requests_waiting{%s}[10m]), \"model\", \"$1\", \"service\", \"(.+)\")"
               % _selector(specs))
    rules.append(_rule(
        "VLLMQueueGrowing",
        "(sum by (namespace, model) (%s) > %d) and (sum by (namespace, model) (%s) > 0)" % (waiting, threshold, growing),
        "Model {{ $labels.namespace }}/{{ $labels.model }} has a growing queue",
        "{{ $value }} requests wait for model {{ $labels.model }} in namespace {{ $labels.namespace }} (more than "
        "%d, and growing): it needs more replicas or GPUs, or fewer callers." % threshold,
        severity="warning", duration="10m", labels={}))
    return [{"name": "llm-models", "rules": rules}]


def prometheus_rule(specs, threshold=DEFAULT_QUEUE_THRESHOLD, namespace=NAMESPACE):
    """The PrometheusRule ``gpu-cluster-llm`` holding :func:`alert_rules`."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": RULE, "namespace": namespace, "labels": dict(PART_OF)},
            "spec": {"groups": alert_rules(specs, threshold)}}


def dashboard(specs):
    """The Grafana dashboard of the models: throughput, latency, queue length and KV-cache use per
    model (``namespace/service``); ``$namespace`` picks the LLM namespaces shown."""
    sel = "namespace=~\"$namespace\""
    by = "namespace, service"
    legend = "{{namespace}}/{{service}}"
    panels = [
        gpu_monitoring.panel(1, "Generated tokens per second",
                             "sum by (%s) (rate(vllm:generation_tokens_total{%s}[5m]))" % (by, sel), legend, "short"),
        gpu_monitoring.panel(2, "Requests per second",
                             "sum by (%s) (rate(vllm:request_success_total{%s}[5m]))" % (by, sel), legend, "reqps"),
        gpu_monitoring.panel(3, "Request latency (p95)",
                             "histogram_quantile(0.95, sum by (%s, le) (rate(vllm:e2e_request_latency_seconds_bucket{%s}[5m])))"
                             % (by, sel), legend, "s"),
        gpu_monitoring.panel(4, "Time to first token (p95)",
                             "histogram_quantile(0.95, sum by (%s, le) (rate(vllm:time_to_first_token_seconds_bucket{%s}[5m])))"
                             % (by, sel), legend, "s"),
        gpu_monitoring.panel(5, "Waiting requests (queue)",
                             "sum by (%s) (vllm:num_requests_waiting{%s})" % (by, sel), legend, "short"),
        gpu_monitoring.panel(6, "KV-cache use", "max by (%s) (vllm:kv_cache_usage_perc{%s})" % (by, sel), legend,
                             "percentunit"),
    ]
    return gpu_monitoring.grafana_dashboard("gpu-cluster-llm", "LLM models", ["llm", "vllm", "gpu-cluster"],
                                            ("namespace", "Namespace", sorted(_namespaces(specs))), panels)


def dashboard_configmap(specs, namespace=NAMESPACE):
    """The dashboard's ConfigMap, loaded by Grafana's sidecar (label ``grafana_dashboard=1``)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": DASHBOARD, "namespace": namespace,
                         "labels": dict(PART_OF, **{gpu_monitoring.DASHBOARD_LABEL: "1"})},
            "data": {DASHBOARD_FILE: json.dumps(dashboard(specs), indent=2, sort_keys=True)}}


def component(specs, monitoring):
    """The component ``llm-monitoring`` (None when monitoring is off or there is no model)."""
    monitoring = settings(monitoring)
    if not monitoring["enabled"] or not specs:
        return None
    namespace = monitoring["namespace"]
    return {"name": COMPONENT, "namespace": namespace,
            "manifests": [service_monitor(specs, namespace),
                          prometheus_rule(specs, monitoring["queue_threshold"], namespace),
                          dashboard_configmap(specs, namespace)]}


def scrape_peer(monitoring):
    """The NetworkPolicy peer that lets Prometheus scrape the models (None when monitoring is off)."""
    monitoring = settings(monitoring)
    if not monitoring["enabled"]:
        return None
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": monitoring["namespace"]}},
            "podSelector": {"matchLabels": dict(PROMETHEUS_POD_LABELS)}}
