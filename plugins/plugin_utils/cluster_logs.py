# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Log aggregation (docs/gpu-pools.md, Logs): Loki in single-binary mode keeping its chunks and index
on a local volume (never NFS: its TSDB index and compactor need working file locks, like
Prometheus'), Grafana Alloy as the collector on every node, and Grafana's Loki data source.

Retention is Loki's compactor deleting what is older than ``gpu_cluster_logs_retention``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, k3s_hardening
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import GO_DURATION_MAX_HOURS, VOLUME_SIZE as SIZE_RE

NAMESPACE = "logging"
LOKI = "loki"
COLLECTOR = "log-collector"
LOKI_PORT = 3100
LOKI_URL = "http://loki.%s.svc.cluster.local:%d" % (NAMESPACE, LOKI_PORT)
DATASOURCE_UID = "loki"
DEFAULTS = {"enabled": False, "retention": "14d", "storage_size": "50Gi"}
# Loki's compactor deletes whole index periods (24h): a retention of whole days, at least one.
RETENTION_RE = re.compile(r"([1-9][0-9]*)(d|w|h)")
# The schema every chunk is written with: TSDB index, v13, from before the first install.
SCHEMA = {"from": "2024-04-01", "store": "tsdb", "object_store": "filesystem", "schema": "v13",
          "index": {"prefix": "index_", "period": "24h"}}


def retention_hours(value):
    """Hours of a retention like ``14d``, ``2w`` or ``336h`` (None when it is not one)."""
    match = RETENTION_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    return int(match.group(1)) * {"h": 1, "d": 24, "w": 168}[match.group(2)]


# The inventory's log settings: variable -> key of :func:`settings`.
VARIABLES = {"gpu_cluster_logs_enabled": "enabled", "gpu_cluster_logs_retention": "retention",
             "gpu_cluster_logs_storage_size": "storage_size"}


def inventory_values(inventory, hostvars=None):
    """The log settings an inventory sets, with ``monitoring``: whether the monitoring stack is on
    (``gpu_cluster_monitoring_enabled``, by default whether there are GPU workers), the input of
    :func:`problems`, :func:`settings` and :func:`components`. ``inventory``: a cluster_model.Inventory (or
    Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    found = inv.values((*VARIABLES, "gpu_cluster_monitoring_enabled"))
    values = dict((VARIABLES[name], value) for name, value in found.items() if name in VARIABLES)
    monitoring = found.get("gpu_cluster_monitoring_enabled")
    if monitoring is None:
        monitoring = bool(inv.hosts(cluster_model.GPU_WORKERS))
    values["monitoring"] = monitoring is True or str(monitoring).lower() in ("true", "yes", "on", "1")
    return values


def problems(values=None):
    """Every problem of the log settings, one message each. ``values``: the inventory's
    ``gpu_cluster_logs_*`` without the prefix, plus ``monitoring`` (whether the stack whose Grafana
    shows the logs is on) and ``storage_class`` (gpu_cluster_state_storage_class)."""
    values = dict(values or {})
    found = []
    enabled = values.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        found.append("gpu_cluster_logs_enabled is %r; use true or false (a YAML boolean)" % (enabled,))
    retention = values.get("retention")
    if retention is not None:
        hours = retention_hours(retention)
        if hours is None or hours % 24:
            found.append("gpu_cluster_logs_retention is %r; use whole days, like 14d, 2w or 336h (Loki's compactor "
                         "deletes logs by the day)" % (retention,))
        elif hours > GO_DURATION_MAX_HOURS:
            # rendered as retention_period: "<hours>h", which Loki parses into an int64 of nanoseconds
            found.append("gpu_cluster_logs_retention is %r, longer than Loki's durations hold (at most %dh, about 292 "
                         "years); use a shorter one, like 14d" % (retention, GO_DURATION_MAX_HOURS))
    size = values.get("storage_size")
    if size is not None and not (isinstance(size, str) and SIZE_RE.fullmatch(size)):
        found.append("gpu_cluster_logs_storage_size is %r; use a whole number of Gi or Ti, like 50Gi" % (size,))
    if enabled is True and values.get("monitoring") is False:
        found.append("gpu_cluster_logs_enabled is true while the monitoring stack is off (gpu_cluster_monitoring_enabled): "
                     "the logs are read in its Grafana; switch monitoring on, or logs off")
    return found


def settings(values=None):
    values = dict(values or {})
    result = dict(DEFAULTS)
    result.update(dict((k, v) for k, v in values.items() if v is not None and k in DEFAULTS))
    return result


def loki_values(chosen, *, storage_class=cluster_model.STATE_STORAGE_CLASS, infra=False):
    """Values of the loki chart: one single-binary replica, filesystem storage on a local volume
    where the cluster keeps state (infra nodes, else servers), retention by the compactor; no
    gateway, caches, canary or test pods (one replica needs none)."""
    hours = retention_hours(chosen["retention"])
    placement = cluster_model.state_placement(infra)
    single = {
        "replicas": 1,
        "persistence": {"enabled": True, "storageClass": storage_class, "size": str(chosen["storage_size"])},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
    }
    single.update(placement)
    return {
        "deploymentMode": "SingleBinary",
        "loki": {
            "auth_enabled": False,
            "commonConfig": {"replication_factor": 1},
            "storage": {"type": "filesystem"},
            "schemaConfig": {"configs": [dict(SCHEMA)]},
            "limits_config": {"retention_period": "%dh" % hours},
            "compactor": {"retention_enabled": True, "delete_request_store": "filesystem"},
        },
        "singleBinary": single,
        "read": {"replicas": 0},
        "write": {"replicas": 0},
        "backend": {"replicas": 0},
        "gateway": {"enabled": False},
        "chunksCache": {"enabled": False},
        "resultsCache": {"enabled": False},
        "lokiCanary": {"enabled": False},
        "test": {"enabled": False},
    }


def alloy_config(loki_url=LOKI_URL):
    """Alloy's configuration: the pods of this node, their log files under /var/log/pods, CRI lines
    parsed, labelled namespace/pod/container/node, pushed to Loki."""
    return "\n".join([
        'discovery.kubernetes "pods" {',
        '  role = "pod"',
        '  selectors {',
        '    role  = "pod"',
        '    field = "spec.nodeName=" + sys.env("HOSTNAME")',
        '  }',
        '}',
        '',
        'discovery.relabel "pods" {',
        '  targets = discovery.kubernetes.pods.targets',
        '  rule {',
        '    source_labels = ["__meta_kubernetes_namespace"]',
        '    target_label  = "namespace"',
        '  }',
        '  rule {',
        '    source_labels = ["__meta_kubernetes_pod_name"]',
        '    target_label  = "pod"',
        '  }',
        '  rule {',
        '    source_labels = ["__meta_kubernetes_pod_container_name"]',
        '    target_label  = "container"',
        '  }',
        '  rule {',
        '    source_labels = ["__meta_kubernetes_pod_node_name"]',
        '    target_label  = "node"',
        '  }',
        '  rule {',
        '    source_labels = ["__meta_kubernetes_pod_uid", "__meta_kubernetes_pod_container_name"]',
        '    separator     = "/"',
        '    target_label  = "__path__"',
        '    replacement   = "/var/log/pods/*$1/*.log"',
        '  }',
        '}',
        '',
        'local.file_match "pods" {',
        '  path_targets = discovery.relabel.pods.output',
        '}',
        '',
        'loki.source.file "pods" {',
        '  targets    = local.file_match.pods.targets',
        '  forward_to = [loki.process.pods.receiver]',
        '}',
        '',
        'loki.process "pods" {',
        '  stage.cri {}',
        '  forward_to = [loki.write.default.receiver]',
        '}',
        '',
        'loki.write "default" {',
        '  endpoint {',
        '    url = "%s/loki/api/v1/push"' % loki_url,
        '  }',
        '}',
        '',
    ])


def alloy_values(nodes):
    """Values of the alloy chart: a DaemonSet on every node (tolerating every taint the model's
    nodes carry), reading /var/log/pods, with :func:`alloy_config`."""
    return {
        "alloy": {
            "configMap": {"create": True, "content": alloy_config()},
            "mounts": {"varlog": True},
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        },
        "controller": {"type": "daemonset", "tolerations": cluster_model.node_tolerations(nodes)},
        "crds": {"create": False},
    }


def datasource():
    """Grafana's Loki data source (kube-prometheus-stack's ``grafana.additionalDataSources``)."""
    return {"name": "Loki", "type": "loki", "uid": DATASOURCE_UID, "url": LOKI_URL, "access": "proxy",
            "isDefault": False, "jsonData": {"maxLines": 1000}}


def components(values, model, *, loki_chart_version, alloy_chart_version,
               chart_repo="https://grafana.github.io/helm-charts", storage_class=cluster_model.STATE_STORAGE_CLASS,
               infra=None):
    """The ``loki`` and ``log-collector`` components when logs are on, else ``[]``.
    ValueError naming every problem."""
    feature = cluster_model.switched_on(values, model, problems, settings, infra)
    if feature is None:
        return []
    chosen, nodes, infra = feature
    # the collector reads the nodes' /var/log through a hostPath: only the privileged level allows it
    privileged = k3s_hardening.pod_security_labels("privileged")
    loki = {"name": LOKI, "namespace": NAMESPACE, "namespace_labels": privileged,
            "fleet_labels": {"gpu-cluster.cps/bundle": LOKI},
            "chart": {"repo": chart_repo, "name": "loki", "version": str(loki_chart_version), "release": LOKI,
                      "values": loki_values(chosen, storage_class=storage_class, infra=infra)}}
    collector = {"name": COLLECTOR, "namespace": NAMESPACE, "namespace_labels": privileged,
                 "fleet_labels": {"gpu-cluster.cps/bundle": COLLECTOR},
                 "chart": {"repo": chart_repo, "name": "alloy", "version": str(alloy_chart_version), "release": COLLECTOR,
                           "values": alloy_values(nodes)}}
    return [loki, collector]


def collector_pod(values):
    """The collector's pod as the proof sees it (tolerations, requests), from the chart values."""
    return {"tolerations": list((values.get("controller") or {}).get("tolerations") or []),
            "containers": [{"name": "alloy", "resources": dict((values.get("alloy") or {}).get("resources") or {})}]}
