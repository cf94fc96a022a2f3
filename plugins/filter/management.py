# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the management phase (thin wrappers over module_utils.management)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import management


class FilterModule(object):
    """cps.gpu_cluster management filters."""

    def filters(self):
        return {
            "management_components": _wrap(management.management_components),
            "fleet_bundled_components": _wrap(management.fleet_bundled_components),
            "fleet_gitrepo": _wrap(management.gitrepo),
            "fleet_git_credentials_secret": _wrap(management.git_credentials_secret),
            "rancher_bootstrap_secret": _wrap(management.bootstrap_password_secret),
            "rancher_tls_secret": _wrap(management.tls_secret),
            "fleet_ordered_component": _wrap(management.ordered_component),
            "management_problems": _wrap(management.management_problems),
            "mask_secrets": _wrap(management.mask_secrets),
        }
