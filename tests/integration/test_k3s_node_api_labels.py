"""k3s_node's reconcile step (roles/k3s_node/tasks/reconcile.yml) for real, against a stand-in
Kubernetes API on localhost (tests/integration/kube_standin.py) that serves a recorded Node object
(tests/fixtures/k8s-node/, captured from a real cluster) and applies the patches it receives as the API
server does (a merge patch of metadata.labels; lists replaced; other patch media types refused). The role labels the kubelet may not set on its own Node
(node-role.kubernetes.io/infra, node-role.kubernetes.io/gpu: k3s_node_api_labels) arrive through
this API step after the node has joined, and the labels the kubelet set stay."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kube_standin import KubeStandIn, recorded_node

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
INVENTORY = """
[k3s_servers]
cp1 ansible_connection=local
[gpu_workers]
wk-gpu1 ansible_connection=local
[infra_nodes]
infra1 ansible_connection=local
[k3s_agents:children]
gpu_workers
infra_nodes
[k3s_cluster:children]
k3s_servers
k3s_agents
"""

PLAY = """
- hosts: wk-gpu1:infra1:cp1
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: reconcile.yml
"""


def run(tmp_path, api):
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAY)
    extra = {"ansible_python_interpreter": sys.executable, "k3s_node_kubeconfig": str(kubeconfig)}
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", HOME=str(tmp_path))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"),
                           "-e", json.dumps(extra)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_role_labels_arrive_through_the_api_after_join(tmp_path):
    pytest.importorskip("kubernetes", reason="SKIPPED: the kubernetes client (requirements.txt) is not installed")
    nodes = {name: recorded_node(name) for name in ("wk-gpu1", "infra1", "cp1")}
    kubelet_labels = dict(nodes["wk-gpu1"]["metadata"]["labels"])
    with KubeStandIn(nodes) as api:
        rc, out = run(tmp_path, api)
    assert rc == 0, out
    gpu = api.nodes["wk-gpu1"]["metadata"]["labels"]
    infra = api.nodes["infra1"]["metadata"]["labels"]
    assert gpu["node-role.kubernetes.io/gpu"] == "true" and gpu["gpu"] == "true"
    assert infra["node-role.kubernetes.io/infra"] == "true"
    assert "node-role.kubernetes.io/gpu" not in infra and "gpu" not in infra
    # what the kubelet and the GPU operator set stays
    assert all(gpu[key] == value for key, value in kubelet_labels.items())
    # the infra node's taint went through the API as well; the server got neither labels nor taints
    assert {"key": "node-role.kubernetes.io/infra", "value": "true", "effect": "NoSchedule"} in api.nodes["infra1"]["spec"]["taints"]
    assert api.patched_nodes() == ["infra1", "wk-gpu1"], api.calls
    assert api.nodes["cp1"] == recorded_node("cp1")
