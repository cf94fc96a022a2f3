"""vllm_endpoint_check: models without a key are asked through the API server's Service proxy, keyed
ones from inside their pod (the in-pod request runs for real against a stand-in that enforces vLLM's
API-key rule); HTTP errors become (status, body) for the judge; whole checks give report rows."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import vllm_endpoint
from ansible_collections.cps.gpu_cluster.plugins.modules import vllm_endpoint_check as mod
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm
from kubernetes.client.exceptions import ApiException


class Response:
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode()


class FakeApiClient:
    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def call_api(self, path, method, **kwargs):
        self.calls.append((path, method, kwargs))
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer


SPEC = vllm.vllm_spec({"name": "embed", "model": "BAAI/bge-base-en-v1.5", "gpu": 1})
BASE = "/api/v1/namespaces/llm/services/embed:http/proxy"


def test_requests_use_the_service_proxy_and_give_rows():
    api = FakeApiClient({
        BASE + "/v1/models": Response(200, {"data": [{"id": "BAAI/bge-base-en-v1.5"}]}),
        BASE + "/v1/embeddings": Response(200, {"data": [{"embedding": [0.5, 0.25]}]}),
    })
    rows = vllm_endpoint.verify_rows(SPEC, vllm_endpoint.run_checks(mod._requester(api, SPEC, 30), SPEC))
    assert [r["status"] for r in rows] == ["PASS", "PASS"]
    assert [(c[0], c[1]) for c in api.calls] == [(BASE + "/v1/models", "GET"), (BASE + "/v1/embeddings", "POST")]
    assert api.calls[1][2]["body"] == {"model": "BAAI/bge-base-en-v1.5", "input": "cps.gpu_cluster verify"}
    assert api.calls[1][2]["_request_timeout"] == 30


def test_http_errors_reach_the_judge():
    error = ApiException(status=503, reason="Service Unavailable")
    error.body = b"no endpoints available for service"
    api = FakeApiClient({BASE + "/v1/models": error})
    rows = vllm_endpoint.verify_rows(SPEC, vllm_endpoint.run_checks(mod._requester(api, SPEC, 30), SPEC))
    assert rows[0]["status"] == "FAIL"
    assert "HTTP 503 from /v1/models: no endpoints available for service" in rows[0]["detail"]


# ---- models with an API key: asked from inside their own pod ------------------------------------
KEYED = vllm.vllm_spec({"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1})
KEY = "in-pod-key-0123456789"


class _Pod:
    def __init__(self, name, phase):
        self.metadata = type("Meta", (), {"name": name})()
        self.status = type("Status", (), {"phase": phase})()


class FakeCoreApi:
    def __init__(self, pods):
        self.pods = pods
        self.selectors = []

    def list_namespaced_pod(self, namespace, label_selector):
        self.selectors.append((namespace, label_selector))
        return type("List", (), {"items": self.pods})()

    def connect_get_namespaced_pod_exec(self, *args, **kwargs):  # called by the stream stand-in only
        raise AssertionError("the exec goes through kubernetes.stream.stream")


class VllmStandIn(http.server.BaseHTTPRequestHandler):
    """vLLM's rule (vllm/entrypoints/openai/api_server.py, AuthenticationMiddleware): with --api-key,
    every /v1 request needs ``Authorization: Bearer <key>``, else 401; /health stays open."""

    def _answer(self):
        if self.path.startswith("/v1") and self.headers.get("Authorization") != "Bearer " + KEY:
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "Unauthorized"}')
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        answer = {"data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct"}]} if self.path == "/v1/models" else {
            "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"completion_tokens": 1}, "echo": body}
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(answer).encode())

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def vllm_on_localhost(monkeypatch):
    server = http.server.HTTPServer(("127.0.0.1", 0), VllmStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


def _in_pod(port, key):
    """The stream stand-in: runs the exec command as the pod would, a real python3 whose 127.0.0.1:8000
    is the stand-in's port, with the pod's environment."""
    calls = []

    def stream(_fn, pod, namespace, **kwargs):
        calls.append((pod, namespace, kwargs))
        command = list(kwargs["command"])
        command[2] = command[2].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        env = {name: value for name, value in os.environ.items() if name != "VLLM_API_KEY"}
        if key:
            env["VLLM_API_KEY"] = key
        done = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, env=env, timeout=30,
                              check=False)
        return done.stdout + done.stderr
    return stream, calls


def test_a_keyed_model_is_asked_from_inside_its_pod_with_its_key(vllm_on_localhost):
    core = FakeCoreApi([_Pod("qwen-0", "Pending"), _Pod("qwen-1", "Running")])
    stream, calls = _in_pod(vllm_on_localhost, KEY)
    rows = vllm_endpoint.verify_rows(KEYED, vllm_endpoint.run_checks(mod._exec_requester(core, stream, KEYED, 30), KEYED))
    assert [r["status"] for r in rows] == ["PASS", "PASS"], rows
    assert core.selectors[0] == ("llm", "app.kubernetes.io/name=qwen,app.kubernetes.io/component=llm")
    assert [c[0] for c in calls] == ["qwen-1", "qwen-1"] and calls[0][2]["container"] == "vllm"
    # the key is read inside the pod: it is in no argument the control node sends
    assert not any(KEY in " ".join(c[2]["command"]) for c in calls)


def test_without_the_key_the_model_refuses(vllm_on_localhost):
    stream, _calls = _in_pod(vllm_on_localhost, "")
    core = FakeCoreApi([_Pod("qwen-1", "Running")])
    rows = vllm_endpoint.verify_rows(KEYED, vllm_endpoint.run_checks(mod._exec_requester(core, stream, KEYED, 30), KEYED))
    assert rows[0]["status"] == "FAIL" and "HTTP 401 from /v1/models" in rows[0]["detail"]


def test_no_running_pod_is_a_failed_row():
    core = FakeCoreApi([_Pod("qwen-0", "Pending")])
    rows = vllm_endpoint.verify_rows(KEYED, vllm_endpoint.run_checks(mod._exec_requester(core, None, KEYED, 30), KEYED))
    assert rows[0]["status"] == "FAIL" and "no running pod of qwen in namespace llm" in rows[0]["detail"]
