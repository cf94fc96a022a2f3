# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter mask_secrets: a value with every secret-looking field masked, for review output and logs
(plugins/plugin_utils/management.py mask_secrets)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, wrap

management = deferred("management")


class FilterModule(object):
    """mask_secrets."""

    def filters(self):
        return {"mask_secrets": wrap(management.mask_secrets, "mask_secrets")}
