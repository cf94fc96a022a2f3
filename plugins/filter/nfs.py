# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nfs_server role (thin wrappers over module_utils.nfs_exports).

nfs_node_addresses(hosts, hostvars): each host's gpu_cluster_node_ip, else ansible_host.
nfs_export_problems(export, default_options): problems of one export, as sentences.
nfs_exports_line(export, default_options): the exports(5) line of one export.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import nfs_exports


class FilterModule(object):
    """nfs_node_addresses, nfs_export_problems, nfs_exports_line."""

    def filters(self):
        return {
            "nfs_node_addresses": _wrap(nfs_exports.node_addresses),
            "nfs_export_problems": _wrap(nfs_exports.export_problems),
            "nfs_exports_line": _wrap(nfs_exports.exports_line),
        }
