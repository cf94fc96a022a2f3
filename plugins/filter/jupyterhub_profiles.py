# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for JupyterHub with GPU profiles (thin wrappers over module_utils.jupyterhub)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import jupyterhub


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
