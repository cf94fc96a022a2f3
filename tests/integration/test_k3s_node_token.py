"""k3s_node's probe.yml + token.yml for real (ansible-playbook on localhost as the only server),
with the etcd directory, the server token and the collection's token file in a temp dir:
an initialised cluster keeps its token and is never given a new one (issue 19). The role's
module call must say ``initialised: true`` when a server runs a cluster: with no readable token
anywhere it then fails instead of generating a token the cluster would reject."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")

PLAYBOOK = """
- hosts: k3s_servers
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: probe.yml
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: token.yml
    - name: Show the token the play would use
      ansible.builtin.copy:
        content: "{{ __k3s_node_token }}"
        dest: "{{ token_seen }}"
        mode: "0600"
"""
# The full form k3s writes to /var/lib/rancher/k3s/server/token on a running server.
RUNNING = "K10" + "ab" * 32 + "::server:" + "c0ffee" * 6


def run_token(tmp_path, *, etcd=False, server_token=None, stored=None, k3s_token=None):
    etcd_dir = tmp_path / "server" / "db" / "etcd"
    if etcd:
        etcd_dir.mkdir(parents=True)
    server_token_file = tmp_path / "server" / "token"
    if server_token is not None:
        server_token_file.parent.mkdir(parents=True, exist_ok=True)
        server_token_file.write_text(server_token + "\n")
    token_file = tmp_path / "cluster-token"
    if stored is not None:
        token_file.write_text(stored + "\n")
        token_file.chmod(0o600)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.ini").write_text("[k3s_servers]\nlocalhost ansible_connection=local\n")
    extra = {
        "ansible_python_interpreter": sys.executable,
        "k3s_node_role": "server",
        "k3s_node_token_file": str(token_file),
        "__k3s_node_etcd_dir": str(etcd_dir),
        "__k3s_node_server_token": str(server_token_file),
        "token_seen": str(tmp_path / "token-seen"),
    }
    if k3s_token is not None:
        extra["k3s_token"] = k3s_token
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"), "-e", json.dumps(extra)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    seen = tmp_path / "token-seen"
    return proc.returncode, proc.stdout + proc.stderr, token_file, (seen.read_text() if seen.exists() else None)


def test_new_cluster_generates_a_token_once(tmp_path):
    rc, output, token_file, seen = run_token(tmp_path)
    assert rc == 0, output
    generated = token_file.read_text().strip()
    assert len(generated) == 64 and all(c in "0123456789abcdef" for c in generated)
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert seen == generated
    rc, output, token_file, seen = run_token(tmp_path)
    assert rc == 0, output
    assert token_file.read_text().strip() == generated


def test_initialised_server_keeps_the_running_token(tmp_path):
    rc, output, token_file, seen = run_token(tmp_path, etcd=True, server_token=RUNNING)
    assert rc == 0, output
    assert token_file.read_text().strip() == RUNNING
    assert seen == RUNNING


def test_initialised_server_without_a_readable_token_fails_instead_of_generating(tmp_path):
    """etcd exists (a cluster runs) but neither server/token nor the token file nor k3s_token
    holds its token: generating one would lock every joining node out. Passes only when the
    role calls k3s_token with initialised: true."""
    rc, output, token_file, seen = run_token(tmp_path, etcd=True)
    assert rc != 0, output
    assert "the cluster is already initialised but no server's token could be read" in output, output
    assert not token_file.exists() and seen is None


def test_initialised_server_refuses_a_different_k3s_token(tmp_path):
    rc, output, token_file, _seen = run_token(tmp_path, etcd=True, server_token=RUNNING,
                                              stored=RUNNING, k3s_token="another-token-0123456789")
    assert rc != 0, output
    assert "k3s_token differs from the token this cluster was initialised with" in output, output
    assert token_file.read_text().strip() == RUNNING
