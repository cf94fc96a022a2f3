"""playbooks/backup_restore.yml without a cluster (issue 30, item 6): a restore without backups in the
inventory and bad names are refused before the cluster is asked anything; with every other setting at
its default, no reachable API server is SKIPPED in a lab and FAILED with the reason elsewhere. The
Restore it writes with gpu_cluster_restore_render_dir is validated against Velero's CRD in
tests/render/test_render_operations.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from test_components_delivery import playbook, unreachable_kubeconfig

REPO = Path(__file__).resolve().parents[2]
RESTORE = REPO / "playbooks" / "backup_restore.yml"
HOMELAB = REPO / "inventories" / "homelab"
BACKUPS = {"gpu_cluster_backup_enabled": True,
           "gpu_cluster_backup_s3": {"endpoint": "minio.lan:9000", "bucket": "homelab"}}


def run(*extra):
    return playbook(RESTORE, "-i", HOMELAB, *extra)


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "gpu_cluster_backup_enabled is not true in this inventory, so there is no backup location nor schedule"),
    (dict(BACKUPS, gpu_cluster_restore_namespaces=["kube-system"]),
     "day2('backup_restore'): gpu_cluster_restore_namespaces names kube-system, which are never backed up"),
])
def test_bad_input_is_refused_before_anything_is_touched(settings, message):
    rc, out = run("-e", json.dumps(settings))
    assert rc != 0, out
    assert message in " ".join(out.split()), out
    assert "Check that the cluster answers" not in out  # refused before the cluster is asked anything


def test_skipped_in_a_lab_and_failed_elsewhere_without_a_cluster(tmp_path):
    settings = dict(BACKUPS, gpu_cluster_kubeconfig=str(unreachable_kubeconfig(tmp_path)))
    rc, out = run("-e", json.dumps(dict(settings, gpu_cluster_lab=True)))
    assert rc == 0, out
    assert "SKIPPED backup restore: no Kubernetes API server answers at 127.0.0.1:1" in out
    assert re.search(r"TASK \[Create the Restore\] \**\nskipping: \[localhost\]", out), out
    rc, out = run("-e", json.dumps(settings))
    assert rc != 0, out
    assert "FAILED backup restore: no Kubernetes API server answers at 127.0.0.1:1" in out


def test_the_default_name_is_chosen_once_for_every_task(tmp_path):
    """The name holds the time: the file written and the object inside carry the same one."""
    out = tmp_path / "restore"
    rc, log = run("-e", json.dumps(dict(BACKUPS, gpu_cluster_restore_render_dir=str(out))))
    assert rc == 0, log
    (written,) = list(out.iterdir())
    restore = yaml.safe_load(written.read_text())
    assert written.stem == restore["metadata"]["name"]
    assert re.fullmatch(r"restore-\d{8}-\d{6}", written.stem)
    assert restore["spec"]["scheduleName"] == "velero-daily"
