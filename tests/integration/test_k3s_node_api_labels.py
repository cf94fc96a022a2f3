"""k3s_node's reconcile step (roles/k3s_node/tasks/reconcile.yml) for real, against a stand-in
Kubernetes API on localhost that serves a recorded Node object (tests/fixtures/k8s-node/, captured
from a real cluster) and applies the patches it receives as the API server does (a JSON merge patch
of metadata.labels; lists replaced). The role labels the kubelet may not set on its own Node
(node-role.kubernetes.io/infra, node-role.kubernetes.io/gpu: k3s_node_api_labels) arrive through
this API step after the node has joined, and the labels the kubelet set stay."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from test_preflight import merge_patch

REPO = Path(__file__).resolve().parents[2]
NODE = json.loads((REPO / "tests" / "fixtures" / "k8s-node" / "node__tesla-t4-x2__gpu-operator.json").read_text())
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["get", "list", "patch", "update", "watch"], "shortNames": ["no"]}]}


class StandInAPI:
    """GET/PATCH of the Node objects it holds, with the discovery documents the client reads."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.patches = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path = self.path.split("?")[0].rstrip("/")
                if path == "/version":
                    return self.reply(200, {"major": "1", "minor": "36", "gitVersion": "v1.36.4+k3s1"})
                if path == "/api":
                    return self.reply(200, {"kind": "APIVersions", "versions": ["v1"],
                                            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
                if path == "/apis":
                    return self.reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
                if path == "/api/v1":
                    return self.reply(200, RESOURCES)
                if path.startswith("/api/v1/nodes/"):
                    name = path.rsplit("/", 1)[1]
                    if name in api.nodes:
                        return self.reply(200, api.nodes[name])
                return self.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                        "code": 404, "message": f"{path} not found"})

            def do_PATCH(self):
                name = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[1]
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.patches.append({"name": name, "type": self.headers.get("Content-Type"), "body": body})
                if name not in api.nodes:
                    return self.reply(404, {"kind": "Status", "apiVersion": "v1", "code": 404, "reason": "NotFound"})
                api.nodes[name] = merge_patch(api.nodes[name], body)
                return self.reply(200, api.nodes[name])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"


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


def recorded(name):
    node = copy.deepcopy(NODE)
    node["metadata"]["name"] = name
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    node["spec"].pop("taints", None)
    return node


def run(tmp_path, api):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": api.url}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "admin"}}],
        "users": [{"name": "admin", "user": {"token": "standin-admin-token"}}]}))
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
    nodes = {name: recorded(name) for name in ("wk-gpu1", "infra1", "cp1")}
    kubelet_labels = dict(nodes["wk-gpu1"]["metadata"]["labels"])
    with StandInAPI(nodes) as api:
        rc, out = run(tmp_path, api)
    assert rc == 0, out
    gpu = nodes["wk-gpu1"]["metadata"]["labels"]
    infra = nodes["infra1"]["metadata"]["labels"]
    assert gpu["node-role.kubernetes.io/gpu"] == "true" and gpu["gpu"] == "true"
    assert infra["node-role.kubernetes.io/infra"] == "true"
    assert "node-role.kubernetes.io/gpu" not in infra and "gpu" not in infra
    # what the kubelet and the GPU operator set stays
    assert all(gpu[key] == value for key, value in kubelet_labels.items())
    # the infra node's taint went through the API as well; the server got neither labels nor taints
    assert {"key": "node-role.kubernetes.io/infra", "value": "true", "effect": "NoSchedule"} in nodes["infra1"]["spec"]["taints"]
    patched = sorted({p["name"] for p in api.patches})
    assert patched == ["infra1", "wk-gpu1"], api.patches
    assert nodes["cp1"] == recorded("cp1")
