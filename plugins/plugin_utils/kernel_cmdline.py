# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit a kernel command line, touching only the tokens we own."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

IOMMU_KEYS = ("intel_iommu", "amd_iommu", "iommu")
GRUB_DEFAULT_RE = re.compile(r'^GRUB_CMDLINE_LINUX_DEFAULT=(["\']?)(.*?)\1\s*$', re.MULTILINE)


def token_key(token):
    """``intel_iommu=on`` -> ``intel_iommu``; a bare flag is its own key."""
    return token.split("=", 1)[0]


def iommu_args(cpu_vendor, extra=None):
    """The tokens passthrough needs on ``cpu_vendor`` (``intel`` or ``amd``) plus ``extra``."""
    if cpu_vendor not in ("intel", "amd"):
        raise ValueError("unknown CPU vendor %r: expected intel or amd" % (cpu_vendor,))
    return ["%s_iommu=on" % cpu_vendor, "iommu=pt"] + [str(arg) for arg in (extra or [])]


def merge_cmdline(current, desired, managed_keys=IOMMU_KEYS):
    """``current`` with ``desired`` tokens in place and every other token kept in its order.

    A token whose key is managed (``managed_keys`` or a key of ``desired``) but that is not
    desired (``amd_iommu=on`` on an Intel host, ``iommu=off``) is dropped; missing desired
    tokens are appended. Applying it twice gives the same line.
    """
    tokens = (current or "").split()
    keys = set(managed_keys) | set(token_key(token) for token in desired)
    kept = [token for token in tokens if token_key(token) not in keys or token in desired]
    seen = set()
    result = []
    for token in kept:
        if token in desired and token in seen:
            continue
        seen.add(token)
        result.append(token)
    return " ".join(result + [token for token in desired if token not in seen])


def grub_cmdline(grub_default_text):
    """The value of ``GRUB_CMDLINE_LINUX_DEFAULT`` in ``/etc/default/grub`` text ('' when unset)."""
    matches = list(GRUB_DEFAULT_RE.finditer(grub_default_text or ""))
    return matches[-1].group(2) if matches else ""


def proxmox_boot_tool_loader(status_output):
    """Boot loader ``proxmox-boot-tool status`` reports: ``systemd-boot``, ``grub`` or None.

    ``<uuid> is configured with: uefi (versions: ...)`` means systemd-boot reads
    ``/etc/kernel/cmdline``; ``configured with: grub`` means GRUB reads ``/etc/default/grub``.
    """
    found = re.findall(r"configured with: (\w+)", status_output or "")
    if "uefi" in found:
        return "systemd-boot"
    if "grub" in found:
        return "grub"
    return None
