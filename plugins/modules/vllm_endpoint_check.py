#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_endpoint_check
short_description: Prove that a vLLM model answers through its Service
version_added: 0.1.0
description:
  - A model that asks for an API key (C(spec.api_key_secret), the default) is asked from inside its own
    pod (the Kubernetes exec API runs one Python request to C(127.0.0.1:8000) with the pod's C(VLLM_API_KEY)),
    so the key never leaves the pod and the namespace's NetworkPolicy need not let the control node in.
  - A model without a key (the operator engine) is called through the Kubernetes API server's Service proxy
    (C(/api/v1/namespaces/<namespace>/services/<service>:http/proxy/...)).
  - Either way the control node needs only its kubeconfig, or O(host) and O(api_key), the same connection
    options as M(cps.gpu_cluster.gpu_capacity) takes.
  - C(GET /v1/models) must list the model (retried until C(wait_timeout) while the model loads), then one
    C(POST /v1/chat/completions), or C(POST /v1/embeddings) for embedding models, must answer; each
    request is timed.
  - Returns report rows; never fails on a failed check (the verify report judges the rows), only on
    bad options or a missing Kubernetes client.
  - Read-only (C(changed) is always false); supports check mode (it only reads).
options:
  spec:
    description: The model's spec as the C(cps.gpu_cluster.vllm_spec) filter returns it (C(name),
      C(namespace), C(model), C(task) and C(api_key_secret) are read).
    type: dict
    required: true
  wait_timeout:
    description: Seconds to keep asking C(/v1/models) while the model loads.
    type: int
    default: 600
  request_timeout:
    description: Seconds one request may take.
    type: int
    default: 120
extends_documentation_fragment:
  - cps.gpu_cluster.kubernetes
  - cps.gpu_cluster.attributes.read_only
requirements:
  - kubernetes (Python library)
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
attributes:
  platform:
    support: full
    platforms: posix
    description: Runs wherever the Python C(kubernetes) library reaches the API server (usually the control node).
"""

EXAMPLES = r"""
- name: Ask qwen for its models and one chat completion
  cps.gpu_cluster.vllm_endpoint_check:
    kubeconfig: ~/.kube/homelab.yaml
    spec: "{{ {'name': 'qwen', 'model': 'Qwen/Qwen2.5-1.5B-Instruct', 'gpu': 1} | cps.gpu_cluster.vllm_spec }}"
  register: __qwen
"""

RETURN = r"""
rows:
  description: One report row per request, in order, in the shape of every verify report row.
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: C(llm <name> <method> <path>).
      type: str
    target:
      description: Empty, the check names the model.
      type: str
    status:
      description: PASS or FAIL.
      type: str
    detail:
      description: What the answer showed, with the time it took (or why it failed).
      type: str
  sample:
    - {check: "llm qwen GET /v1/models", target: "", status: PASS, detail: "lists Qwen/Qwen2.5-1.5B-Instruct in 0.04 s"}
responses:
  description: Each request's HTTP status, seconds and the first 2000 characters of its answer (or error).
  returned: always
  type: list
  elements: dict
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.cps.gpu_cluster.plugins.module_utils.vllm_endpoint import (
    in_pod_command,
    parse_in_pod_answer,
    run_checks,
    verify_rows,
)
from ansible_collections.cps.gpu_cluster.plugins.module_utils.k8s_connection import api_client, argument_spec

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import stream as k8s_stream
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()


def _requester(api_client, spec, request_timeout):
    base = "/api/v1/namespaces/%s/services/%s:http/proxy" % (spec["namespace"], spec["name"])

    def request(method, path, body):
        try:
            response = api_client.call_api(
                base + path, method, header_params={"Content-Type": "application/json", "Accept": "application/json"},
                body=body, auth_settings=["BearerToken"], _preload_content=False,
                _return_http_data_only=True, _request_timeout=request_timeout)
        except ApiException as exc:
            return exc.status, exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else (exc.body or "")
        return response.status, response.data.decode("utf-8", "replace")
    return request


def _exec_requester(core_api, stream, spec, request_timeout):
    """Requests made from inside a running pod of the model, with its own API key."""
    selector = "app.kubernetes.io/name=%s,app.kubernetes.io/component=llm" % spec["name"]

    def request(method, path, body):
        try:
            pods = core_api.list_namespaced_pod(spec["namespace"], label_selector=selector).items
        except ApiException as exc:
            return exc.status, "listing the pods of %s: %s" % (spec["name"], exc.reason)
        running = sorted(p.metadata.name for p in pods if p.status is not None and p.status.phase == "Running")
        if not running:
            return 0, "no running pod of %s in namespace %s (%s)" % (spec["name"], spec["namespace"], selector)
        try:
            output = stream(core_api.connect_get_namespaced_pod_exec, running[0], spec["namespace"],
                            container="vllm", command=in_pod_command(method, path, body, request_timeout),
                            stderr=True, stdin=False, stdout=True, tty=False, _request_timeout=request_timeout + 10)
        except ApiException as exc:
            return exc.status, "exec in %s: %s" % (running[0], exc.reason)
        return parse_in_pod_answer(output)
    return request


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            spec=dict(type="dict", required=True),
            wait_timeout=dict(type="int", default=600),
            request_timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    spec = module.params["spec"]
    missing = [key for key in ("name", "namespace", "model", "task") if not spec.get(key)]
    if missing:
        module.fail_json(msg="spec lacks %s; pass the output of the cps.gpu_cluster.vllm_spec filter" % ", ".join(missing))
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    try:
        client = api_client(module.params, k8s_client, k8s_config)
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="Could not configure the Kubernetes client%s: %s" % (
            " from %s" % module.params["kubeconfig"] if module.params["kubeconfig"] else "", exc))
    if spec.get("api_key_secret"):
        request = _exec_requester(k8s_client.CoreV1Api(client), k8s_stream, spec, module.params["request_timeout"])
    else:
        request = _requester(client, spec, module.params["request_timeout"])
    results = run_checks(request, spec, wait_timeout=module.params["wait_timeout"])
    rows = verify_rows(spec, results)
    module.exit_json(changed=False, rows=rows, responses=[
        {"check": r["check"], "status": r.get("status"), "seconds": round(r.get("seconds") or 0, 3),
         "body": (r.get("text") or r.get("error") or "")[:2000]} for r in results])


if __name__ == "__main__":
    main()
