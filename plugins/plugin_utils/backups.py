# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backups beyond etcd (docs/disaster-recovery.md): Velero with file-system backup of every
PersistentVolume to an S3-compatible location, a schedule, and the Restore that brings them back.

The S3 location has the keys of ``k3s_node_etcd_s3`` (endpoint, bucket, folder, region, access_key,
secret_key, skip_ssl_verify, insecure) and is, unless the inventory names another, the one the etcd
snapshots use, under its own prefix (Velero wants a prefix of its own: it refuses a location whose
top level holds other files). The credentials never enter a chart value or a Fleet bundle: the role
writes them to the Secret :data:`CREDENTIALS_SECRET` through the API, and the chart names it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, k3s_hardening, k3s_parity
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import DNS_LABEL, GO_DURATION, GO_DURATION_MAX_HOURS, go_duration_seconds

COMPONENT = "velero"
NAMESPACE = "velero"
LOCATION = "default"
# The chart names its Schedule objects <release>-<key>: key "daily" of release "velero" is velero-daily.
SCHEDULE_KEY = "daily"
SCHEDULE = "velero-%s" % SCHEDULE_KEY
CREDENTIALS_SECRET = "velero-s3-credentials"
CREDENTIALS_KEY = "cloud"
DEFAULT_PREFIX = "velero"
DEFAULTS = {"enabled": False, "schedule": "0 3 * * *", "ttl": "720h", "namespaces": ["*"]}
# Never backed up nor restored: Kubernetes' own namespaces (k3s rebuilds them) and Velero's.
EXCLUDED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", NAMESPACE)
# The Velero plugin that speaks S3 (velero-plugin-for-aws), copied into the server at start.
PLUGIN_NAME = "velero-plugin-for-aws"

# Velero's schedule: what robfig/cron v3's standard parser accepts (cron.ParseStandard, which Velero's
# schedule controller calls): five fields or a descriptor. Bounds and names from robfig/cron v3.0.1 spec.go
# (day of week 0-6, sun-sat; months jan-dec; names in any case); each comma-separated item as parser.go
# getRange reads it: `*` or `?`, a number or name, `a-b`, then an optional `/step` ("N/step" is N to the
# maximum); refused: a number out of bounds, a range whose beginning is beyond its end, a step of 0, more
# than one hyphen or slash, a number strconv.Atoi refuses (ASCII digits only) or a negative one.
CRON_FIELDS = (("minute", 0, 59, None), ("hour", 0, 23, None), ("day of month", 1, 31, None),
               ("month", 1, 12, dict((n, i + 1) for i, n in enumerate(
                   ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")))),
               ("day of week", 0, 6, dict((n, i) for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat")))))
# parser.go parseDescriptor: exactly these, or "@every <Go duration>"
CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
GO_INT = re.compile(r"[+-]?[0-9]+\Z")  # strconv.Atoi: an optional sign, then ASCII digits
# metav1.Duration as Go's time.ParseDuration reads it; Velero's ttl (hours at most, no days).


def _cron_number(text, names):
    """parser.go parseIntOrName: a name of the field (any case), else strconv.Atoi; None when refused."""
    if names and text.lower() in names:
        return names[text.lower()]
    if not GO_INT.match(text) or int(text) < 0:
        return None
    return int(text)


def _cron_bounds(expr, low, high, names):
    """(start, end, step, why) of one item as getRange reads it, before the bounds are checked."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    start, end, step, why = low, high, 1, ""
    if low_and_high[0] not in ("*", "?"):
        numbers = [_cron_number(part, names) for part in low_and_high]
        if len(low_and_high) > 2:
            why = "too many hyphens in %s" % expr
        elif None in numbers:
            why = "%s is not a number%s" % (expr, " or a name" if names else "")
        else:
            start, end = numbers[0], numbers[-1]
    if not why and len(range_and_step) > 2:
        why = "too many slashes in %s" % expr
    elif not why and len(range_and_step) == 2:
        step = _cron_number(range_and_step[1], None)
        if step is None:
            why = "the step of %s is not a number" % expr
        elif len(low_and_high) == 1:
            end = high  # "N/step" means "N-max/step"
    return start, end, step, why


def _cron_item_problem(expr, low, high, names):
    """'' when robfig/cron's getRange accepts ``expr`` for a field of these bounds, else why not."""
    start, end, step, why = _cron_bounds(expr, low, high, names)
    checks = ((why, why), (step == 0, "the step of %s should be a positive number" % expr),
              (start < low, "%s begins below %d" % (expr, low)), (end > high, "%s ends above %d" % (expr, high)),
              (start > end, "%s begins beyond its end" % expr))
    return next((message for failed, message in checks if failed), "")


def _descriptor_problem(value):
    """parser.go parseDescriptor: '' for a descriptor it knows, else why not."""
    if value in CRON_DESCRIPTORS or (value.startswith("@every ") and GO_DURATION.fullmatch(value[len("@every "):])):
        return ""
    return "%s is not a descriptor robfig/cron knows" % value


def cron_schedule_problem(value):
    """'' when robfig/cron's ParseStandard (Velero's schedule) accepts ``value``, else why not."""
    if not isinstance(value, str) or not value:
        return "it is not a cron expression"
    if value.startswith("@"):
        return _descriptor_problem(value)
    fields = value.split()
    if len(fields) != 5:
        return "it has %d field(s), not 5" % len(fields)
    for text, (what, low, high, names) in zip(fields, CRON_FIELDS):
        for item in text.split(","):
            why = _cron_item_problem(item, low, high, names)
            if why:
                named = ", or %s-%s" % (min(names, key=names.get), max(names, key=names.get)) if names else ""
                return "%s: %s (%d-%d%s)" % (what, why, low, high, named)
    return ""


def cron_problem(value, name="gpu_cluster_backup_schedule"):
    """'' when ``value`` is a schedule Velero accepts, else what to write."""
    why = cron_schedule_problem(value)
    if not why:
        return ""
    return ("%s is %r; use a five-field cron expression as Velero reads it (minute hour day-of-month month "
            "day-of-week, day of week 0-6 or sun-sat, like '0 3 * * *' for 03:00 every day or '0 3 * * mon-fri') "
            "or @daily (robfig/cron, Velero's parser, says: %s)" % (name, value, why))


def ttl_problem(value, name="gpu_cluster_backup_ttl"):
    """'' when ``value`` is a positive Go duration (Velero's ``ttl``: 720h), else what to write."""
    if isinstance(value, str) and GO_DURATION.fullmatch(value) and any(c in "123456789" for c in value):
        if go_duration_seconds(value) > (2 ** 63 - 1) / 10 ** 9:
            return ("%s is %r, longer than a Go duration holds (Velero's ttl is one: at most %dh, about 292 years); "
                    "use a shorter one, like 720h for 30 days" % (name, value, GO_DURATION_MAX_HOURS))
        return ""
    return "%s is %r; use a positive duration in hours, minutes or seconds (like 720h for 30 days)" % (name, value)


def namespaces_problem(value, name="gpu_cluster_backup_namespaces"):
    """'' when ``value`` is ``['*']`` or a list of namespace names Velero may back up."""
    if value == ["*"]:
        return ""
    if isinstance(value, list) and value and all(isinstance(n, str) and DNS_LABEL.fullmatch(n) for n in value):
        excluded = sorted(set(value) & set(EXCLUDED_NAMESPACES))
        if excluded:
            return ("%s names %s, which are never backed up (k3s rebuilds them; Velero's own namespace "
                    "holds no data of yours); leave them out" % (name, ", ".join(excluded)))
        return ""
    return "%s is %r; use ['*'] for every namespace or a list of namespace names (like [jupyterhub, llm])" % (name, value)


def _folder(location):
    return str(location.get("folder") or "").strip("/")


def settings(values=None):
    """The backup settings with their defaults: ``{enabled, s3, etcd_s3, schedule, ttl, namespaces}``.

    ``values``: the inventory's ``gpu_cluster_backup_*`` without the prefix, plus ``etcd_s3`` (the
    servers' ``k3s_node_etcd_s3``). ``s3`` falls back to the etcd location; its folder (Velero's
    prefix) to :data:`DEFAULT_PREFIX`."""
    values = dict(values or {})
    result = dict(DEFAULTS)
    result.update(dict((k, v) for k, v in values.items() if v is not None and k in DEFAULTS))
    etcd = values.get("etcd_s3")
    result["etcd_s3"] = dict(etcd) if isinstance(etcd, dict) else {}
    s3 = values.get("s3")
    if isinstance(s3, dict) and s3:
        location = dict(s3)
    elif result["etcd_s3"]:
        location = dict(result["etcd_s3"], folder=DEFAULT_PREFIX)  # the snapshots' location, a prefix of its own
    else:
        location = {}
    if location and not _folder(location):
        location["folder"] = DEFAULT_PREFIX
    result["s3"] = location
    return result


# The inventory's backup settings: variable -> key of :func:`settings`.
VARIABLES = {"gpu_cluster_backup_enabled": "enabled", "gpu_cluster_backup_s3": "s3",
             "gpu_cluster_backup_schedule": "schedule", "gpu_cluster_backup_ttl": "ttl",
             "gpu_cluster_backup_namespaces": "namespaces"}


def inventory_values(inventory, hostvars=None):
    """The backup settings an inventory sets (cluster-wide), with ``etcd_s3`` the first server's
    ``k3s_node_etcd_s3``: the input of :func:`problems`, :func:`settings` and :func:`components`.
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    found = inv.values(tuple(VARIABLES))
    values = dict((VARIABLES[name], value) for name, value in found.items())
    servers = [host for host in inv.hosts(cluster_model.SERVERS) if isinstance(host, str)]
    first = inv.vars(servers[0]) if servers else None
    if first:
        values["etcd_s3"] = first.get("k3s_node_etcd_s3")
    return values


def problems(values=None):
    """Every problem of the backup settings, one message each (credentials never shown)."""
    values = dict(values or {})
    found = []
    enabled = values.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        found.append("gpu_cluster_backup_enabled is %r; use true or false (a YAML boolean)" % (enabled,))
    for key, check in (("schedule", cron_problem), ("ttl", ttl_problem), ("namespaces", namespaces_problem)):
        if values.get(key) is not None and check(values[key]):
            found.append(check(values[key]))
    if values.get("s3") not in (None, {}):
        found.extend(message.replace("k3s_node_etcd_s3", "gpu_cluster_backup_s3")
                     for message in k3s_parity.etcd_s3_problems(values["s3"]))
    if enabled is not True or found:
        return found
    chosen = settings(values)
    location = chosen["s3"]
    if not location:
        return ["gpu_cluster_backup_enabled is true but there is no S3 location: set gpu_cluster_backup_s3 "
                "({endpoint, bucket, folder, region, access_key, secret_key}), or k3s_node_etcd_s3 on the servers, "
                "whose location the backups then share under the prefix %s" % DEFAULT_PREFIX]
    if not location.get("endpoint"):
        found.append("gpu_cluster_backup_s3: endpoint is not set; name the S3-compatible server (like minio.lan:9000)")
    etcd = chosen["etcd_s3"]
    if etcd and etcd.get("bucket") == location.get("bucket") and etcd.get("endpoint") == location.get("endpoint"):
        mine, theirs = _folder(location), _folder(etcd)
        if mine == theirs or mine.startswith(theirs + "/") or theirs.startswith(mine + "/"):
            found.append("gpu_cluster_backup_s3.folder %r shares the etcd snapshots' folder %r in bucket %s; Velero "
                         "needs a prefix of its own (it refuses a location holding other files): use another folder, "
                         "like %s" % (mine, theirs, location.get("bucket"), DEFAULT_PREFIX))
    return found


def location_config(location):
    """The BackupStorageLocation ``config`` of velero-plugin-for-aws for an S3-compatible server."""
    scheme = "http" if location.get("insecure") else "https"
    config = {"region": str(location.get("region") or "us-east-1"), "s3ForcePathStyle": "true",
              "s3Url": "%s://%s" % (scheme, location["endpoint"])}
    if location.get("skip_ssl_verify"):
        config["insecureSkipTLSVerify"] = "true"
    return config


def has_credentials(location):
    return bool(location.get("access_key") and location.get("secret_key"))


def credentials_secret(location, namespace=NAMESPACE):
    """The Secret holding the location's key pair as velero-plugin-for-aws reads it (an AWS
    shared-credentials file). Applied through the API with no_log; never rendered into a bundle."""
    if not has_credentials(location or {}):
        raise ValueError("gpu_cluster_backup_s3 has no access_key and secret_key to write")
    text = "[default]\naws_access_key_id=%s\naws_secret_access_key=%s\n" % (location["access_key"], location["secret_key"])
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": CREDENTIALS_SECRET, "namespace": namespace,
                         "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}},
            "stringData": {CREDENTIALS_KEY: text}}


def _placement(infra):
    if not infra:
        return {}
    return {"nodeSelector": {cluster_model.INFRA_LABEL: "true"}, "tolerations": [dict(cluster_model.INFRA_TOLERATION)]}


def backup_template(chosen):
    """The Backup spec every scheduled backup gets: the namespaces, every pod volume by file-system
    backup (kopia), kept ``ttl``."""
    template = {"includedNamespaces": list(chosen["namespaces"]), "excludedNamespaces": list(EXCLUDED_NAMESPACES),
                "defaultVolumesToFsBackup": True, "storageLocation": LOCATION, "ttl": str(chosen["ttl"]),
                "snapshotVolumes": False}
    return template


def velero_values(chosen, nodes, *, plugin_image, infra=False, namespace=NAMESPACE):
    """Values of the velero chart: the S3 location, file-system backup through the node agent on
    every node, no volume snapshots, the schedule, the credentials Secret by name."""
    location = chosen["s3"]
    values = {
        "initContainers": [{
            "name": PLUGIN_NAME, "image": str(plugin_image), "imagePullPolicy": "IfNotPresent",
            "volumeMounts": [{"mountPath": "/target", "name": "plugins"}],
        }],
        "configuration": {
            "backupStorageLocation": [{
                "name": LOCATION, "provider": "aws", "bucket": str(location["bucket"]),
                "prefix": _folder(location), "default": True, "config": location_config(location),
            }],
            "volumeSnapshotLocation": [],
            "defaultVolumesToFsBackup": True,
            "uploaderType": "kopia",
        },
        "credentials": {"useSecret": has_credentials(location)},
        "snapshotsEnabled": False,
        "deployNodeAgent": True,
        "nodeAgent": {
            # the pods' volumes are under the kubelet's root (k3s keeps the kubelet default)
            "podVolumePath": "/var/lib/kubelet/pods",
            "tolerations": cluster_model.node_tolerations(nodes),
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
        },
        "schedules": {SCHEDULE_KEY: {
            "disabled": False, "schedule": str(chosen["schedule"]), "useOwnerReferencesInBackup": False,
            "template": backup_template(chosen),
        }},
    }
    if has_credentials(location):
        values["credentials"]["existingSecret"] = CREDENTIALS_SECRET
    values.update(_placement(infra))
    return values


def components(values, model, *, plugin_image, chart_version, chart_repo="https://vmware-tanzu.github.io/helm-charts",
               infra=None):
    """The ``velero`` component (chart and namespace) when backups are on, else ``[]``.
    ``values``: as :func:`settings`; ``model``: the cluster model (its nodes' taints).
    ValueError naming every problem."""
    feature = cluster_model.switched_on(values, model, problems, settings, infra)
    if feature is None:
        return []
    chosen, nodes, infra = feature
    return [{
        "name": COMPONENT, "namespace": NAMESPACE,
        # the node agent reads every pod's volumes through a hostPath: only the privileged level allows it
        "namespace_labels": k3s_hardening.pod_security_labels("privileged"),
        "fleet_labels": {"gpu-cluster.cps/bundle": COMPONENT},
        "chart": {"repo": chart_repo, "name": "velero", "version": str(chart_version), "release": "velero",
                  "values": velero_values(chosen, nodes, plugin_image=plugin_image, infra=infra)},
    }]


def restore(name, *, backup=None, schedule=SCHEDULE, namespaces=None, namespace=NAMESPACE):
    """The Restore of a backup (``backup``: its name) or of the newest backup of ``schedule``:
    the namespaces (default every one backed up), their PersistentVolumes and the pod volumes'
    data; what already exists is left alone (``existingResourcePolicy: none``)."""
    if not (isinstance(name, str) and DNS_LABEL.fullmatch(name)):
        raise ValueError("the restore name %r must be a DNS label" % (name,))
    for label, value in (("backup", backup), ("schedule", schedule)):
        if value is not None and not (isinstance(value, str) and re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", value)):
            raise ValueError("gpu_cluster_restore_%s is %r; name a Velero %s (see velero backup get)" % (label, value, label))
    chosen = namespaces if namespaces not in (None, []) else ["*"]
    problem = namespaces_problem(chosen, "gpu_cluster_restore_namespaces")
    if problem:
        raise ValueError(problem)
    spec = {"includedNamespaces": list(chosen), "excludedNamespaces": list(EXCLUDED_NAMESPACES),
            "restorePVs": True, "existingResourcePolicy": "none"}
    if backup:
        spec["backupName"] = backup
    else:
        spec["scheduleName"] = schedule
    return {"apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}},
            "spec": spec}


def _restored_namespace(namespace, included):
    return namespace not in EXCLUDED_NAMESPACES and ("*" in included or namespace in included)


def restore_existing_problem(pvcs, restore_object, allow_existing=False):
    """'' when the Restore may run, else why not: Velero skips every object that exists
    (existingResourcePolicy none) and restores file-system volume data only into the pods it creates
    itself (Velero docs: restore-reference, "Restore order"; file-system-backup, "To restore"), so a
    PersistentVolumeClaim that already exists in a restored namespace gets none of its backed-up data
    back, silently. ``pvcs``: the cluster's PersistentVolumeClaims (k8s_info resources)."""
    if allow_existing:
        return ""
    included = list((restore_object.get("spec") or {}).get("includedNamespaces") or ["*"])
    found = sorted("%s/%s" % ((c.get("metadata") or {}).get("namespace", ""), (c.get("metadata") or {}).get("name", ""))
                   for c in pvcs or [] if _restored_namespace((c.get("metadata") or {}).get("namespace", ""), included))
    if not found:
        return ""
    return ("the restored namespaces already hold PersistentVolumeClaims (%s): Velero leaves existing objects alone "
            "and restores volume data only into pods it creates, so their backed-up data would not come back. Restore "
            "before the apps phase recreates them (docs/disaster-recovery.md: site.yml --skip-tags apps,verify, then "
            "this playbook, then site.yml), or delete those namespaces first; set "
            "gpu_cluster_restore_existing_pvcs=true to restore beside them anyway. Nothing was restored."
            % ", ".join(found))


def restore_report(restore_status, pod_volume_restores, pod_volume_backups):
    """What a finished Restore brought back, per volume, and whether it failed.

    ``restore_status``: the Restore's status; ``pod_volume_restores``: its PodVolumeRestores (label
    velero.io/restore-name); ``pod_volume_backups``: the backup's PodVolumeBackups (label
    velero.io/backup-name). Returns {problem, lines}: a volume not Completed, errors, or no volume data
    restored while the backup holds some is a problem (phases: Velero's PodVolumeRestore CRD)."""
    status = restore_status or {}
    lines, failed = [], []

    def where(item):
        spec = item.get("spec") or {}
        pod = spec.get("pod") or {}
        return (pod.get("namespace", ""), pod.get("name", ""), spec.get("volume", ""))

    for item in sorted(pod_volume_restores or [], key=where):
        spec, state = item.get("spec") or {}, item.get("status") or {}
        pod = spec.get("pod") or {}
        phase = state.get("phase") or "New"
        done = (state.get("progress") or {}).get("bytesDone")
        where = "%s/%s volume %s" % (pod.get("namespace", "?"), pod.get("name", "?"), spec.get("volume", "?"))
        lines.append("%s: %s%s" % (where, phase, " (%s bytes)" % done if done is not None else ""))
        if phase != "Completed":
            failed.append("%s %s%s" % (where, phase, ": " + state["message"] if state.get("message") else ""))
    backed = [b for b in pod_volume_backups or [] if (b.get("status") or {}).get("phase") == "Completed"]
    restored = [r for r in pod_volume_restores or [] if (r.get("status") or {}).get("phase") == "Completed"]
    problems = []
    if failed:
        problems.append("volume data not restored: " + "; ".join(failed))
    if backed and not restored:
        problems.append("the backup holds the data of %d volume(s) but none was restored: Velero restores volume "
                        "data only into pods it creates, so the pods (or their claims) already existed; restore "
                        "before the apps phase (docs/disaster-recovery.md)" % len(backed))
    errors, warnings = int(status.get("errors") or 0), int(status.get("warnings") or 0)
    if errors:
        problems.append("%d error(s) (velero restore describe --details)" % errors)
    lines.append("%d of %d backed-up volume(s) restored; %d warning(s), %d error(s)"
                 % (len(restored), len(backed), warnings, errors))
    return {"problem": "; ".join(problems), "lines": lines}


def node_agent_pod(values):
    """The node agent's pod as the proof sees it (tolerations, requests), from the chart values."""
    agent = values.get("nodeAgent") or {}
    return {"tolerations": list(agent.get("tolerations") or []),
            "containers": [{"name": "node-agent", "resources": dict(agent.get("resources") or {})}]}
