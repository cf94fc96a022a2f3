"""playbooks/gpu_node_maintenance.yml without a cluster (issue 30, item 8): bad input is refused
before anything is touched, naming what to use; with every other setting at its default, no
reachable API server is SKIPPED in a lab and FAILED with the reason elsewhere, and verify does not
run after a maintenance that did not. The cordon, drain and label themselves run in the live tier
(tests/integration/test_components_live.py's GPU_CLUSTER_KUBECONFIG)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_components_delivery import playbook, unreachable_kubeconfig

REPO = Path(__file__).resolve().parents[2]
MAINTENANCE = REPO / "playbooks" / "gpu_node_maintenance.yml"
HOMELAB = REPO / "inventories" / "homelab"


def run(*extra):
    return playbook(MAINTENANCE, "-i", HOMELAB, *extra)


@pytest.mark.parametrize(("args", "message"), [
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3"),
     "gpu_cluster_maintenance_action is ''; use start (take the node out) or finish"),
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", "gpu_cluster_maintenance_action=pause"),
     "gpu_cluster_maintenance_action is 'pause'; use start"),
    (("-e", "gpu_cluster_maintenance_node=cp1", "-e", "gpu_cluster_maintenance_action=start"),
     "gpu_cluster_maintenance_node is 'cp1', which is no GPU node of this inventory; name one of "
     "wk-gpu1, wk-gpu2, wk-gpu3, wk-gpu4"),
    (("-e", "gpu_cluster_maintenance_action=start"),
     "gpu_cluster_maintenance_node is '', which is no GPU node"),
    (("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", "gpu_cluster_maintenance_action=start",
      "-e", "gpu_cluster_maintenance_drain_timeout=0"),
     "gpu_cluster_maintenance_drain_timeout is '0'; use a whole number of seconds"),
])
def test_bad_input_is_refused_before_anything_is_touched(args, message):
    rc, out = run(*args)
    assert rc != 0, out
    assert message in " ".join(out.split()), out
    assert "nothing was changed" in out
    assert "Look up the kubeconfig" not in out  # refused before the cluster is asked anything


def test_skipped_in_a_lab_and_failed_elsewhere_without_a_cluster(tmp_path):
    kubeconfig = unreachable_kubeconfig(tmp_path)
    for action in ("start", "finish"):
        common = ("-e", "gpu_cluster_maintenance_node=wk-gpu3", "-e", f"gpu_cluster_maintenance_action={action}",
                  "-e", f"gpu_cluster_kubeconfig={kubeconfig}")
        rc, out = run(*common, "-e", '{"gpu_cluster_lab": true}')
        assert rc == 0, out
        assert "SKIPPED gpu node maintenance: no Kubernetes API server answers at 127.0.0.1:1" in out
        assert "ok: [wk-gpu1]" not in out, out  # verify's worker play did not run
        rc, out = run(*common)
        assert rc != 0, out
        assert "FAILED gpu node maintenance: no Kubernetes API server answers at 127.0.0.1:1" in out
