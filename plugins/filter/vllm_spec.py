# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for LLM inference with vLLM (thin wrappers over module_utils.vllm)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: vllm_spec
author: cps.gpu_cluster contributors
version_added: 0.1.0
short_description: Derive the full vLLM serving spec from a four-field model entry
description:
  - Takes one entry of C(gpu_cluster_llm_models) (C(name), C(model), C(gpu), optional C(ingress_host),
    C(namespace), C(pool), C(task), C(hf_token_secret), C(extra_args), C(image), C(cache), C(replicas))
    and returns every derived field (CPU, memory, C(/dev/shm) size, C(tensor_parallel_size),
    C(gpu_memory_utilization), C(dtype), environment, arguments, probes, scheduling); see C(docs/llm.md).
  - Fails with every problem of the entry named when it is not usable.
  - The same plugin file provides C(vllm_components) (one component per model for
    M(cps.gpu_cluster.component_delivery)), C(vllm_problems) (the problems of a list of entries),
    C(vllm_endpoint_checks) and C(vllm_verify_rows) (the verify phase).
options:
  _input:
    description: One entry of C(gpu_cluster_llm_models).
    type: dict
    required: true
  pools:
    description: The inventory's C(gpu_cluster_gpu_pools), for entries that name a C(pool).
    type: list
    elements: dict
  engine:
    description: C(deployment) (our Deployment) or C(operator) (a C(VLLMRuntime)).
    type: str
    default: deployment
  ingress_class:
    description: The ingress class of the Ingress.
    type: str
    default: traefik
  namespace:
    description: The namespace of entries that name none.
    type: str
    default: llm
"""

EXAMPLES = r"""
- name: Show what a model entry becomes
  ansible.builtin.debug:
    msg: "{{ {'name': 'qwen', 'model': 'Qwen/Qwen2.5-1.5B-Instruct', 'gpu': 1} | cps.gpu_cluster.vllm_spec }}"
"""

RETURN = r"""
_value:
  description: The derived spec (keys documented in C(docs/llm.md)).
  type: dict
"""

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.module_utils import vllm


def vllm_problems(models, pools=None):
    """Every problem of a list of model entries (no inventory fit check; see llm_problems)."""
    if models is None:
        return []
    if not isinstance(models, list):
        return ["gpu_cluster_llm_models must be a list of models, got %s" % type(models).__name__]
    problems = []
    for entry in models:
        problems.extend(vllm.validate_model(entry, pools))
    return problems


class FilterModule(object):
    """cps.gpu_cluster vLLM filters."""

    def filters(self):
        return {
            "vllm_spec": _wrap(vllm.vllm_spec, "vllm_spec"),
            "vllm_components": _wrap(vllm.vllm_components, "vllm_components"),
            "vllm_problems": _wrap(vllm_problems, "vllm_problems"),
            "vllm_endpoint_checks": _wrap(vllm.endpoint_checks, "vllm_endpoint_checks"),
            "vllm_verify_rows": _wrap(vllm.verify_rows, "vllm_verify_rows"),
        }
