"""Backups beyond etcd and logs (issue 30, items 6 and 7), rendered by playbooks/render.yml for the
homelab with its commented settings switched on, through the pinned charts' own templates:

* the velero, loki and log-collector bundles render strict-valid with the vendored velero 12.1.0,
  loki 7.3.0 and alloy 1.11.1 charts (custom resources against the charts' CRDs, unknown fields refused);
* the Schedule and the BackupStorageLocation say what the inventory says; the S3 key pair is in no
  rendered file (the chart names the Secret the role writes through the API);
* Loki's volume is local (never NFS) where the cluster keeps state, retention is the inventory's;
* kube-prometheus-stack renders Grafana's Loki data source;
* every pod the three charts create schedules on the homelab's cluster model, and the node agent and
  the collector DaemonSets reach every node (each taint of the model tolerated);
* the Restore of playbooks/backup_restore.yml (written with gpu_cluster_restore_render_dir) is valid
  against Velero's Restore CRD and restores the schedule the bundle defines.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups, cluster_logs, cluster_model, scheduling
from test_render_charts import (
    HELM_CHARTS,
    HOMELAB,
    HOMELAB_K8S,
    REPO,
    _load_homelab,
    chart_workloads,
    crd_schemas,
    helm_template,
    validate_custom,
    validation_problems,
)

ACCESS_KEY = "SENTINEL-backup-access-key-1234"
SECRET_KEY = "SENTINEL-backup-secret-key-5678"
# The homelab's commented backup, log and model-metrics switches on, the S3 location (which has no
# default) given, every other setting left at its default (test_render_llm's "monitored" render is
# this one: one render for both files).
OPERATIONS_SETTINGS = {
    "gpu_cluster_llm_monitoring_enabled": True, "gpu_cluster_llm_queue_alert_threshold": 40,
    "gpu_cluster_backup_enabled": True,
    "gpu_cluster_backup_s3": {"endpoint": "minio.lan:9000", "bucket": "homelab",
                              "access_key": ACCESS_KEY, "secret_key": SECRET_KEY},
    "gpu_cluster_logs_enabled": True,
    # and the GPU taint with another key (issue 44; test_render_gpu_taint.py): the node agent and the
    # collector follow it like every GPU workload
    "gpu_cluster_gpu_taint": "example.com/accelerator=nvidia:NoSchedule",
}
OPERATIONS_GPU_TAINT = OPERATIONS_SETTINGS["gpu_cluster_gpu_taint"]
OPERATIONS_RENDER = (HOMELAB, json.dumps(OPERATIONS_SETTINGS, sort_keys=True))
RENDERS_USED = [OPERATIONS_RENDER]  # started with the session (conftest.py)
# bundle -> (chart dir under tests/fixtures/charts/helm, namespace)
CHARTS = {
    "velero": ("velero-12.1.0", "velero"),
    "loki": ("loki-7.3.0", "logging"),
    "log-collector": ("alloy-1.11.1", "logging"),
}


@pytest.fixture(scope="module")
def render(renders_cache):
    return renders_cache.get(*OPERATIONS_RENDER)[0] / "homelab"


@pytest.fixture(scope="module")
def charts(render):
    """{bundle: (fleet.yaml, docs, crds)} of the three bundles through their pinned charts."""
    result = {}
    for bundle, (chart_dir, namespace) in CHARTS.items():
        fleet = yaml.safe_load((render / bundle / "fleet.yaml").read_text())
        chart = yaml.safe_load((HELM_CHARTS / chart_dir / "Chart.yaml").read_text())
        assert (chart["name"], str(chart["version"])) == (fleet["helm"]["chart"], str(fleet["helm"]["version"])), (
            f"{bundle} pins {fleet['helm']['chart']} {fleet['helm']['version']}: vendor that chart")
        assert fleet["defaultNamespace"] == namespace
        docs, crds = helm_template(chart_dir, fleet["helm"]["values"], fleet["helm"]["releaseName"], namespace)
        result[bundle] = (fleet, docs, crds)
    return result


@pytest.mark.parametrize("bundle", sorted(CHARTS))
def test_chart_renders_strict_valid(charts, bundle):
    _fleet, docs, crds = charts[bundle]
    assert docs
    assert validation_problems(docs, crds, HOMELAB_K8S) == []


def kinds(docs):
    return {(doc["kind"], doc["metadata"]["name"]): doc for _path, doc in docs}


def test_velero_backs_up_every_volume_to_the_inventory_location_on_its_schedule(charts):
    fleet, docs, _crds = charts["velero"]
    objects = kinds(docs)
    location = objects[("BackupStorageLocation", "default")]["spec"]
    assert location["provider"] == "aws"
    assert location["objectStorage"] == {"bucket": "homelab", "prefix": "velero"}
    assert location["config"] == {"region": "us-east-1", "s3ForcePathStyle": "true", "s3Url": "https://minio.lan:9000"}
    schedule = objects[("Schedule", backups.SCHEDULE)]["spec"]
    assert schedule["schedule"] == "0 3 * * *"
    assert schedule["template"]["defaultVolumesToFsBackup"] is True
    assert schedule["template"]["ttl"] == "720h"
    assert schedule["template"]["includedNamespaces"] == ["*"]
    assert "kube-system" in schedule["template"]["excludedNamespaces"]
    # the server reads the key pair from the Secret the role writes, which no bundle holds
    (server,) = [doc for _path, doc in docs if doc["kind"] == "Deployment"]
    volumes = {v["name"]: v for v in server["spec"]["template"]["spec"]["volumes"]}
    assert volumes["cloud-credentials"]["secret"]["secretName"] == backups.CREDENTIALS_SECRET
    assert not [doc for _path, doc in docs if doc["kind"] == "Secret"]
    assert fleet["namespaceLabels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # the S3 plugin is copied in by the init container
    assert [c["image"] for c in server["spec"]["template"]["spec"]["initContainers"]] == [
        yaml.safe_load((REPO / "versions.yml").read_text())["velero_plugin_for_aws_image"]]


def test_no_rendered_file_holds_the_backup_key_pair(render):
    for path in render.parent.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert ACCESS_KEY not in text and SECRET_KEY not in text, path


def test_loki_keeps_logs_on_a_local_volume_where_the_cluster_keeps_state(charts):
    _fleet, docs, _crds = charts["loki"]
    (statefulset,) = [doc for _path, doc in docs if doc["kind"] == "StatefulSet"]
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == cluster_model.STATE_STORAGE_CLASS != "nfs-client"
    assert claim["spec"]["resources"]["requests"]["storage"] == "50Gi"
    assert statefulset["spec"]["template"]["spec"]["nodeSelector"] == {cluster_model.CONTROL_PLANE_LABEL: "true"}
    (config,) = [doc for _path, doc in docs if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "loki"]
    loki = yaml.safe_load(config["data"]["config.yaml"])
    assert loki["limits_config"]["retention_period"] == "336h"
    assert loki["compactor"]["retention_enabled"] is True
    assert loki["common"]["storage"]["filesystem"]
    assert not [doc for _path, doc in docs if doc["kind"] in ("Deployment", "DaemonSet")]  # no gateway, canary


def test_the_collector_pushes_every_node_s_pod_logs_to_loki(charts):
    _fleet, docs, _crds = charts["log-collector"]
    (daemonset,) = [doc for _path, doc in docs if doc["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert {"name": "varlog", "hostPath": {"path": "/var/log"}} in pod["volumes"]
    (config,) = [doc for _path, doc in docs if doc["kind"] == "ConfigMap"]
    assert f'url = "{cluster_logs.LOKI_URL}/loki/api/v1/push"' in config["data"]["config.alloy"]
    # Loki's Service answers at the URL the collector and Grafana use
    loki = kinds(charts["loki"][1])[("Service", "loki")]
    assert loki["metadata"]["namespace"] == cluster_logs.NAMESPACE
    assert cluster_logs.LOKI_PORT in [port["port"] for port in loki["spec"]["ports"]]


def test_grafana_gets_the_loki_data_source(render):
    values = yaml.safe_load((render / "monitoring" / "fleet.yaml").read_text())["helm"]["values"]
    docs, crds = helm_template("kube-prometheus-stack-88.5.3", values, "kube-prometheus-stack", "monitoring")
    sources = [doc for _path, doc in docs if doc["kind"] == "ConfigMap"
               and "datasource.yaml" in (doc.get("data") or {})]
    assert sources
    listed = [entry for doc in sources for entry in yaml.safe_load(doc["data"]["datasource.yaml"])["datasources"]]
    (loki,) = [entry for entry in listed if entry["name"] == "Loki"]
    assert (loki["type"], loki["url"], loki["uid"]) == ("loki", cluster_logs.LOKI_URL, cluster_logs.DATASOURCE_UID)
    assert validation_problems([d for d in docs if d[1]["kind"] == "ConfigMap"], crds, HOMELAB_K8S) == []


def daemon_workloads(docs, namespace):
    result = []
    for path, doc in docs:
        if doc["kind"] == "DaemonSet":
            result.append({"name": f"DaemonSet {doc['metadata']['name']} ({path})", "namespace": namespace,
                           "pod": doc["spec"]["template"]["spec"], "every_node": True})
    return result


def test_every_pod_of_the_three_charts_schedules_and_the_daemonsets_reach_every_node(charts):
    groups, hostvars = _load_homelab()
    for variables in hostvars.values():  # the render's -e reaches every host
        variables["gpu_cluster_gpu_taint"] = OPERATIONS_GPU_TAINT
    model = cluster_model.build(groups, hostvars)
    workloads = []
    for bundle, (_chart_dir, namespace) in CHARTS.items():
        docs = charts[bundle][1]
        workloads += chart_workloads(docs, namespace) + daemon_workloads(docs, namespace)
    names = [w["name"] for w in workloads]
    assert sum(w.get("every_node", False) for w in workloads) == 2, names  # node-agent, alloy
    result = scheduling.prove(workloads, model["nodes"])
    assert result["problems"] == [], "\n".join(result["problems"])
    # a node with a taint the model does not have refuses them: the tolerations come from the model
    tainted = copy.deepcopy(model["nodes"])
    tainted[0]["taints"].append({"key": "example.com/other", "value": "", "effect": "NoSchedule"})
    refused = scheduling.prove([w for w in workloads if w.get("every_node")], tainted)["problems"]
    assert len(refused) == 2 and all("example.com/other:NoSchedule not tolerated" in p for p in refused), refused


def test_the_restore_path_renders_valid_against_velero_s_crd(charts, tmp_path):
    """playbooks/backup_restore.yml with gpu_cluster_restore_render_dir: the Restore of the newest
    backup of the bundle's Schedule, valid against the chart's Restore CRD (unknown fields refused)."""
    out = tmp_path / "restore"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_FORCE_COLOR="0")
    settings = dict(OPERATIONS_SETTINGS, gpu_cluster_restore_render_dir=str(out), gpu_cluster_restore_name="restore-test",
                    gpu_cluster_restore_namespaces=["jupyterhub"])
    done = subprocess.run(["ansible-playbook", str(REPO / "playbooks" / "backup_restore.yml"), "-i", str(HOMELAB),
                           "-e", json.dumps(settings)], cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    restore = yaml.safe_load((out / "restore-test.yaml").read_text())
    _fleet, docs, crds = charts["velero"]
    schemas = crd_schemas(crds)
    assert validate_custom(restore, schemas[("velero.io/v1", "Restore")]) == []
    assert restore["spec"]["scheduleName"] in [doc["metadata"]["name"] for _path, doc in docs if doc["kind"] == "Schedule"]
    assert restore["spec"]["includedNamespaces"] == ["jupyterhub"]
    assert restore["spec"]["existingResourcePolicy"] == "none"
    # the strict validation refuses a field Velero does not know
    wrong = dict(restore, spec=dict(restore["spec"], restorePV=True))
    assert validate_custom(wrong, schemas[("velero.io/v1", "Restore")])
