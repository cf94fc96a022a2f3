# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The module attributes block: what each attribute means (every module), and the read-only modules'
    check and diff mode (cps.gpu_cluster.attributes.read_only). A module states its own support and
    platform; what it states wins over the fragment."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and report what it would change without changing it.
  diff_mode:
    description: Reports what it changed (or would change in check mode) as a diff.
  platform:
    description: Where the module runs.
"""

    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: Read-only, it reports what it finds and never changes anything (C(changed) is always false).
  diff_mode:
    support: N/A
    description: Changes nothing, so there is nothing to diff.
"""
