# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for LLM inference with vLLM (thin wrappers over module_utils.vllm)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm


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
            "vllm_stale_objects": _wrap(vllm.stale_objects, "vllm_stale_objects"),
        }
