"""GPU monitoring: stack values, ServiceMonitor, PrometheusRule and dashboard; every PromQL expression
parsed by a PromQL parser (promql-parser, the Python binding of the Rust promql-parser crate; pinned in
requirements-dev.txt), since no promtool binary can be had here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_monitoring as gm

promql_parser = pytest.importorskip("promql_parser")

REPO = Path(__file__).resolve().parents[4]
A100_80 = "NVIDIA A100 80GB PCIe"
HOMELAB_POOLS = yaml.safe_load((REPO / "inventories" / "homelab" / "group_vars" / "all" / "gpu_pools.yml").read_text())[
    "gpu_cluster_gpu_pools"]
HOMELAB_WORKERS = {f"wk-gpu{i}": {"gpu_cluster_gpu_count": 2, "gpu_cluster_gpu_model": A100_80} for i in range(1, 5)}


def test_sanitised_names():
    assert gm.ksm_label("gpu-cluster.cps/gpu-pool") == "label_gpu_cluster_cps_gpu_pool"
    assert gm.ksm_resource("nvidia.com/mig-1g.10gb") == "nvidia_com_mig_1g_10gb"
    assert gm.ksm_resource("nvidia.com/gpu.shared") == "nvidia_com_gpu_shared"


@pytest.mark.parametrize(("size", "expected"), [("50Gi", "42GB"), ("1Ti", "870GB"), ("1Gi", "1GB")])
def test_retention_size(size, expected):
    assert gm.retention_size(size) == expected


@pytest.mark.parametrize("size", ["50G", "0Gi", "", None, "50Mi"])
def test_retention_size_refuses(size):
    with pytest.raises(ValueError, match="whole number of Gi or Ti"):
        gm.retention_size(size)


def test_stack_values_placement_and_storage():
    values = gm.stack_values("30d", "100Gi", infra=True)
    spec = values["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d" and spec["retentionSize"] == "85GB"
    # the TSDB and Grafana's SQLite on local volumes, never NFS
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "local-path"
    assert values["grafana"]["persistence"]["storageClassName"] == "local-path"
    for section in (spec, values["grafana"], values["alertmanager"]["alertmanagerSpec"], values["prometheusOperator"],
                    values["kube-state-metrics"]):
        assert section["nodeSelector"] == {"node-role.kubernetes.io/infra": "true"}
        assert section["tolerations"][0]["key"] == "node-role.kubernetes.io/infra"
    # without infra nodes the stateful ones stay beside their local volume on a server, the rest float
    plain = gm.stack_values()
    for section in (plain["grafana"], plain["prometheus"]["prometheusSpec"]):
        assert section["nodeSelector"] == {"node-role.kubernetes.io/control-plane": "true"}
        assert "tolerations" not in section
    for section in (plain["alertmanager"]["alertmanagerSpec"], plain["prometheusOperator"], plain["kube-state-metrics"]):
        assert "nodeSelector" not in section
    assert gm.stack_values(extra={"grafana": {"adminUser": "me"}})["grafana"]["persistence"]["enabled"] is True
    with pytest.raises(ValueError, match="Prometheus duration"):
        gm.stack_values("15 days")


def test_rule_names_and_runbooks():
    rule = gm.prometheus_rule(HOMELAB_POOLS, HOMELAB_WORKERS)
    names = {name for name, _expr in gm.rule_expressions(rule)}
    assert names == set(gm.ALERTS)
    docs = (REPO / "docs" / "gpu-pools.md").read_text()
    for group in rule["spec"]["groups"]:
        for item in group["rules"]:
            anchor = item["annotations"]["runbook_url"].rsplit("#", 1)[1]
            assert anchor == item["alert"].lower()
            assert f"### {item['alert']}" in docs


def test_no_pool_rules_without_pools():
    names = {name for name, _expr in gm.rule_expressions(gm.prometheus_rule())}
    assert names == {"GPUDriverMissing", "GPUXidErrors", "GPUTemperatureHigh", "GPUNodeInMaintenance"}


def test_capacity_rules_carry_the_expected_counts():
    rules = [r for g in gm.prometheus_rule(HOMELAB_POOLS, HOMELAB_WORKERS)["spec"]["groups"] for r in g["rules"]
             if r["alert"] == "GPUPoolCapacityLow"]
    assert {(r["labels"]["pool"], r["labels"]["resource"]): re.search(r"\) < ([0-9]+)\)", r["expr"]).group(1)
            for r in rules} == {
        ("training", "nvidia.com/gpu"): "4", ("notebooks", "nvidia.com/gpu.shared"): "8",
        ("inference", "nvidia.com/mig-1g.10gb"): "14"}
    # held back while a node of the same pool is in maintenance, and only then
    for rule in rules:
        pool = rule["labels"]["pool"]
        assert rule["expr"].endswith(
            f'unless on () max(kube_node_labels{{label_gpu_cluster_cps_gpu_pool="{pool}", '
            'label_gpu_cluster_cps_maintenance="true"})')


def test_maintenance_alert_reads_the_label_kube_state_metrics_exports():
    rules = {r["alert"]: r for g in gm.prometheus_rule()["spec"]["groups"] for r in g["rules"]}
    rule = rules["GPUNodeInMaintenance"]
    assert rule["labels"]["severity"] == "info"
    assert 'label_gpu_cluster_cps_maintenance="true"' in rule["expr"]
    # kube-state-metrics only exports the node labels it is told to: the maintenance label is one
    allow = gm.stack_values()["kube-state-metrics"]["metricLabelsAllowlist"][0]
    assert gm.MAINTENANCE_LABEL in allow[len("nodes=["):-1].split(",")


def test_misconfigured_pool_alert_names_every_resource_but_the_pools_own():
    rules = [r for g in gm.prometheus_rule(HOMELAB_POOLS, HOMELAB_WORKERS)["spec"]["groups"] for r in g["rules"]
             if r["alert"] == "GPUPoolMisconfigured"]
    wrong = {r["labels"]["pool"]: re.search(r'resource!~"([^"]*)"', r["expr"]).group(1) for r in rules}
    assert wrong == {"training": "nvidia_com_gpu", "notebooks": "nvidia_com_gpu_shared",
                     "inference": "nvidia_com_mig_1g_10gb"}
    for rule in rules:
        assert 'resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.*"' in rule["expr"]
        assert f'label_gpu_cluster_cps_gpu_pool="{rule["labels"]["pool"]}"' in rule["expr"]


def test_every_rule_expression_parses():
    for name, expr in gm.rule_expressions(gm.prometheus_rule(HOMELAB_POOLS, HOMELAB_WORKERS)):
        try:
            promql_parser.parse(expr)
        except ValueError as exc:
            pytest.fail(f"{name}: {exc}: {expr}")


def test_every_dashboard_expression_parses():
    configmap = gm.dashboard_configmap(HOMELAB_POOLS)
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(configmap["data"]["gpu-cluster-gpus.json"])
    assert dashboard["templating"]["list"][1]["query"] == "inference,notebooks,training"
    expressions = gm.dashboard_expressions(configmap)
    assert len(expressions) == 7
    for title, expr in expressions:
        try:
            promql_parser.parse(expr)
        except ValueError as exc:
            pytest.fail(f"{title}: {exc}: {expr}")


def test_the_parser_check_can_fail():
    with pytest.raises(ValueError):
        promql_parser.parse("sum(kube_node_labels{label_gpu=\"true\"} > ")
    with pytest.raises(ValueError):
        promql_parser.parse("max by (node) (kube_node_labels{label_gpu=true})")


def test_usage_threshold_is_a_fraction():
    with pytest.raises(ValueError, match="fraction"):
        gm.alert_rules(HOMELAB_POOLS, HOMELAB_WORKERS, usage_threshold=90)


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                                      "nvidia.com/mig-3g.40gb", "nvidia.com/mig-7g.80gb", "nvidia.com/mig-1g.18gb",
                                      "nvidia.com/mig-1g.10gb+me", "nvidia.com/mig-2g.35gb"])
def test_kube_state_metrics_resource_names_are_spelt_back_as_kubernetes_spells_them(resource):
    """Issue 44: GPUPoolMisconfigured named the resource nvidia_com_gpu while the other alerts say
    nvidia.com/gpu. label_replace's regex is anchored at both ends (Prometheus docs, label_replace); each
    replacement applies to the value the one before left, as the nested calls do."""
    value = gm.ksm_resource(resource)
    for regex, replacement in gm.RESOURCE_SPELLINGS:
        match = re.fullmatch(regex, value)
        if match:
            value = re.sub(r"\$(\d)", r"\\\1", replacement)
            value = match.expand(value)
    assert value == resource
    assert gm.docs_resource("x").count("label_replace(") == len(gm.RESOURCE_SPELLINGS)
