"""Model serving you can watch (issue 30, item 5): the models' ServiceMonitor, alerts and dashboard,
the NetworkPolicy that lets Prometheus scrape them, and the preflight refusals. Every PromQL
expression is parsed (promql-parser, as in test_gpu_monitoring.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import llm_monitoring as lm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm as v

REPO = Path(__file__).resolve().parents[4]
QWEN = {"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingress_host": "qwen.127.0.0.1.nip.io"}
EMBED = {"name": "embed", "model": "BAAI/bge-base-en-v1.5", "gpu": 1, "namespace": "search"}
ON = {"enabled": True, "namespace": "monitoring", "queue_threshold": 20}


def specs():
    return [v.vllm_spec(QWEN), v.vllm_spec(EMBED)]


def by_name(components):
    return {c["name"]: c for c in components}


def test_off_by_default_changes_nothing():
    plain = v.vllm_components([QWEN, EMBED])
    assert v.vllm_components([QWEN, EMBED], monitoring={"enabled": False}) == plain
    assert "llm-monitoring" not in by_name(plain)
    assert lm.component(specs(), None) is None


def test_the_component_watches_every_namespace_of_the_models():
    components = v.vllm_components([QWEN, EMBED], monitoring=ON)
    assert [c["name"] for c in components] == ["namespace-llm", "namespace-search", "qwen", "embed", "llm-monitoring"]
    watched = components[-1]
    assert watched["namespace"] == "monitoring" and watched["fleet_labels"] == {v.OWNER_LABEL: v.OWNER}
    kinds = [m["kind"] for m in watched["manifests"]]
    assert kinds == ["ServiceMonitor", "PrometheusRule", "ConfigMap"]
    monitor = watched["manifests"][0]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["llm", "search"]}
    # it selects the Services the deployment engine writes, on their named port
    service = v.vllm_service(v.vllm_spec(QWEN))
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def test_prometheus_may_scrape_the_models_only_when_they_are_watched():
    def peers(monitoring):
        components = by_name(v.vllm_components([QWEN], monitoring=monitoring))
        return components["namespace-llm"]["manifests"][0]["spec"]["ingress"][0]["from"]
    scraper = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
               "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    assert scraper in peers(ON)
    assert scraper not in peers(None)
    assert len(peers(ON)) == len(peers(None)) + 1


def test_one_down_alert_per_model_and_one_queue_alert():
    rule = lm.prometheus_rule(specs(), 30)
    rules = rule["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == ["VLLMModelDown", "VLLMModelDown", "VLLMQueueGrowing"]
    down = {(r["labels"]["namespace"], r["labels"]["model"]): r["expr"] for r in rules if r["alert"] == "VLLMModelDown"}
    assert down == {("llm", "qwen"): '(max(up{namespace="llm", service="qwen"}) or vector(0)) == 0',
                    ("search", "embed"): '(max(up{namespace="search", service="embed"}) or vector(0)) == 0'}
    queue = rules[-1]["expr"]
    assert 'vllm:num_requests_waiting{namespace=~"llm|search"}' in queue and ") > 30)" in queue and "deriv(" in queue
    # the model is named `model` in both alerts (issue 44; promtool evaluates both in tests/render)
    assert queue.count("sum by (namespace, model)") == 2 and "$labels.model" in rules[-1]["annotations"]["summary"]
    assert {r["labels"]["severity"] for r in rules} == {"critical", "warning"}


def test_runbooks_are_documented():
    docs = (REPO / "docs" / "llm.md").read_text()
    for rule in lm.prometheus_rule(specs())["spec"]["groups"][0]["rules"]:
        anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)[1]
        assert anchor == rule["alert"].lower() and f"### {rule['alert']}" in docs
    assert set(lm.ALERTS) == {r["alert"] for r in lm.prometheus_rule(specs())["spec"]["groups"][0]["rules"]}


def test_dashboard_shows_throughput_latency_queue_and_kv_cache():
    configmap = lm.dashboard_configmap(specs())
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(configmap["data"][lm.DASHBOARD_FILE])
    assert board["templating"]["list"][1]["query"] == "llm,search"
    exprs = {p["title"]: p["targets"][0]["expr"] for p in board["panels"]}
    assert "vllm:generation_tokens_total" in exprs["Generated tokens per second"]
    assert "vllm:e2e_request_latency_seconds_bucket" in exprs["Request latency (p95)"]
    assert "vllm:num_requests_waiting" in exprs["Waiting requests (queue)"]
    assert "vllm:kv_cache_usage_perc" in exprs["KV-cache use"]
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])


def test_every_expression_parses():
    promql_parser = pytest.importorskip("promql_parser")
    rules = lm.prometheus_rule(specs())["spec"]["groups"][0]["rules"]
    board = json.loads(lm.dashboard_configmap(specs())["data"][lm.DASHBOARD_FILE])
    expressions = [r["expr"] for r in rules] + [p["targets"][0]["expr"].replace("$namespace", ".*")
                                                for p in board["panels"]]
    for expr in expressions:
        promql_parser.parse(expr)
    with pytest.raises(ValueError):
        promql_parser.parse("(max(up{namespace=\"llm\"} or vector(0)) == ")


@pytest.mark.parametrize("value", [0, -1, 100001, "20", 2.5, True, None])
def test_queue_threshold_refused(value):
    with pytest.raises(ValueError, match="gpu_cluster_llm_queue_alert_threshold is"):
        lm.queue_threshold(value)


def test_the_operator_engine_is_refused_with_monitoring():
    with pytest.raises(ValueError, match="deployment engine"):
        v.vllm_components([QWEN], engine="operator", access={"api_key": False}, monitoring=ON)


def preflight(**settings):
    hostvars = {"localhost": dict({"gpu_cluster_llm_models": [QWEN]}, **settings)}
    return v.llm_problems({"all": ["localhost"]}, hostvars)


@pytest.mark.parametrize(("settings", "message"), [
    ({"gpu_cluster_llm_monitoring_enabled": "yes"}, "gpu_cluster_llm_monitoring_enabled is 'yes'; use true or false"),
    ({"gpu_cluster_llm_queue_alert_threshold": 0}, "gpu_cluster_llm_queue_alert_threshold is 0; use a whole number"),
    ({"gpu_cluster_llm_monitoring_enabled": True, "gpu_cluster_llm_engine": "operator",
      "gpu_cluster_llm_api_key": False}, "gpu_cluster_llm_monitoring_enabled is true with gpu_cluster_llm_engine operator"),
])
def test_preflight_refusals(settings, message):
    assert any(p.startswith(message) for p in preflight(**settings)), preflight(**settings)


def test_preflight_accepts_the_documented_settings():
    assert not [p for p in preflight(gpu_cluster_llm_monitoring_enabled=True, gpu_cluster_llm_queue_alert_threshold=50)
                if "monitoring" in p or "threshold" in p]
