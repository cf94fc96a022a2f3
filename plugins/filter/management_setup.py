# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter management_setup: the steps of the management phase (role management: Rancher, Fleet's
GitRepo and bundles, their Secrets and checks), over the private Python of
plugins/plugin_utils/management.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

management = deferred("management")

STEPS = {
    "components": management.management_components,
    "fleet_bundled_components": management.fleet_bundled_components,
    "fleet_gitrepo": management.gitrepo,
    "fleet_git_credentials_secret": management.git_credentials_secret,
    "rancher_bootstrap_secret": management.bootstrap_password_secret,
    "rancher_tls_secret": management.tls_secret,
    "problems": management.management_problems,
}


class FilterModule(object):
    """management_setup."""

    def filters(self):
        return {"management_setup": phase_filter("management_setup", STEPS)}
