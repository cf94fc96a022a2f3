# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter storage_setup: the steps of the storage phase (roles nfs_server and storage_components:
the NFS exports, the provisioner, the fast scratch class, Velero), over the private Python of
plugins/plugin_utils/nfs_exports.py, storage_components.py and backups.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

backups = deferred("backups")
nfs_exports = deferred("nfs_exports")
storage_components = deferred("storage_components")


def backup_credentials_secret(settings):
    """The Secret of the backup location's key pair (backups.credentials_secret), from the backup
    settings (the location falls back to the etcd snapshots' one, as backups.settings decides)."""
    return backups.credentials_secret(backups.settings(settings)["s3"])


STEPS = {
    "nfs_node_addresses": nfs_exports.node_addresses,
    "nfs_export_problems": nfs_exports.export_problems,
    "nfs_exports_line": nfs_exports.exports_line,
    "nfs_provisioner_values": storage_components.nfs_provisioner_values,
    "nfs_mount_options": storage_components.nfs_mount_options,
    "fstab_options": storage_components.fstab_options,
    "local_path_not_default": storage_components.local_path_not_default,
    "fast_scratch_manifests": storage_components.fast_scratch_manifests,
    "backup_components": backups.components,
    "backup_credentials_secret": backup_credentials_secret,
}


class FilterModule(object):
    """storage_setup."""

    def filters(self):
        return {"storage_setup": phase_filter("storage_setup", STEPS)}
