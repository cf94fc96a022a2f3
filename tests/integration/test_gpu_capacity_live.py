"""Live tier: gpu_capacity lists a real cluster's nodes itself (page by page).

Runs when GPU_CLUSTER_KUBECONFIG (or KUBECONFIG) is set, and is skipped with the reason only when
neither is. Once set, a missing file or an API that does not answer fails the tier with the reason
(issue 19: a broken live run is never reported as skipped). Read-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kubernetes
import pytest

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("GPU_CLUSTER_KUBECONFIG") or os.environ.get("KUBECONFIG", "")

pytestmark = pytest.mark.skipif(
    not KUBECONFIG, reason="live tier: set GPU_CLUSTER_KUBECONFIG (or KUBECONFIG) to a cluster's kubeconfig")


def live_node_names(kubeconfig):
    """Node names as the kubernetes client lists them; fails the test, with why, when the
    configured cluster cannot be listed."""
    if not Path(kubeconfig).is_file():
        pytest.fail(f"live tier: kubeconfig {kubeconfig} does not exist (unset GPU_CLUSTER_KUBECONFIG/KUBECONFIG "
                    "to skip the tier)")
    try:
        api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        items = kubernetes.client.CoreV1Api(api).list_node(_request_timeout=10).items
    except Exception as exc:  # any failure to reach the configured API fails the tier, with why
        pytest.fail(f"live tier: no Kubernetes API answers through {kubeconfig}: {exc}")
    return [node.metadata.name for node in items]


def test_gpu_capacity_lists_every_node(tmp_path):
    nodes = live_node_names(KUBECONFIG)
    result_path = tmp_path / "result.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(f"""
- hosts: localhost
  gather_facts: false
  tasks:
    - cps.gpu_cluster.gpu_capacity:
        kubeconfig: {json.dumps(KUBECONFIG)}
      register: capacity
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{{{ capacity | to_json }}}}"
        dest: {json.dumps(str(result_path))}
        mode: "0600"
""")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false")
    proc = subprocess.run(["ansible-playbook", str(playbook), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert sorted(n["name"] for n in result["nodes"]) == sorted(nodes)
    assert result["changed"] is False
    for node in result["nodes"]:
        assert isinstance(node["ready"], bool) and isinstance(node["schedulable"], bool)
    # a failure is only ever a list of shortfall sentences
    assert result.get("failed", False) == bool(result["shortfalls"])
