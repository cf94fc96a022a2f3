# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for editing kernel command lines (used by the vfio_passthrough role)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.kernel_cmdline import (
    grub_cmdline,
    iommu_args,
    merge_cmdline,
    proxmox_boot_tool_loader,
)


def _iommu_args(cpu_vendor, extra=None):
    try:
        return iommu_args(cpu_vendor, extra)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """kernel_cmdline_merge, kernel_iommu_args, grub_cmdline_default, proxmox_boot_tool_loader."""

    def filters(self):
        return {
            "kernel_cmdline_merge": merge_cmdline,
            "kernel_iommu_args": _iommu_args,
            "grub_cmdline_default": grub_cmdline,
            "proxmox_boot_tool_loader": proxmox_boot_tool_loader,
        }
