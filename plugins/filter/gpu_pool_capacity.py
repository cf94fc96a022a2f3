# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters gpu_pool_capacity and gpu_pool_report: what each GPU pool hands out (plugins/plugin_utils/gpu_pools.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, wrap as _wrap

gpu_pools = deferred("gpu_pools")


class FilterModule(object):
    """gpu_pool_capacity, gpu_pool_report."""

    def filters(self):
        return {
            "gpu_pool_capacity": _wrap(gpu_pools.pool_capacity, "gpu_pool_capacity"),
            "gpu_pool_report": _wrap(gpu_pools.capacity_report, "gpu_pool_report"),
        }
