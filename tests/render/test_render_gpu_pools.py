"""Render the homelab (which declares example GPU pools) and validate the pool and monitoring objects:

* ConfigMaps and ResourceQuotas strict-valid against the Kubernetes schema (kubernetes-validate);
* ServiceMonitor and PrometheusRule against the openAPIV3Schema of the prometheus-operator v0.93.0 CRDs
  (tests/fixtures/prometheus-operator-v0.93.0/, unknown fields refused);
* every device-plugin configuration of the pools' ConfigMap against the plugin's config format;
* the kube-prometheus-stack values: every key we set exists in the chart's values.yaml (or, under a
  subchart's key, in that subchart's values.yaml; a key the chart documents only as a comment, like
  grafana's ``persistence.storageClassName``, counts);
* every PromQL expression of the rendered rule parsed.
"""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import kubernetes_validate
import pytest
import yaml
from test_render_components import CHARTS, FIXTURES, HOMELAB, bundles, fleet, inventory_k8s_version

KPS = CHARTS / "kube-prometheus-stack-88.5.3"
CRDS = FIXTURES / "prometheus-operator-v0.93.0"
DEVICE_PLUGIN_SCHEMA = FIXTURES / "k8s-device-plugin-v0.20.0" / "config-v1.schema.json"
SUBCHARTS = {"grafana": "grafana-values.yaml", "kube-state-metrics": "kube-state-metrics-values.yaml"}


RENDERS_USED = [(HOMELAB,)]  # started with the session (conftest.py)


@pytest.fixture(scope="module")
def render_root(renders_cache):
    return renders_cache.get(HOMELAB)[0]


@pytest.fixture(scope="module")
def cluster(render_root):
    return render_root / "homelab"


def objects(bundle_dir):
    found = []
    for path in sorted(bundle_dir.glob("*.yaml")):
        if path.name != "fleet.yaml":
            found.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return found


def crd_schema(plural):
    crd = yaml.safe_load((CRDS / f"monitoring.coreos.com_{plural}.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return strict(version["schema"]["openAPIV3Schema"])


def strict(schema):
    """The CRD schema with unknown fields refused (as the API server prunes/refuses them)."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node \
                    and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            pattern = node.get("pattern")
            if isinstance(pattern, str) and "(?i)" in pattern[1:]:
                # Go's regexp takes a flag group anywhere; Python's only at the start
                node["pattern"] = "(?i)" + pattern.replace("(?i)", "")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    # metadata is validated by the API server, not the CRD schema
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


def test_bundles(cluster):
    assert {"monitoring", "gpu-alerts", "gpu-quota-llm", "gpu-quota-default"} <= set(bundles(cluster))
    assert fleet(cluster / "monitoring")["helm"]["chart"] == "kube-prometheus-stack"
    assert fleet(cluster / "monitoring")["helm"]["version"] == "88.5.3"
    assert fleet(cluster / "gpu-alerts")["dependsOn"] == [
        {"selector": {"matchLabels": {"gpu-cluster.cps/bundle": "monitoring", "gpu-cluster.cps/cluster": "homelab"}}}]


def test_configmaps_and_quotas_are_strict_valid(cluster):
    version = inventory_k8s_version(HOMELAB)
    kinds = set()
    for name in ("gpu-operator", "monitoring", "gpu-quota-llm", "gpu-quota-default"):
        for doc in objects(cluster / name):
            kinds.add(doc["kind"])
            kubernetes_validate.validate(doc, version, strict=True)
    assert {"ConfigMap", "ResourceQuota"} <= kinds


def test_quotas(cluster):
    quota = {n: objects(cluster / f"gpu-quota-{n}")[0] for n in ("llm", "default")}
    assert quota["llm"]["spec"]["hard"] == {"requests.nvidia.com/mig-1g.10gb": "14"}
    assert quota["default"]["spec"]["hard"] == {"requests.nvidia.com/mig-1g.10gb": "0"}
    assert fleet(cluster / "gpu-quota-llm")["defaultNamespace"] == "llm"


def test_device_plugin_configs_parse(cluster):
    schema = json.loads(DEVICE_PLUGIN_SCHEMA.read_text())
    configmap = next(d for d in objects(cluster / "gpu-operator") if d["kind"] == "ConfigMap")
    assert configmap["metadata"]["name"] == "gpu-pools-device-plugin"
    assert sorted(configmap["data"]) == ["default", "inference", "notebooks", "training"]
    for text in configmap["data"].values():
        jsonschema.validate(yaml.safe_load(text), schema)
    notebooks = yaml.safe_load(configmap["data"]["notebooks"])
    assert notebooks["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    values = fleet(cluster / "gpu-operator")["helm"]["values"]
    assert values["devicePlugin"]["config"] == {"name": "gpu-pools-device-plugin", "default": "default"}
    assert values["mig"]["strategy"] == "mixed"


def test_node_labels(render_root):
    labels = yaml.safe_load((render_root / "_gpu_pools" / "homelab" / "node-labels.yaml").read_text())
    assert labels["wk-gpu4"] == {"gpu-cluster.cps/gpu-pool": "inference", "nvidia.com/device-plugin.config": "inference",
                                 "nvidia.com/mig.config": "all-1g.10gb"}
    assert labels["wk-gpu1"]["nvidia.com/device-plugin.config"] == "training"


@pytest.mark.parametrize(("kind", "plural"), [("ServiceMonitor", "servicemonitors"), ("PrometheusRule", "prometheusrules")])
def test_custom_resources_against_the_crds(cluster, kind, plural):
    schema = crd_schema(plural)
    found = [d for d in objects(cluster / "gpu-alerts") if d["kind"] == kind]
    assert len(found) == 1
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(found[0])
    broken = copy.deepcopy(found[0])
    broken["spec"]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


def test_rule_names_and_promql(cluster):
    promql_parser = pytest.importorskip("promql_parser")
    rule = next(d for d in objects(cluster / "gpu-alerts") if d["kind"] == "PrometheusRule")
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert {r["alert"] for r in alerts} == {"GPUDriverMissing", "GPUNodeWithoutPool", "GPUPoolCapacityLow",
                                            "GPUPoolUsageHigh", "GPUXidErrors", "GPUTemperatureHigh",
                                            "GPUNodeInMaintenance", "GPUPoolMisconfigured"}
    for item in alerts:
        promql_parser.parse(item["expr"])


def known_keys(ours, chart, text, prefix=""):
    """Keys we set that the chart's values.yaml does not have; an empty-mapping default accepts
    anything, a key documented as a comment (``# storageClassName:``) in the file counts."""
    missing = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if not isinstance(chart, dict) or key not in chart:
            if not re.search(rf"^\s*#\s*{re.escape(key)}:", text, re.M):
                missing.append(path)
        elif isinstance(value, dict) and isinstance(chart[key], dict) and chart[key]:
            missing += known_keys(value, chart[key], text, path + ".")
    return missing


def test_stack_values_exist_in_the_chart(cluster):
    values = fleet(cluster / "monitoring")["helm"]["values"]
    parent_text = (KPS / "values.yaml").read_text()
    parent = yaml.safe_load(parent_text)
    missing = []
    for key, section in values.items():
        if key in SUBCHARTS:
            text = (KPS / "charts" / SUBCHARTS[key]).read_text()
            merged = dict(yaml.safe_load(text), **(parent.get(key) or {}))
            missing += known_keys(section, merged, text, key + ".")
        else:
            missing += known_keys({key: section}, parent, parent_text)
    assert missing == []
    assert known_keys({"grafana": {"persistance": {}}}, parent, parent_text) == ["grafana.persistance"]
