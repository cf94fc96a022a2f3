# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter gpu_perf_verdict: a probe's measurements judged against its GPU model (plugins/plugin_utils/verify.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, wrap as _wrap

verify = deferred("verify")


class FilterModule(object):
    """gpu_perf_verdict."""

    def filters(self):
        return {"gpu_perf_verdict": _wrap(verify.gpu_perf_verdict, "gpu_perf_verdict")}
