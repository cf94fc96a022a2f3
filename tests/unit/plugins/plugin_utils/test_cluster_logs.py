"""Logs (issue 30, item 7): Loki and the Alloy collector's values, Grafana's data source, the
preflight refusals and the proof's collector on every node (plugin_utils/cluster_logs.py). The
charts' own rendering of these values is in tests/render/test_render_operations.py."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_logs as cl
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, cluster_workloads, gpu_monitoring, inventory_checks
from test_inventory_checks import homelab

ON = {"enabled": True, "monitoring": True}


def components(values, model=None, **kwargs):
    return cl.components(values, model or {"nodes": []}, loki_chart_version="7.3.0", alloy_chart_version="1.11.1", **kwargs)


def test_off_by_default_renders_nothing_and_grafana_keeps_its_sources():
    assert components({}) == [] and cl.problems({}) == []
    assert "additionalDataSources" not in gpu_monitoring.stack_values()["grafana"]
    assert gpu_monitoring.stack_values(logs=True)["grafana"]["additionalDataSources"] == [cl.datasource()]


@pytest.mark.parametrize(("values", "words"), [
    ({"enabled": "on"}, "gpu_cluster_logs_enabled is 'on'; use true or false"),
    (dict(ON, retention="36h"), "gpu_cluster_logs_retention is '36h'; use whole days"),
    (dict(ON, retention="14"), "gpu_cluster_logs_retention is '14'"),
    (dict(ON, retention="0d"), "gpu_cluster_logs_retention is '0d'"),
    # prometheus/common model.ParseDuration (Loki's): an int64 of nanoseconds, "out of range" beyond
    # 2562047h; 106752d is 2562048h
    (dict(ON, retention="106752d"), "gpu_cluster_logs_retention is '106752d', longer than Loki's durations hold"),
    (dict(ON, retention=14), "gpu_cluster_logs_retention is 14"),
    (dict(ON, storage_size="50G"), "gpu_cluster_logs_storage_size is '50G'; use a whole number of Gi or Ti"),
    ({"enabled": True, "monitoring": False}, "gpu_cluster_logs_enabled is true while the monitoring stack is off"),
])
def test_bad_settings_are_refused_with_what_to_write(values, words):
    found = cl.problems(values)
    assert any(words in message for message in found), found
    with pytest.raises(ValueError, match="gpu_cluster_logs"):
        components(values)


@pytest.mark.parametrize(("retention", "hours"), [("14d", 336), ("2w", 336), ("48h", 48), ("1d", 24)])
def test_retention_in_whole_days(retention, hours):
    assert cl.problems(dict(ON, retention=retention)) == []
    loki = components(dict(ON, retention=retention))[0]["chart"]["values"]
    assert loki["loki"]["limits_config"]["retention_period"] == f"{hours}h"
    assert loki["loki"]["compactor"]["retention_enabled"] is True


def test_loki_keeps_state_on_a_local_volume_of_the_servers_or_the_infra_nodes():
    loki = components(dict(ON, storage_size="80Gi"))[0]
    values = loki["chart"]["values"]
    assert (loki["name"], loki["namespace"]) == ("loki", "logging")
    assert values["deploymentMode"] == "SingleBinary" and values["singleBinary"]["replicas"] == 1
    assert values["singleBinary"]["persistence"] == {"enabled": True, "storageClass": "local-path", "size": "80Gi"}
    assert values["singleBinary"]["nodeSelector"] == {cluster_model.CONTROL_PLANE_LABEL: "true"}
    assert all(values[part]["replicas"] == 0 for part in ("read", "write", "backend"))
    infra = components(ON, infra=True)[0]["chart"]["values"]["singleBinary"]
    assert infra["nodeSelector"] == {cluster_model.INFRA_LABEL: "true"}
    assert infra["tolerations"] == [cluster_model.INFRA_TOLERATION]


def test_the_collector_reads_every_node_and_pushes_to_loki():
    groups, hostvars = homelab()
    hostvars[groups["gpu_workers"][0]]["gpu_cluster_node_taints"] = ["dedicated=ml:NoSchedule"]
    collector = components(ON, cluster_model.build(groups, hostvars))[1]
    values = collector["chart"]["values"]
    assert (collector["name"], collector["namespace"]) == ("log-collector", "logging")
    assert collector["namespace_labels"]["pod-security.kubernetes.io/enforce"] == "privileged"  # hostPath /var/log
    assert values["controller"]["type"] == "daemonset" and values["alloy"]["mounts"]["varlog"] is True
    assert {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"} in values["controller"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["controller"]["tolerations"]
    config = values["alloy"]["configMap"]["content"]
    assert 'field = "spec.nodeName=" + sys.env("HOSTNAME")' in config  # this node's pods only
    assert 'replacement   = "/var/log/pods/*$1/*.log"' in config
    assert "stage.cri {}" in config
    assert 'url = "http://loki.logging.svc.cluster.local:3100/loki/api/v1/push"' in config
    assert config.count("{") == config.count("}")


def test_preflight_and_the_proof_read_the_inventory():
    groups, hostvars = homelab()
    hostvars["cp1"].update(gpu_cluster_logs_enabled=True, gpu_cluster_monitoring_enabled=False)
    assert any("monitoring stack is off" in p for p in inventory_checks.operations_problems(groups, hostvars))
    hostvars["cp1"]["gpu_cluster_monitoring_enabled"] = True
    assert inventory_checks.operations_problems(groups, hostvars) == []
    del hostvars["cp1"]["gpu_cluster_monitoring_enabled"]  # on by default with GPU workers
    assert cl.inventory_values(groups, hostvars) == {"enabled": True, "monitoring": True}
    found = cluster_workloads.operations_workloads(cluster_model.build(groups, hostvars), cluster_workloads.operations_values(groups, hostvars))
    assert [(w["name"], w.get("every_node", False)) for w in found] == [("Loki", False), ("Log collector", True)]
    assert found[0]["pod"]["nodeSelector"] == {cluster_model.CONTROL_PLANE_LABEL: "true"}
    assert cluster_workloads.proof(groups, hostvars)["problems"] == []
