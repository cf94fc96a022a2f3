# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vLLM endpoint check the vllm_endpoint_check module runs: the requests that prove a model
answers, how each answer is judged, and the request made from inside a model's pod."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import time

PORT = 8000
API_KEY_ENV = "VLLM_API_KEY"


def endpoint_checks(spec):
    """The requests that prove a model answers: GET /v1/models, then one chat or embeddings call."""
    checks = [{"check": "models", "method": "GET", "path": "/v1/models", "body": None}]
    if spec["task"] == "embed":
        checks.append({"check": "embeddings", "method": "POST", "path": "/v1/embeddings",
                       "body": {"model": spec["model"], "input": "cps.gpu_cluster verify"}})
    else:
        checks.append({"check": "chat", "method": "POST", "path": "/v1/chat/completions",
                       "body": {"model": spec["model"], "max_tokens": 16, "temperature": 0,
                                "messages": [{"role": "user", "content": "Reply with one word: ready"}]}})
    return checks


def _parse(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _judge_models(spec, body):
    ids = [m.get("id") for m in body.get("data") or [] if isinstance(m, dict)]
    if spec["model"] in ids:
        return True, "lists %s" % spec["model"]
    return False, "lists %s, not %s" % (", ".join(map(str, ids)) or "no model", spec["model"])


def _judge_embeddings(_spec, body):
    data = body.get("data") or []
    vector = data[0].get("embedding") if data and isinstance(data[0], dict) else None
    if isinstance(vector, list) and vector and all(isinstance(x, (int, float)) for x in vector):
        return True, "a %d-dimensional embedding" % len(vector)
    return False, "no embedding in the answer"


def _judge_chat(_spec, body):
    choices = body.get("choices") or []
    tokens = (body.get("usage") or {}).get("completion_tokens") or 0
    if choices and isinstance(choices[0], dict) and tokens > 0:
        message = choices[0].get("message") or {}
        # reasoning models (Kimi K2.5) may spend a short answer on reasoning_content
        said = message.get("content") or message.get("reasoning_content") or message.get("reasoning") or ""
        return True, "%d token(s): %s" % (tokens, " ".join(str(said).split())[:60])
    return False, "no completion in the answer"


JUDGES = {"models": _judge_models, "embeddings": _judge_embeddings, "chat": _judge_chat}


def judge(check, spec, status, text):
    """(passed, detail) for one endpoint response (HTTP status and body text)."""
    if status != 200:
        excerpt = (text or "").strip().replace("\n", " ")[:200]
        return False, "HTTP %s from %s%s" % (status, check["path"], (": " + excerpt) if excerpt else "")
    body = _parse(text)
    if not isinstance(body, dict):
        return False, "%s did not answer JSON" % check["path"]
    return JUDGES[check["check"]](spec, body)


def verify_rows(spec, results):
    """Report rows in the verify report's one shape (check, target, status, detail) from
    ``[{check, status, text, seconds}]``, timed; the check is ``llm <name> <method> <path>``."""
    rows = []
    by_check = {r["check"]: r for r in results}
    for check in endpoint_checks(spec):
        part = "llm %s %s %s" % (spec["name"], check["method"], check["path"])
        result = by_check.get(check["check"])
        if result is None:
            rows.append({"check": part, "target": "", "status": "FAIL", "detail": "not run: an earlier request failed"})
            continue
        if result.get("error"):
            rows.append({"check": part, "target": "", "status": "FAIL", "detail": result["error"]})
            continue
        passed, detail = judge(check, spec, result.get("status"), result.get("text"))
        rows.append({"check": part, "target": "", "status": "PASS" if passed else "FAIL",
                     "detail": "%s in %.2f s" % (detail, result.get("seconds") or 0.0)})
    return rows


# Run inside a model's own pod by verify (kubectl exec): one request to the server on localhost with
# the pod's API key (VLLM_API_KEY, from its Secret), so the key never leaves the pod and no
# NetworkPolicy has to let verify in. argv: method, path, JSON body ('' for none). Prints the HTTP
# status on the first line, then the answer.
IN_POD_REQUEST = """\
import os, sys, urllib.error, urllib.request
method, path, body = sys.argv[1], sys.argv[2], sys.argv[3]
headers = {"Content-Type": "application/json", "Accept": "application/json"}
if os.environ.get("%(env)s"):
    headers["Authorization"] = "Bearer " + os.environ["%(env)s"]
request = urllib.request.Request("http://127.0.0.1:%(port)d" + path, data=body.encode() if body else None,
                                 headers=headers, method=method)
try:
    with urllib.request.build_opener().open(request, timeout=float(sys.argv[4])) as answer:
        status, text = answer.status, answer.read()
except urllib.error.HTTPError as error:
    status, text = error.code, error.read()
sys.stdout.write("%%d\\n%%s" %% (status, text.decode("utf-8", "replace")))
""" % {"env": API_KEY_ENV, "port": PORT}


def in_pod_command(method, path, body, timeout):
    """The exec command that makes one request from inside a model's pod (:data:`IN_POD_REQUEST`)."""
    return ["python3", "-c", IN_POD_REQUEST, method, path, "" if body is None else json.dumps(body), str(timeout)]


def parse_in_pod_answer(output):
    """(status, text) from :data:`IN_POD_REQUEST`'s output; status 0 when it printed no status (the
    exec failed; the text says how)."""
    first, _sep, rest = (output or "").partition("\n")
    if first.strip().isdigit():
        return int(first.strip()), rest
    return 0, (output or "").strip() or "no answer from inside the pod"


def run_checks(request, spec, wait_timeout=0, *, sleep=10, clock=None, pause=None):
    """Run :func:`endpoint_checks` through ``request(method, path, body) -> (status, text)``.

    GET /v1/models is retried until it answers 200 or ``wait_timeout`` seconds pass (a model
    may still be loading); the second request runs only when the first passed. Returns
    ``[{check, status, text, seconds}]`` (or ``error`` for a request that raised).
    """
    clock = clock or time.monotonic
    pause = pause or time.sleep
    checks = endpoint_checks(spec)
    results = []
    deadline = clock() + max(0, wait_timeout)
    while True:
        result = _timed(request, checks[0], clock)
        if result.get("status") == 200 or clock() >= deadline:
            break
        pause(sleep)
    results.append(result)
    if result.get("status") == 200 and judge(checks[0], spec, 200, result.get("text"))[0]:
        results.append(_timed(request, checks[1], clock))
    return results


def _timed(request, check, clock):
    start = clock()
    try:
        status, text = request(check["method"], check["path"], check["body"])
    except Exception as exc:  # pylint: disable=broad-except
        return {"check": check["check"], "error": "%s %s failed: %s" % (check["method"], check["path"], exc),
                "seconds": clock() - start}
    return {"check": check["check"], "status": status, "text": text, "seconds": clock() - start}
