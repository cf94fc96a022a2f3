# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for in-cluster components (thin wrappers over module_utils.components)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap as _wrap

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import (
    backups, cluster_logs, components, gpu_driver, node_vars, storage_components)


def bundle_file_texts(files, fleet, header, fleet_comment=""):
    """[{path, content: text}] of a Fleet bundle for module bundle_files: fleet.yaml first, then each
    manifest file of component_manifest_files, each text the header comment and the data as YAML."""
    if not isinstance(files, list) or not all(isinstance(item, dict) and "path" in item and "content" in item
                                              for item in files):
        raise ValueError("expects the list of {path, content} of component_manifest_files")
    if not isinstance(fleet, dict):
        raise ValueError("the fleet.yaml data must be a mapping (fleet_bundle's result)")
    head = str(header).rstrip("\n") + "\n"
    if fleet_comment:
        head_fleet = head + "".join("# %s\n" % line for line in str(fleet_comment).splitlines())
    else:
        head_fleet = head
    texts = [{"path": "fleet.yaml", "content": head_fleet + to_nice_yaml(fleet, indent=2, sort_keys=False)}]
    for item in files:
        texts.append({"path": item["path"], "content": head + to_nice_yaml(item["content"], indent=2, sort_keys=False)})
    return texts


def gpu_driver_version(workers, current, legacy, override=None):
    """The driver of the GPU nodes from the GPU workers' hostvars (their gpu_cluster_gpu_model):
    ``{version, branch, why}`` (module_utils/gpu_driver.driver_version)."""
    if not isinstance(workers, list):
        raise ValueError("expects the list of the GPU workers' hostvars")
    return gpu_driver.driver_version([node_vars.gpu_model(variables) for variables in workers], current, legacy, override)


def backup_credentials_secret(settings):
    """The Secret of the backup location's key pair (backups.credentials_secret), from the backup
    settings (the location falls back to the etcd snapshots' one, as backups.settings decides)."""
    return backups.credentials_secret(backups.settings(settings)["s3"])


class FilterModule(object):
    """cps.gpu_cluster component filters."""

    def filters(self):
        return {
            "fleet_bundle": _wrap(components.fleet_bundle),
            "bundle_file_texts": _wrap(bundle_file_texts),
            "component_manifests": _wrap(components.component_manifests),
            "component_manifest_files": _wrap(components.manifest_files),
            "component_problems": _wrap(components.validate_component),
            "gpu_operator_values": _wrap(components.gpu_operator_values),
            "gpu_driver_version": _wrap(gpu_driver_version),
            "gpu_driver_upgrade_policy": _wrap(gpu_driver.upgrade_policy),
            "gpu_driver_upgrade_progress": _wrap(gpu_driver.upgrade_progress),
            "supported_versions": _wrap(components.supported_versions),
            "cuda_smoke_pod": _wrap(components.cuda_smoke_pod),
            "nfs_provisioner_values": _wrap(storage_components.nfs_provisioner_values),
            "local_path_not_default": _wrap(storage_components.local_path_not_default),
            "fast_scratch_manifests": _wrap(storage_components.fast_scratch_manifests),
            "backup_components": _wrap(backups.components, "backup_components"),
            "backup_credentials_secret": _wrap(backup_credentials_secret),
            "backup_restore": _wrap(backups.restore, "backup_restore"),
            "logs_components": _wrap(cluster_logs.components, "logs_components"),
        }
