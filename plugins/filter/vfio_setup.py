# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter vfio_setup: the steps of the Proxmox host phase (role vfio_passthrough: the kernel command
line, the boot loader, hugepages), over the private Python of plugins/plugin_utils/kernel_cmdline.py
and plugins/module_utils/numa.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

numa = deferred("numa", "module_utils")
kernel_cmdline = deferred("kernel_cmdline")


def hugepage_kernel_args(reservation):
    """``{size: {node: pages}}`` -> the kernel arguments reserving them at boot."""
    try:
        return numa.hugepage_kernel_args(dict(reservation or {}))
    except AttributeError as exc:
        raise ValueError(str(exc)) from exc


def hugepage_shortfall(reservation, host_numa):
    """What ``host_numa`` (pci_gpu_facts) lacks of the reservation, one message per node."""
    return numa.hugepage_shortfall(dict(reservation or {}), dict(host_numa or {}))


STEPS = {
    "cmdline_merge": kernel_cmdline.merge_cmdline,
    "iommu_args": kernel_cmdline.iommu_args,
    "grub_cmdline_default": kernel_cmdline.grub_cmdline,
    "boot_tool_loader": kernel_cmdline.proxmox_boot_tool_loader,
    "hugepage_args": hugepage_kernel_args,
    "hugepage_shortfall": hugepage_shortfall,
}


class FilterModule(object):
    """vfio_setup."""

    def filters(self):
        return {"vfio_setup": phase_filter("vfio_setup", STEPS)}
