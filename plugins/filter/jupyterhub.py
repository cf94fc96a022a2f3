# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of JupyterHub (role jupyterhub): jupyterhub_setup (profiles, workers, the component, the
OAuth Secret), and the REST API check as two, jupyterhub_verify_plan and jupyterhub_verify_judge,
over the private Python of plugins/plugin_utils/jupyterhub.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

jupyterhub = deferred("jupyterhub")


def _row(passed, check, target, detail):
    return jupyterhub.row(check, target, passed, detail)


SETUP = {
    "profiles": jupyterhub.resolve_profiles,
    "workers": jupyterhub.inventory_workers,
    "component": jupyterhub.jupyterhub_component,
    "oauth_secret": jupyterhub.oauth_secret,
}

VERIFY_PLAN = {
    "profiles": jupyterhub.verify_plan,
    "api_command": jupyterhub.hub_api_command,
}

VERIFY_JUDGE = {
    "api_output": jupyterhub.parse_api_output,
    "server_ready": jupyterhub.server_ready,
    "pod": jupyterhub.judge_pod,
    "nvidia_smi": jupyterhub.judge_nvidia_smi,
    "row": _row,
}


class FilterModule(object):
    """jupyterhub_setup, jupyterhub_verify_plan, jupyterhub_verify_judge."""

    def filters(self):
        return {
            "jupyterhub_setup": phase_filter("jupyterhub_setup", SETUP),
            "jupyterhub_verify_plan": phase_filter("jupyterhub_verify_plan", VERIFY_PLAN),
            "jupyterhub_verify_judge": phase_filter("jupyterhub_verify_judge", VERIFY_JUDGE),
        }
