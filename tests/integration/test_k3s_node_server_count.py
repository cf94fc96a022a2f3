"""k3s_node's own preflight (roles/k3s_node/tasks/preflight.yml) for real on localhost, with
inventories of 1 to 5 servers: an odd count passes, an even one fails saying what to change
(issue 19). The inventory-level check (preflight playbook) is tested elsewhere; this one proves
the role refuses an even etcd quorum when it is run on its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")

PLAYBOOK = """
- hosts: srv1
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: preflight.yml
"""
EVEN_MESSAGE = "Put an odd number of hosts in k3s_servers (1 or 3 or 5) for an etcd quorum."


def run_preflight(tmp_path, servers, agents=1):
    lines = ["[k3s_servers]"]
    lines += [f"srv{i} ansible_connection=local gpu_cluster_node_name=srv{i}" for i in range(1, servers + 1)]
    lines += ["[k3s_agents]"]
    lines += [f"wk{i} ansible_connection=local gpu_cluster_node_name=wk{i}" for i in range(1, agents + 1)]
    lines += ["[k3s_cluster:children]", "k3s_servers", "k3s_agents"]
    (tmp_path / "hosts.ini").write_text("\n".join(lines) + "\n")
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    extra = {"ansible_python_interpreter": sys.executable, "k3s_node_role": "server",
             "k3s_node_flannel_iface": "lo"}
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"), "-e", json.dumps(extra)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("servers", [1, 3, 5])
def test_odd_server_counts_pass(tmp_path, servers):
    rc, output = run_preflight(tmp_path, servers)
    assert rc == 0, output
    assert EVEN_MESSAGE not in output


@pytest.mark.parametrize("servers", [2, 4])
def test_even_server_counts_fail_saying_what_to_change(tmp_path, servers):
    rc, output = run_preflight(tmp_path, servers)
    assert rc != 0, output
    assert EVEN_MESSAGE in " ".join(output.split()), output
