#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_capacity
short_description: Prove that Kubernetes nodes offer the GPUs they should
version_added: 0.1.0
description:
  - Reports, per node, readiness, schedulability, taints, the capacity and allocatable of each GPU
    resource and the GPU Feature Discovery labels; the cluster totals; and one sentence per unmet
    expectation. Fails with every shortfall in C(msg) when there is any.
  - Evaluates the C(nodes) given, or lists the nodes itself through the Kubernetes API, page by page.
  - Read-only (C(changed) is always false); supports check mode.
options:
  nodes:
    description:
      - Node objects as M(kubernetes.core.k8s_info) returns them in C(resources).
      - When omitted, the module lists the nodes through the Kubernetes API with the connection options
        below (the Python C(kubernetes) library is then required).
    type: list
    elements: dict
  label_selector:
    description:
      - Only nodes matching this label selector, for example C(gpu=true). Applied when listing, and to
        C(nodes) given as equality selectors (C(k=v), C(k!=v), C(k)) joined by commas.
    type: str
  resources:
    description:
      - Resource names to account for. By default every C(nvidia.com/gpu), C(nvidia.com/gpu.shared) and
        C(nvidia.com/mig-*) resource found on any node.
    type: list
    elements: str
  expected:
    description:
      - What the cluster must offer at least. Keys are resource names mapped to the total allocatable
        over counted nodes, and/or C(per_node) mapping a node name to a mapping of resource to count.
    type: dict
    default: {}
  require_ready:
    description:
      - Count a node only when it is Ready and schedulable (not cordoned); a node named in
        C(expected.per_node) that is NotReady or cordoned is a shortfall.
      - When false, cordoned nodes count and per-node expectations ignore readiness; totals still count
        Ready nodes only.
    type: bool
    default: true
  wait:
    description:
      - List again every C(wait_sleep) seconds until there is no shortfall or C(wait_timeout) passes
        (the GPU Operator takes minutes to advertise GPUs). Only when the module lists the nodes itself.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for the expectations to be met.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between listings while waiting.
    type: int
    default: 10
extends_documentation_fragment:
  - cps.gpu_cluster.kubernetes
  - cps.gpu_cluster.attributes.read_only
requirements:
  - kubernetes (Python library), only when C(nodes) is omitted
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
notes:
  - Quantities follow Kubernetes' resource.Quantity grammar (C(2), C(1k), C(1Ki), C(1e3), C(2000m), C(2E),
    C(.5)). GPU resources count whole devices, so a quantity whose value is fractional (C(500m), C(0.5)) or
    negative is malformed, in a Node and in C(expected).
  - Malformed quantities (for example C(nvidia.com/gpu=two)) are reported as shortfalls naming the node,
    never as a traceback.
  - A malformed Node object (not a mapping; C(metadata), C(labels), C(status), C(capacity) or C(allocatable)
    not a mapping; C(conditions) or C(taints) not a list of mappings) fails the module naming the node and
    the field.
  - A node labelled C(gpu=true) or C(nvidia.com/gpu.present=true) that advertises no GPU resource is a
    shortfall.
  - Cost is linear in the number of nodes; 5,000 nodes evaluate in well under a second (docs/verify.md).
attributes:
  platform:
    support: full
    platforms: posix
    description: Runs wherever the Python C(kubernetes) library reaches the API server (usually the control node), or on any host when O(nodes) is given.
"""

EXAMPLES = r"""
- name: Every GPU worker offers its two GPUs (wait for the GPU Operator)
  cps.gpu_cluster.gpu_capacity:
    kubeconfig: ~/.kube/homelab.yaml
    expected:
      nvidia.com/gpu: 8
      per_node:
        wk-gpu1: {nvidia.com/gpu: 2}
        wk-gpu2: {nvidia.com/gpu: 2}
    wait: true
    wait_timeout: 900

- name: Evaluate nodes read elsewhere
  kubernetes.core.k8s_info:
    kind: Node
  register: __nodes

- name: Count the MIG slices
  cps.gpu_cluster.gpu_capacity:
    nodes: "{{ __nodes['resources'] }}"
    resources: [nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb]
"""

RETURN = r"""
nodes:
  description: One entry per node, in listing order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    ready:
      description: Whether the Ready condition is True.
      type: bool
    schedulable:
      description: False when the node is cordoned (C(spec.unschedulable)).
      type: bool
    taints:
      description: The node's taints (key, value, effect).
      type: list
      elements: dict
    capacity:
      description: Capacity of each GPU resource accounted for.
      type: dict
    allocatable:
      description: Allocatable of each GPU resource accounted for.
      type: dict
    labels:
      description: GPU Feature Discovery labels present (C(nvidia.com/gpu.product), C(nvidia.com/gpu.count),
        C(nvidia.com/gpu.memory), C(nvidia.com/gpu.replicas), C(nvidia.com/mig.strategy)).
      type: dict
    gpu_node_labels:
      description: Which GPU-node labels (C(gpu), C(nvidia.com/gpu.present)) are set to true.
      type: list
      elements: str
    errors:
      description: Malformed quantities found on this node.
      type: list
      elements: str
  sample:
    - name: wk-gpu1
      ready: true
      schedulable: true
      taints: []
      capacity: {nvidia.com/gpu: 2}
      allocatable: {nvidia.com/gpu: 2}
      labels: {nvidia.com/gpu.product: NVIDIA-A100-80GB-PCIe, nvidia.com/gpu.count: "2"}
      gpu_node_labels: [gpu]
      errors: []
totals:
  description: Resource to allocatable, summed over Ready nodes (and schedulable ones when C(require_ready)).
  returned: always
  type: dict
  sample: {nvidia.com/gpu: 8}
attempts:
  description: How many times the nodes were listed (more than 1 only with C(wait)).
  returned: always
  type: int
  sample: 1
shortfalls:
  description: One sentence per unmet expectation or malformed quantity, naming the node and the numbers.
  returned: always
  type: list
  elements: str
  sample: ["node wk-gpu2 has 1 allocatable nvidia.com/gpu, expected 2"]
"""

import json
import time
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_capacity import (
    MalformedNodeError,
    evaluate,
    list_all,
    matches_selector,
    validate_expected,
)
from ansible_collections.cps.gpu_cluster.plugins.module_utils.k8s_connection import api_client, argument_spec

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None


def _api(params):
    return k8s_client.CoreV1Api(api_client(params, k8s_client, k8s_config))


def _lister(api, label_selector):
    def list_page(limit, token):
        kwargs = {"limit": limit, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        if label_selector:
            kwargs["label_selector"] = label_selector
        body = json.loads(api.list_node(**kwargs).data)
        return body.get("items") or [], (body.get("metadata") or {}).get("continue")
    return list_page


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            nodes=dict(type="list", elements="dict"),
            label_selector=dict(type="str"),
            resources=dict(type="list", elements="str"),
            expected=dict(type="dict", default={}),
            require_ready=dict(type="bool", default=True),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=600),
            wait_sleep=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = validate_expected(params["expected"])
    if problems:
        module.fail_json(msg="Invalid option expected: " + "; ".join(problems))

    if params["nodes"] is not None:
        def read_nodes():
            return [node for node in params["nodes"] if matches_selector(node, params["label_selector"])]
    else:
        if not HAS_KUBERNETES:
            module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
        try:
            api = _api(params)
        except Exception as exc:  # kubeconfig errors come as several exception types
            module.fail_json(msg="Could not configure the Kubernetes client: %s" % exc)
        list_page = _lister(api, params["label_selector"])

        def read_nodes():
            try:
                return list_all(list_page)
            except Exception as exc:  # ApiException, urllib3 errors: report, never a traceback
                module.fail_json(msg="Could not list nodes from the Kubernetes API: %s" % exc)

    deadline = time.monotonic() + params["wait_timeout"]
    attempts = 0
    while True:
        attempts += 1
        try:
            result = evaluate(read_nodes(), params["resources"], params["expected"], params["require_ready"])
        except MalformedNodeError as exc:
            module.fail_json(msg="Malformed Node object, cannot read its GPU capacity: %s" % exc, attempts=attempts)
        if (not result["shortfalls"] or not params["wait"] or params["nodes"] is not None
                or time.monotonic() + params["wait_sleep"] > deadline):
            break
        time.sleep(params["wait_sleep"])

    if result["shortfalls"]:
        module.fail_json(
            msg="GPU capacity falls short: " + "; ".join(result["shortfalls"]),
            changed=False, attempts=attempts, **result)
    module.exit_json(changed=False, attempts=attempts, **result)


if __name__ == "__main__":
    main()
