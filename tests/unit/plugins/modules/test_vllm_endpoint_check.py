"""vllm_endpoint_check: requests go through the API server's Service proxy, HTTP errors become
(status, body) for the judge, and a whole check against a fake API client gives report rows."""

from __future__ import annotations

import json

from ansible_collections.cps.gpu_cluster.plugins.module_utils import vllm
from ansible_collections.cps.gpu_cluster.plugins.modules import vllm_endpoint_check as mod
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
    rows = vllm.verify_rows(SPEC, vllm.run_checks(mod._requester(api, SPEC, 30), SPEC))
    assert [r["status"] for r in rows] == ["PASS", "PASS"]
    assert [(c[0], c[1]) for c in api.calls] == [(BASE + "/v1/models", "GET"), (BASE + "/v1/embeddings", "POST")]
    assert api.calls[1][2]["body"] == {"model": "BAAI/bge-base-en-v1.5", "input": "cps.gpu_cluster verify"}
    assert api.calls[1][2]["_request_timeout"] == 30


def test_http_errors_reach_the_judge():
    error = ApiException(status=503, reason="Service Unavailable")
    error.body = b"no endpoints available for service"
    api = FakeApiClient({BASE + "/v1/models": error})
    rows = vllm.verify_rows(SPEC, vllm.run_checks(mod._requester(api, SPEC, 30), SPEC))
    assert rows[0]["status"] == "FAIL"
    assert "HTTP 503 from /v1/models: no endpoints available for service" in rows[0]["detail"]
