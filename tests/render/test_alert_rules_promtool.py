"""The rendered alert rules, evaluated by Prometheus's own rule engine (issue 44).

``promtool check rules`` parses the PrometheusRules the homelab renders (the GPU alerts of
``gpu-alerts`` and the model alerts of ``llm-monitoring``), and ``promtool test rules`` evaluates each
documented alert against synthetic series shaped like what the exporters emit: a firing case with the
labels the docs promise (docs/gpu-pools.md and docs/llm.md, "Alerts and runbooks") and a quiet case.
promtool is Debian's ``prometheus`` package (scripts/install-host-deps.sh installs it); without it the
tier fails, naming the package.

Series shapes, from the exporters' own sources:
- kube-state-metrics (docs/metrics/cluster/node-metrics.md, pod-metrics.md): ``kube_node_labels`` with
  each node label as ``label_<sanitised name>``, ``kube_node_status_allocatable{resource, unit}`` with the
  resource name sanitised (``nvidia_com_gpu``), ``kube_node_status_condition{condition, status}``,
  ``kube_node_spec_unschedulable``, ``kube_pod_container_resource_requests{node, resource}``,
  ``kube_pod_status_phase{phase}``; every series carries the scrape's ``job``, ``instance`` etc.
- DCGM exporter (default-counters.csv): ``DCGM_FI_DEV_GPU_TEMP`` and ``DCGM_FI_DEV_XID_ERRORS`` with
  ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``. Scraped twice when the GPU
  Operator's own ServiceMonitor is on: once by ours (``node`` added from the pod's node) and once
  without ``node``; both shapes are in the DCGM cases, so an alert that fires twice fails them.
- vLLM (V1 metrics): ``vllm:num_requests_waiting{model_name, engine}``, scraped through the model's
  Service (the ServiceMonitor adds ``namespace``, ``service``, ``pod``); ``up`` per target.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from test_render_operations import OPERATIONS_RENDER, OPERATIONS_SETTINGS

RENDERS_USED = [OPERATIONS_RENDER]  # started with the session (conftest.py)
PROMTOOL = shutil.which("promtool")
QUEUE = OPERATIONS_SETTINGS["gpu_cluster_llm_queue_alert_threshold"]

# kube-prometheus-stack scrapes kube-state-metrics with honorLabels: a pod's series keeps the pod's own
# namespace; a node's series gets the scraped target's (monitoring)
KSM_TARGET = 'job="kube-state-metrics", instance="10.42.0.9:8080", endpoint="http", service="kube-prometheus-stack-kube-state-metrics"'
KSM = KSM_TARGET + ', namespace="monitoring"'
DCGM = ('gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", pci_bus_id="00000000:01:00.0", device="nvidia0", '
        'modelName="NVIDIA A100 80GB PCIe", Hostname="nvidia-dcgm-exporter-7x2kq", namespace="gpu-operator", '
        'service="nvidia-dcgm-exporter", endpoint="gpu-metrics", pod="nvidia-dcgm-exporter-7x2kq", '
        'container="nvidia-dcgm-exporter", instance="10.42.3.7:9400"')
# our ServiceMonitor (gpu-alerts) adds node; the GPU Operator's own adds none (job differs too)
DCGM_OURS = 'job="monitoring/nvidia-dcgm-exporter", node="wk-gpu1", ' + DCGM
DCGM_OPERATORS = 'job="nvidia-dcgm-exporter", ' + DCGM
VLLM = 'namespace="llm", service="qwen", pod="qwen-5d9c7b7f4-abcde", job="qwen", endpoint="http", instance="10.42.4.12:8000"'
EMBED_UP = {"series": 'up{namespace="llm", service="embed", pod="embed-6c8d9f5b7-fghij", job="embed", endpoint="http", '
                      'instance="10.42.4.13:8000"}', "values": "1x40"}


def node_labels(node, pool=None, maintenance=False):
    labels = f'{KSM}, node="{node}", label_gpu="true"'
    if pool:
        labels += f', label_gpu_cluster_cps_gpu_pool="{pool}"'
    if maintenance:
        labels += ', label_gpu_cluster_cps_maintenance="true"'
    return {"series": f"kube_node_labels{{{labels}}}", "values": "1x40"}


def allocatable(node, resource, count):
    return {"series": f'kube_node_status_allocatable{{{KSM}, node="{node}", resource="{resource}", unit="integer"}}',
            "values": f"{count}x40"}


def ready(node, is_ready=True):
    """kube-state-metrics writes one series per status; the one that holds is 1."""
    return [{"series": f'kube_node_status_condition{{{KSM}, node="{node}", condition="Ready", status="{status}"}}',
             "values": f"{int(holds)}x40"}
            for status, holds in (("true", is_ready), ("false", not is_ready), ("unknown", False))]


def schedulable(node, cordoned=False):
    return {"series": f'kube_node_spec_unschedulable{{{KSM}, node="{node}"}}', "values": f"{int(cordoned)}x40"}


def gpu_node(node, pool, resource, count, *, is_ready=True, maintenance=False):
    return [node_labels(node, pool, maintenance), allocatable(node, resource, count), *ready(node, is_ready),
            schedulable(node)]


def requests(node, resource, count, pod="train-0"):
    return [{"series": f'kube_pod_container_resource_requests{{{KSM_TARGET}, namespace="default", pod="{pod}", container="main", '
                       f'node="{node}", resource="{resource}", unit="integer"}}', "values": f"{count}x40"},
            {"series": f'kube_pod_status_phase{{{KSM_TARGET}, namespace="default", pod="{pod}", phase="Running"}}',
             "values": "1x40"}]


# The homelab's four GPU workers as their pools offer them (inventories/homelab/group_vars/all/gpu_pools.yml):
# training 2 x nvidia.com/gpu each, notebooks 8 x nvidia.com/gpu.shared, inference 14 x nvidia.com/mig-1g.10gb.
HEALTHY = {
    "wk-gpu1": ("training", "nvidia_com_gpu", 2),
    "wk-gpu2": ("training", "nvidia_com_gpu", 2),
    "wk-gpu3": ("notebooks", "nvidia_com_gpu_shared", 8),
    "wk-gpu4": ("inference", "nvidia_com_mig_1g_10gb", 14),
}


def cluster(**nodes):
    """Every GPU worker healthy, except the nodes given (node=[its series])."""
    series = []
    for node, (pool, resource, count) in HEALTHY.items():
        series += nodes.get(node.replace("-", "_"), gpu_node(node, pool, resource, count))
    return series


# alert -> [(case, input series, [expected alert labels], {annotation template values})]; each alert has a
# firing case with the labels its docs promise, and at least one quiet case.
CASES = {
    "GPUDriverMissing": [
        ("firing", cluster(wk_gpu1=gpu_node("wk-gpu1", "training", "nvidia_com_gpu", 0)),
         [{"node": "wk-gpu1", "severity": "warning"}]),
        ("quiet", cluster(), []),
        # issue 44: a node in maintenance (gpu_node_maintenance.yml) is held back, as the docs say
        ("quiet in maintenance", cluster(wk_gpu1=gpu_node("wk-gpu1", "training", "nvidia_com_gpu", 0, maintenance=True)), []),
    ],
    "GPUNodeWithoutPool": [
        ("firing", cluster(wk_gpu1=[node_labels("wk-gpu1")]), [{"node": "wk-gpu1", "severity": "warning"}]),
        ("quiet", cluster(), []),
    ],
    "GPUNodeInMaintenance": [
        ("firing", cluster(wk_gpu1=gpu_node("wk-gpu1", "training", "nvidia_com_gpu", 2, maintenance=True)),
         [{"node": "wk-gpu1", "severity": "info"}]),
        ("quiet", cluster(), []),
    ],
    "GPUTemperatureHigh": [
        # both scrapes of the exporter: one alert, with node (issue 44: it fired twice)
        ("firing", [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{DCGM_OURS}}}", "values": "90x40"},
                    {"series": f"DCGM_FI_DEV_GPU_TEMP{{{DCGM_OPERATORS}}}", "values": "90x40"}],
         [{"node": "wk-gpu1", "gpu": "0", "UUID": "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", "severity": "warning"}],
         {"$value": "90"}),
        ("quiet", [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{DCGM_OURS}}}", "values": "70x40"},
                   {"series": f"DCGM_FI_DEV_GPU_TEMP{{{DCGM_OPERATORS}}}", "values": "70x40"}], []),
    ],
    "GPUXidErrors": [
        ("firing", [{"series": f"DCGM_FI_DEV_XID_ERRORS{{{DCGM_OURS}}}", "values": "0x25 43x15"},
                    {"series": f"DCGM_FI_DEV_XID_ERRORS{{{DCGM_OPERATORS}}}", "values": "0x25 43x15"}],
         [{"node": "wk-gpu1", "gpu": "0", "UUID": "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", "severity": "critical"}]),
        ("quiet", [{"series": f"DCGM_FI_DEV_XID_ERRORS{{{DCGM_OURS}}}", "values": "0x40"},
                   {"series": f"DCGM_FI_DEV_XID_ERRORS{{{DCGM_OPERATORS}}}", "values": "0x40"}], []),
    ],
    "GPUPoolCapacityLow": [
        # issue 44: a NotReady node keeps its allocatable in kube-state-metrics; the pool offers 2 of 4
        ("firing NotReady", cluster(wk_gpu2=gpu_node("wk-gpu2", "training", "nvidia_com_gpu", 2, is_ready=False)),
         [{"pool": "training", "resource": "nvidia.com/gpu", "severity": "warning"}], {"$value": "2"}),
        ("firing cordoned", cluster(wk_gpu2=[node_labels("wk-gpu2", "training"), allocatable("wk-gpu2", "nvidia_com_gpu", 2),
                                             *ready("wk-gpu2"), schedulable("wk-gpu2", cordoned=True)]),
         [{"pool": "training", "resource": "nvidia.com/gpu", "severity": "warning"}], {"$value": "2"}),
        ("firing MIG", cluster(wk_gpu4=gpu_node("wk-gpu4", "inference", "nvidia_com_mig_1g_10gb", 7)),
         [{"pool": "inference", "resource": "nvidia.com/mig-1g.10gb", "severity": "warning"}], {"$value": "7"}),
        ("quiet", cluster(), []),
        ("quiet in maintenance",
         cluster(wk_gpu2=gpu_node("wk-gpu2", "training", "nvidia_com_gpu", 2, is_ready=False, maintenance=True)), []),
    ],
    "GPUPoolUsageHigh": [
        ("firing", cluster() + requests("wk-gpu1", "nvidia_com_gpu", 2) + requests("wk-gpu2", "nvidia_com_gpu", 2, "train-1"),
         [{"pool": "training", "resource": "nvidia.com/gpu", "severity": "warning"}], {"$value | humanizePercentage": "100%"}),
        ("quiet", cluster() + requests("wk-gpu1", "nvidia_com_gpu", 1), []),
    ],
    "GPUPoolMisconfigured": [
        # the time-sliced pool's node advertises whole GPUs: named as Kubernetes names the resource
        ("firing", cluster(wk_gpu3=gpu_node("wk-gpu3", "notebooks", "nvidia_com_gpu", 2)),
         [{"node": "wk-gpu3", "pool": "notebooks", "resource": "nvidia.com/gpu", "severity": "warning"}]),
        ("firing MIG", cluster(wk_gpu4=gpu_node("wk-gpu4", "inference", "nvidia_com_mig_3g_40gb", 4)),
         [{"node": "wk-gpu4", "pool": "inference", "resource": "nvidia.com/mig-3g.40gb", "severity": "warning"}]),
        ("quiet", cluster(), []),
        ("quiet in maintenance",
         cluster(wk_gpu4=gpu_node("wk-gpu4", "inference", "nvidia_com_mig_3g_40gb", 4, maintenance=True)), []),
    ],
    # the homelab's two models, qwen and embed, in namespace llm: embed answers in every case
    "VLLMModelDown": [
        ("firing", [{"series": f"up{{{VLLM}}}", "values": "0x40"}, EMBED_UP],
         [{"namespace": "llm", "model": "qwen", "severity": "critical"}]),
        ("firing absent", [EMBED_UP], [{"namespace": "llm", "model": "qwen", "severity": "critical"}]),
        ("quiet", [{"series": f"up{{{VLLM}}}", "values": "1x40"}, EMBED_UP], []),
    ],
    "VLLMQueueGrowing": [
        ("firing", [{"series": f'vllm:num_requests_waiting{{{VLLM}, model_name="Qwen/Qwen2.5-1.5B-Instruct", engine="0"}}',
                     "values": f"{QUEUE + 1}+2x40"}],
         [{"namespace": "llm", "model": "qwen", "severity": "warning"}], {"$value": str(QUEUE + 1 + 2 * 30)}),
        ("quiet", [{"series": f'vllm:num_requests_waiting{{{VLLM}, model_name="Qwen/Qwen2.5-1.5B-Instruct", engine="0"}}',
                    "values": "5x40"}], []),
    ],
}
EVAL_TIME = "30m"


@pytest.fixture(scope="module")
def rules(renders_cache, tmp_path_factory):
    """The groups of both PrometheusRules, as one rule file promtool reads; {alert: rule}."""
    cluster = renders_cache.get(*OPERATIONS_RENDER)[0] / "homelab"
    groups = []
    for path in [*sorted((cluster / "gpu-alerts").glob("*.yaml")), *sorted((cluster / "llm-monitoring").glob("*.yaml"))]:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "PrometheusRule":
                groups += doc["spec"]["groups"]
    directory = tmp_path_factory.mktemp("promtool")
    (directory / "rules.yml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    by_alert = {}
    for group in groups:
        for rule in group["rules"]:
            by_alert.setdefault(rule["alert"], []).append(rule)
    return directory, by_alert


def promtool(*args, cwd):
    assert PROMTOOL, "promtool is missing: install Debian's prometheus package (scripts/install-host-deps.sh does)"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120)


def test_promtool_accepts_every_rendered_rule(rules):
    directory, by_alert = rules
    result = promtool("check", "rules", "rules.yml", cwd=directory)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    assert set(CASES) == set(by_alert), "every rendered alert has its cases here, and only those"


def expected_annotations(rule, labels, values):
    """The rule's annotations with its ``{{ $labels.x }}`` and ``{{ $value ... }}`` filled in; promtool's
    own template engine renders the alert's, and they must agree (a label the alert lacks renders as
    ``<no value>`` there)."""
    result = {}
    for key, template in rule["annotations"].items():
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), f"<missing {m.group(1)}>"), template)
        for expr, value in values.items():
            text = text.replace(f"{{{{ {expr} }}}}", value)
        result[key] = text
    return result


@pytest.mark.parametrize("alert,case", [(alert, case[0]) for alert, cases in CASES.items() for case in cases])
def test_the_alert_in_prometheus_rule_engine(rules, alert, case):
    directory, by_alert = rules
    _name, series, expected, *values = next(c for c in CASES[alert] if c[0] == case)
    assert any(c[2] for c in CASES[alert]) and any(not c[2] for c in CASES[alert]), "a firing and a quiet case"
    candidates = by_alert[alert]
    exp_alerts = []
    for labels in expected:
        # of the alert's rules (one per pool and resource for the pool alerts), the one with these labels
        rule = next(r for r in candidates if all(labels.get(k) == v for k, v in r.get("labels", {}).items()))
        exp_alerts.append({"exp_labels": labels,
                           "exp_annotations": expected_annotations(rule, labels, values[0] if values else {})})
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series,
                       "alert_rule_test": [{"eval_time": EVAL_TIME, "alertname": alert, "exp_alerts": exp_alerts}]}]}
    name = re.sub(r"\W", "_", f"{alert}-{case}.yml")
    (directory / name).write_text(yaml.safe_dump(test, sort_keys=False))
    result = promtool("test", "rules", name, cwd=directory)
    assert result.returncode == 0, result.stdout + result.stderr
