# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters state_dir and state_dir_problems (thin wrappers over module_utils.state_dir)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, wrap

_state_dir = deferred("state_dir")


class FilterModule(object):
    """state_dir, state_dir_problems."""

    def filters(self):
        return {
            "state_dir": wrap(_state_dir.state_dir, "state_dir"),
            "state_dir_problems": wrap(_state_dir.state_dir_problems, "state_dir_problems"),
        }
