# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for JupyterHub with GPU profiles (thin wrappers over module_utils.jupyterhub)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: jupyterhub_profiles
author: cps.gpu_cluster contributors
version_added: 0.2.0
short_description: Resolve the JupyterHub profiles of an inventory against its GPU workers
description:
  - Takes C(gpu_cluster_jupyterhub_profiles) (or none, for the defaults CPU, 1, 2 and 4 GPUs) and returns
    C({profiles, refused, dropped, problems}); see C(docs/apps.md).
  - The same plugin file provides C(jupyterhub_workers) (GPU worker to GPU count from C(groups) and C(hostvars)),
    C(jupyterhub_component) (the component for M(cps.gpu_cluster.component_delivery)),
    C(jupyterhub_oauth_secret), C(jupyterhub_verify_plan), C(jupyterhub_api_command),
    C(jupyterhub_api_output), C(jupyterhub_server_ready), C(jupyterhub_judge_pod), C(jupyterhub_judge_nvidia_smi) and C(jupyterhub_row).
options:
  _input:
    description: The profile entries, or null for the defaults.
    type: list
    elements: dict
  workers:
    description: GPU worker name to its GPU count.
    type: dict
    required: true
  pools:
    description: The inventory's C(gpu_cluster_gpu_pools).
    type: list
    elements: dict
  drop_unsatisfiable:
    description: Drop (with a warning) instead of refuse profiles no node can satisfy.
    type: bool
    default: false
  namespace:
    description: The JupyterHub namespace (a pool may be reserved for some namespaces).
    type: str
    default: jupyterhub
"""

EXAMPLES = r"""
- name: Show the profiles the homelab offers
  ansible.builtin.debug:
    msg: "{{ none | cps.gpu_cluster.jupyterhub_profiles({'wk-gpu1': 2}) }}"
"""

RETURN = r"""
_value:
  description: C(profiles) (usable entries), C(refused), C(dropped) and C(problems) (messages).
  type: dict
"""

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.module_utils import jupyterhub


def _row(passed, check, target, detail):
    return jupyterhub.row(check, target, passed, detail)


class FilterModule(object):
    """cps.gpu_cluster JupyterHub filters."""

    def filters(self):
        return {
            "jupyterhub_profiles": _wrap(jupyterhub.resolve_profiles, "jupyterhub_profiles"),
            "jupyterhub_workers": _wrap(jupyterhub.inventory_workers, "jupyterhub_workers"),
            "jupyterhub_component": _wrap(jupyterhub.jupyterhub_component, "jupyterhub_component"),
            "jupyterhub_oauth_secret": _wrap(jupyterhub.oauth_secret, "jupyterhub_oauth_secret"),
            "jupyterhub_verify_plan": _wrap(jupyterhub.verify_plan, "jupyterhub_verify_plan"),
            "jupyterhub_api_command": _wrap(jupyterhub.hub_api_command, "jupyterhub_api_command"),
            "jupyterhub_api_output": _wrap(jupyterhub.parse_api_output, "jupyterhub_api_output"),
            "jupyterhub_server_ready": _wrap(jupyterhub.server_ready, "jupyterhub_server_ready"),
            "jupyterhub_judge_pod": _wrap(jupyterhub.judge_pod, "jupyterhub_judge_pod"),
            "jupyterhub_judge_nvidia_smi": _wrap(jupyterhub.judge_nvidia_smi, "jupyterhub_judge_nvidia_smi"),
            "jupyterhub_row": _wrap(_row, "jupyterhub_row"),
        }
