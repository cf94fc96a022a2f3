"""playbooks/management.yml through its gate: switched off (SKIPPED anywhere), no cluster in a lab
(SKIPPED with the reason), no cluster outside a lab (FAILED with the reason, nothing installed).
The install itself (helm with wait) needs a cluster: the live tier, not run here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
HOMELAB = REPO / "inventories" / "homelab"
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
           ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="default")


def management(*extra):
    # with the values of the homelab's vault (docs/getting-started.md section 4): preflight needs them
    cmd = ["ansible-playbook", str(REPO / "playbooks" / "management.yml"), "-i", str(HOMELAB),
           "-e", "@" + str(REPO / "tests" / "fixtures" / "homelab-vault.yml")]
    for item in extra:
        cmd += ["-e", item]
    result = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600, check=False)
    return result.returncode, result.stdout + result.stderr


def unreachable_kubeconfig(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        "users": [{"name": "x", "user": {"token": "t"}}]}))
    return kubeconfig


def test_switched_off_is_skipped_outside_a_lab_too(tmp_path):
    rc, out = management('{"gpu_cluster_management_enabled": false}',
                         f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path)}")
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED management:" in line]
    assert len(lines) == 1, out
    assert "gpu_cluster_management_enabled is false" in lines[0]
    assert "Install cert-manager and the cluster CA" not in out


def test_no_cluster_in_a_lab_is_skipped_with_the_reason(tmp_path):
    rc, out = management('{"gpu_cluster_lab": true}', f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path)}")
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED management:" in line]
    assert len(lines) == 1, out
    assert "no Kubernetes API server answers at 127.0.0.1:1" in lines[0]


def test_no_cluster_outside_a_lab_fails_with_the_reason(tmp_path):
    rc, out = management(f"gpu_cluster_kubeconfig={tmp_path / 'absent'}")
    assert rc != 0, out
    assert "SKIPPED management:" not in out
    assert f"FAILED management: kubeconfig {tmp_path / 'absent'} does not exist" in out
    assert "Install cert-manager and the cluster CA" not in out
