# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of LLM serving: vllm_spec (one model's serving spec, public) and llm_setup (the steps of
role llm_serving), over the private Python of plugins/plugin_utils/vllm.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter, wrap

vllm = deferred("vllm")


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


STEPS = {
    "components": vllm.vllm_components,
    "problems": vllm_problems,
    "stale_objects": vllm.stale_objects,
}


class FilterModule(object):
    """vllm_spec, llm_setup."""

    def filters(self):
        return {
            "vllm_spec": wrap(vllm.vllm_spec, "vllm_spec"),
            "llm_setup": phase_filter("llm_setup", STEPS),
        }
