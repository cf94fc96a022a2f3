"""Backups beyond etcd (issue 30, item 6): Velero's settings, values, credentials Secret and Restore
(plugin_utils/backups.py), the preflight refusals, and the proof's node agent on every node. The
chart's own rendering of these values is in tests/render/test_render_operations.py."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups as b
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, cluster_workloads, inventory_checks, scheduling
from test_inventory_checks import homelab

MINIO = {"endpoint": "minio.lan:9000", "bucket": "homelab", "access_key": "AK", "secret_key": "SK"}
ON = {"enabled": True, "s3": MINIO}
IMAGE = "docker.io/velero/velero-plugin-for-aws:v1.14.0"


def model_of(groups, hostvars):
    return cluster_model.build(groups, hostvars)


def component(values, model=None):
    return b.components(values, model or {"nodes": []}, plugin_image=IMAGE, chart_version="12.1.0")


def test_off_by_default_renders_nothing():
    assert component({}) == []
    assert component({"enabled": False, "s3": MINIO}) == []
    assert b.problems({}) == []


@pytest.mark.parametrize(("values", "words"), [
    ({"enabled": "yes"}, "gpu_cluster_backup_enabled is 'yes'; use true or false"),
    ({"enabled": True}, "there is no S3 location: set gpu_cluster_backup_s3"),
    ({"enabled": True, "s3": {"bucket": "homelab"}}, "gpu_cluster_backup_s3: endpoint is not set"),
    ({"enabled": True, "s3": {"endpoint": "https://minio.lan", "bucket": "homelab"}},
     "gpu_cluster_backup_s3.endpoint is 'https://minio.lan'; use host[:port] without a scheme"),
    ({"enabled": True, "s3": {"endpoint": "minio.lan", "bucket": "Home_Lab"}}, "gpu_cluster_backup_s3.bucket is 'Home_Lab'"),
    ({"enabled": True, "s3": {"endpoint": "minio.lan", "bucket": "homelab", "access_key": "AK"}},
     "gpu_cluster_backup_s3: set access_key and secret_key together"),
    ({"enabled": True, "s3": {"endpoint": "minio.lan", "bucket": "homelab", "color": "red"}}, "gpu_cluster_backup_s3"),
    (dict(ON, schedule="daily"), "gpu_cluster_backup_schedule is 'daily'; use a five-field cron expression"),
    (dict(ON, schedule="0 25 * * *"), "gpu_cluster_backup_schedule is '0 25 * * *'"),
    (dict(ON, schedule="*/0 * * * *"), "gpu_cluster_backup_schedule is '*/0 * * * *'"),
    (dict(ON, schedule="0 3 * * * *"), "five-field"),
    (dict(ON, ttl="30d"), "gpu_cluster_backup_ttl is '30d'; use a positive duration in hours"),
    (dict(ON, ttl="0h"), "gpu_cluster_backup_ttl is '0h'"),
    # Go's time.ParseDuration ("invalid duration" past an int64 of nanoseconds: 2562047h47m16.854775807s)
    (dict(ON, ttl="2562048h"), "gpu_cluster_backup_ttl is '2562048h', longer than a Go duration holds"),
    (dict(ON, ttl="2562047h48m"), "gpu_cluster_backup_ttl is '2562047h48m', longer than a Go duration holds"),
    (dict(ON, ttl=720), "gpu_cluster_backup_ttl is 720"),
    (dict(ON, namespaces="jupyterhub"), "gpu_cluster_backup_namespaces is 'jupyterhub'; use ['*']"),
    (dict(ON, namespaces=["Jupyter"]), "gpu_cluster_backup_namespaces is ['Jupyter']"),
    (dict(ON, namespaces=["jupyterhub", "kube-system"]), "names kube-system, which are never backed up"),
    ({"enabled": True, "s3": {"endpoint": "m:9000", "bucket": "bkt", "folder": "snap/velero"},
      "etcd_s3": {"endpoint": "m:9000", "bucket": "bkt", "folder": "snap"}},
     "gpu_cluster_backup_s3.folder 'snap/velero' shares the etcd snapshots' folder 'snap' in bucket bkt"),
    ({"enabled": True, "etcd_s3": {"endpoint": "m:9000", "bucket": "bkt", "folder": "velero"}},
     "shares the etcd snapshots' folder 'velero'"),
])
def test_bad_settings_are_refused_with_what_to_write(values, words):
    found = b.problems(values)
    assert any(words in message for message in found), found
    assert not any("SK" in message.split() for message in found)
    with pytest.raises(ValueError, match="gpu_cluster_backup"):
        component(values)


# What Velero's schedule controller accepts: robfig/cron v3.0.1's ParseStandard (spec.go bounds and names,
# parser.go getRange, parseIntOrName, parseDescriptor). Each expected value is that parser's answer.
@pytest.mark.parametrize("schedule", [
    "0 3 * * *", "*/15 * * * *", "0 1-5/2 * * 1,3,5", "30 2 1 * 0", "@daily", "@every 6h",
    "0 3 * * mon-fri", "0 3 * * MON,wed", "0 3 1 jan-jun *", "0 3 ? * *", "5/10 * * * *", "0 3 * * +1",
    "  0 3 * * *  ",  # strings.Fields
])
def test_accepted_schedules(schedule):
    assert b.cron_problem(schedule) == ""


@pytest.mark.parametrize(("schedule", "why"), [
    ("0 0 * * 7", "day of week: 7 ends above 6"),  # dow bounds{0, 6}: Sunday is 0 only (issue 43)
    ("0 0 * * 1-7", "day of week: 1-7 ends above 6"),
    ("0 0 * * monday", "day of week: monday is not a number or a name"),  # three-letter names only
    ("60 * * * *", "minute: 60 ends above 59"),
    ("0 0 0 * *", "day of month: 0 begins below 1"),
    ("0 0 * 13 *", "month: 13 ends above 12"),
    ("0 5-2 * * *", "hour: 5-2 begins beyond its end"),
    ("*/0 * * * *", "minute: the step of */0 should be a positive number"),
    ("1-2-3 * * * *", "minute: too many hyphens in 1-2-3"),
    ("*/2/3 * * * *", "minute: too many slashes in */2/3"),
    ("\u0661 * * * *", "minute: \u0661 is not a number"),  # strconv.Atoi reads ASCII digits only
    ("1,,2 * * * *", "minute:  is not a number"),
    ("0 3 * *", "it has 4 field(s), not 5"),
    ("0 0 3 * * *", "it has 6 field(s), not 5"),  # seconds are not in the standard parser
    ("@fortnightly", "@fortnightly is not a descriptor robfig/cron knows"),
    (" @daily", "it has 1 field(s), not 5"),  # a descriptor only at the very start
    ("@every 1d", "@every 1d is not a descriptor robfig/cron knows"),  # time.ParseDuration has no days
])
def test_refused_schedules_say_what_robfig_cron_refuses(schedule, why):
    message = b.cron_problem(schedule)
    assert message.startswith(f"gpu_cluster_backup_schedule is {schedule!r}; use a five-field cron expression"), message
    assert f"(robfig/cron, Velero's parser, says: {why}" in message, message
    assert "0-6 or sun-sat" in message


def test_the_location_falls_back_to_the_etcd_snapshots_one_under_a_prefix_of_its_own():
    etcd = {"endpoint": "minio.lan:9000", "bucket": "homelab", "folder": "etcd", "access_key": "AK", "secret_key": "SK",
            "insecure": True}
    chosen = b.settings({"enabled": True, "etcd_s3": etcd})
    assert chosen["s3"] == dict(etcd, folder="velero")
    assert b.problems({"enabled": True, "etcd_s3": etcd}) == []
    values = component({"enabled": True, "etcd_s3": etcd})[0]["chart"]["values"]
    (location,) = values["configuration"]["backupStorageLocation"]
    assert (location["bucket"], location["prefix"]) == ("homelab", "velero")
    assert location["config"]["s3Url"] == "http://minio.lan:9000"  # insecure: plain http
    # the etcd snapshots at the bucket's root do not clash with Velero's prefix
    assert b.problems({"enabled": True, "etcd_s3": dict(etcd, folder="")}) == []
    # a location of its own wins, its folder defaulting to velero
    own = b.settings({"enabled": True, "s3": {"endpoint": "s3.lan", "bucket": "other"}, "etcd_s3": etcd})["s3"]
    assert own == {"endpoint": "s3.lan", "bucket": "other", "folder": "velero"}


def test_values_back_up_every_volume_on_the_schedule_and_never_carry_the_key_pair():
    groups, hostvars = homelab()
    values = component(dict(ON, schedule="15 2 * * *", ttl="168h", namespaces=["jupyterhub", "llm"]),
                       model_of(groups, hostvars))[0]["chart"]["values"]
    assert values["deployNodeAgent"] is True and values["snapshotsEnabled"] is False
    assert values["configuration"]["defaultVolumesToFsBackup"] is True
    template = values["schedules"][b.SCHEDULE_KEY]["template"]
    assert values["schedules"][b.SCHEDULE_KEY]["schedule"] == "15 2 * * *"
    assert template["includedNamespaces"] == ["jupyterhub", "llm"] and template["ttl"] == "168h"
    assert template["defaultVolumesToFsBackup"] is True
    assert values["credentials"] == {"useSecret": True, "existingSecret": b.CREDENTIALS_SECRET}
    assert "AK" not in repr(values) and "SK" not in repr(values)
    assert values["initContainers"][0]["image"] == IMAGE
    # without a key pair (an IAM role, a keyless MinIO gateway) no Secret is named
    keyless = component({"enabled": True, "s3": {"endpoint": "minio.lan:9000", "bucket": "homelab"}})[0]["chart"]["values"]
    assert keyless["credentials"] == {"useSecret": False}


def test_the_node_agent_tolerates_every_taint_of_the_model_and_the_server_goes_to_infra_nodes():
    groups, hostvars = homelab()
    for host in groups["gpu_workers"][:1]:
        hostvars[host]["gpu_cluster_node_taints"] = ["dedicated=ml:NoExecute"]
    model = model_of(groups, hostvars)
    values = component(ON, model)[0]["chart"]["values"]
    tolerations = values["nodeAgent"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"} in tolerations
    assert "nodeSelector" not in values  # no infra nodes: the server goes wherever it fits
    infra = component(ON, model_of(groups, hostvars) | {"nodes": [dict(model["nodes"][0], groups=["infra_nodes"])]})
    assert infra[0]["chart"]["values"]["nodeSelector"] == {cluster_model.INFRA_LABEL: "true"}


def test_credentials_secret_is_an_aws_shared_credentials_file():
    secret = b.credentials_secret(MINIO)
    assert secret["metadata"] == {"name": "velero-s3-credentials", "namespace": "velero",
                                  "labels": {"app.kubernetes.io/part-of": "gpu-cluster"}}
    assert secret["stringData"]["cloud"] == "[default]\naws_access_key_id=AK\naws_secret_access_key=SK\n"
    with pytest.raises(ValueError, match="no access_key and secret_key"):
        b.credentials_secret({"endpoint": "minio.lan", "bucket": "homelab"})


def test_restore_of_the_newest_scheduled_backup_or_a_named_one():
    newest = b.restore("restore-1")
    assert newest["spec"] == {"includedNamespaces": ["*"], "excludedNamespaces": list(b.EXCLUDED_NAMESPACES),
                              "restorePVs": True, "existingResourcePolicy": "none", "scheduleName": "velero-daily"}
    named = b.restore("restore-2", backup="velero-daily-20261126030012", namespaces=["jupyterhub"])
    assert named["spec"]["backupName"] == "velero-daily-20261126030012" and "scheduleName" not in named["spec"]
    assert named["spec"]["includedNamespaces"] == ["jupyterhub"]
    for kwargs, words in (({"backup": "Bad Name"}, "gpu_cluster_restore_backup is 'Bad Name'"),
                          ({"namespaces": ["kube-system"]}, "gpu_cluster_restore_namespaces names kube-system"),
                          ({"namespaces": "jupyterhub"}, "gpu_cluster_restore_namespaces is 'jupyterhub'")):
        with pytest.raises(ValueError, match=words):
            b.restore("restore-3", **kwargs)
    with pytest.raises(ValueError, match="DNS label"):
        b.restore("Restore_1")


def test_preflight_reads_the_inventory_settings_and_the_servers_etcd_location():
    groups, hostvars = homelab()
    hostvars["cp1"]["gpu_cluster_backup_enabled"] = True
    assert any("no S3 location" in p for p in inventory_checks.operations_problems(groups, hostvars))
    for host in groups["k3s_servers"]:
        hostvars[host]["k3s_node_etcd_s3"] = {"endpoint": "minio.lan:9000", "bucket": "homelab", "folder": "etcd"}
    assert inventory_checks.operations_problems(groups, hostvars) == []
    assert b.inventory_values(groups, hostvars)["etcd_s3"]["folder"] == "etcd"


def test_the_proof_places_the_server_and_a_node_agent_on_every_node():
    groups, hostvars = homelab()
    for host in groups["all"]:
        hostvars[host].update(gpu_cluster_backup_enabled=True, gpu_cluster_backup_s3=dict(MINIO))
    model = model_of(groups, hostvars)
    found = cluster_workloads.operations_workloads(model, cluster_workloads.operations_values(groups, hostvars))
    assert [(w["name"], w.get("every_node", False)) for w in found] == [("Velero server", False), ("Velero node agent", True)]
    assert cluster_workloads.proof(groups, hostvars)["problems"] == []
    # a node too small for the agent's request refuses it, and the proof names it
    small = copy.deepcopy(model)
    small["nodes"][0]["allocatable"]["memory"] = 64 * 1024 * 1024
    problems = scheduling.prove(found, small["nodes"])["problems"]
    assert len(problems) == 1 and "Velero node agent" in problems[0] and small["nodes"][0]["name"] in problems[0], problems


# Issue 42: the documented order lost the volume data silently. Velero leaves existing objects alone and
# restores file-system volume data only into the pods it creates (Velero docs: restore-reference,
# file-system-backup); the objects below are shaped as Velero's CRDs (tests/fixtures/charts/velero-12.1.0).
def _pvc(namespace, name):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": namespace, "name": name}}


def _pvr(namespace, pod, volume, phase, *, done=None, message=None):
    status = {"phase": phase}
    if done is not None:
        status["progress"] = {"bytesDone": done, "totalBytes": done}
    if message:
        status["message"] = message
    return {"apiVersion": "velero.io/v1", "kind": "PodVolumeRestore",
            "metadata": {"namespace": "velero", "name": f"{pod}-{volume}", "labels": {"velero.io/restore-name": "r1"}},
            "spec": {"pod": {"kind": "Pod", "namespace": namespace, "name": pod}, "volume": volume,
                     "uploaderType": "kopia", "backupStorageLocation": "default"},
            "status": status}


def _pvb(phase="Completed"):
    return {"apiVersion": "velero.io/v1", "kind": "PodVolumeBackup", "status": {"phase": phase}}


def test_a_restore_into_namespaces_whose_claims_exist_is_refused():
    restore = b.restore("r1", namespaces=["jupyterhub"])
    pvcs = [_pvc("jupyterhub", "claim-alice"), _pvc("llm", "model-cache"), _pvc("kube-system", "x")]
    problem = b.restore_existing_problem(pvcs, restore)
    assert "jupyterhub/claim-alice" in problem and "llm/" not in problem and "Nothing was restored" in problem
    assert "gpu_cluster_restore_existing_pvcs=true" in problem
    assert b.restore_existing_problem(pvcs, restore, allow_existing=True) == ""
    assert b.restore_existing_problem([_pvc("llm", "model-cache")], restore) == ""
    every = b.restore("r2")  # every namespace backed up: system namespaces never count
    assert "llm/model-cache" in b.restore_existing_problem(pvcs, every)
    assert "kube-system" not in b.restore_existing_problem(pvcs, every)


def test_the_report_names_each_volume_and_fails_a_restore_that_brought_no_data_back():
    done = b.restore_report({"phase": "Completed", "warnings": 2},
                            [_pvr("jupyterhub", "jupyter-alice", "home", "Completed", done=1024)], [_pvb()])
    assert done["problem"] == ""
    assert done["lines"] == ["jupyterhub/jupyter-alice volume home: Completed (1024 bytes)",
                             "1 of 1 backed-up volume(s) restored; 2 warning(s), 0 error(s)"]
    none = b.restore_report({"phase": "Completed"}, [], [_pvb(), _pvb()])
    assert "holds the data of 2 volume(s) but none was restored" in none["problem"]
    failed = b.restore_report({"phase": "Completed", "errors": 1},
                              [_pvr("llm", "m-0", "cache", "Failed", message="repository not found")], [_pvb()])
    assert "llm/m-0 volume cache Failed: repository not found" in failed["problem"] and "1 error(s)" in failed["problem"]
    assert b.restore_report({"phase": "Completed"}, [], [])["problem"] == ""  # nothing was backed up
