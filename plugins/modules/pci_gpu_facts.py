#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: pci_gpu_facts
short_description: NVIDIA GPUs on the PCI bus, their drivers and IOMMU groups, and the host's NUMA layout
version_added: 0.1.0
description:
  - Reads sysfs (and optionally C(lspci -nnk)) and returns one entry per NVIDIA display or 3D
    controller with its ids, class, bound driver, IOMMU group (with every device in it) and NUMA node.
  - Also returns the host's NUMA layout (C(host_numa)) from C(/sys/devices/system/node) and
    C(/sys/devices/system/cpu) - nodes, their CPUs grouped into physical cores with their SMT
    siblings, memory per node and the 1 GiB / 2 MiB huge pages reserved and free per node - which
    the NUMA placement plan of the provision phase reads (docs/performance.md).
  - Works the same on a Proxmox VE host (are the GPUs bound to C(vfio-pci), is each IOMMU group
    viable) and inside a worker VM (are the passed-through GPUs visible, even with no NVIDIA driver).
  - Read-only; supports check mode.
options:
  sysfs_path:
    description:
      - Root of the sysfs tree to read. Point it at a captured tree in tests.
      - A path that does not exist or is not a directory fails the module (rather than reporting no GPUs).
    type: path
    default: /sys
  use_lspci:
    description:
      - Also run C(lspci -nnk) to add each GPU's name and kernel modules, and GPUs that lspci
        sees but the sysfs tree lacks.
    type: bool
    default: false
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
notes:
  - C(driver) is the driver bound now (for example C(vfio-pci), C(nvidia), C(nouveau)), or C(none).
extends_documentation_fragment:
  - cps.gpu_cluster.attributes.read_only
attributes:
  facts:
    support: full
    description: Sets C(pci_gpus), C(iommu_enabled) and C(host_numa) in C(ansible_facts).
  platform:
    support: full
    platforms: linux
    description: Reads Linux sysfs (C(/sys/bus/pci), C(/sys/kernel/iommu_groups), C(/sys/devices/system/node)).
"""

EXAMPLES = r"""
- name: Read the host's GPUs and IOMMU groups
  cps.gpu_cluster.pci_gpu_facts:

- name: Every GPU is bound to vfio-pci
  ansible.builtin.assert:
    that: ansible_facts['pci_gpus'] | rejectattr('driver', 'eq', 'vfio-pci') | list | length == 0

- name: Read a captured sysfs tree
  cps.gpu_cluster.pci_gpu_facts:
    sysfs_path: /tmp/captured-sys
"""

RETURN = r"""
iommu_enabled:
  description: Whether the kernel runs an IOMMU (it has built IOMMU groups).
  returned: always
  type: bool
  sample: true
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    iommu_enabled:
      description: Same as the top-level C(iommu_enabled).
      type: bool
      returned: always
    host_numa:
      description:
        - The host's NUMA layout, or null when the sysfs tree has no CPU topology (C(devices/system/cpu)).
        - Save the module's result (C(ansible <host> -m cps.gpu_cluster.pci_gpu_facts --tree <dir>)) to
          plan offline with C(gpu_cluster_numa_topology_file).
      type: dict
      returned: always
      sample:
        nodes:
          - node: 0
            cpus: [0, 1, 2, 3, 48, 49, 50, 51]
            cores: [[0, 48], [1, 49], [2, 50], [3, 51]]
            memory_mb: 515584
            memory_free_mb: 509724
            hugepages: {"1G": {total: 256, free: 256}, "2M": {total: 0, free: 0}}
        sockets: 2
        threads_per_core: 2
        smt_active: true
        cpus_online: 96
      contains:
        nodes:
          description:
            - One entry per NUMA node - C(node) number, C(cpus), C(cores) (each physical core as the
              list of its SMT sibling CPUs), C(memory_mb) and C(memory_free_mb) (null when unknown),
              C(hugepages) (C(1G) and C(2M) pools, each with C(total) and C(free) pages).
          type: list
          elements: dict
        sockets:
          description: CPU packages (sockets), or null when unknown.
          type: int
        threads_per_core:
          description: The most SMT threads one core has (1 with SMT off).
          type: int
        smt_active:
          description: Whether SMT (Hyper-Threading) is on.
          type: bool
        cpus_online:
          description: Online CPUs in all nodes.
          type: int
    pci_gpus:
      description: One entry per NVIDIA display or 3D controller, sorted by address.
      type: list
      elements: dict
      returned: always
      sample:
        - address: "0000:17:00.0"
          vendor_id: "10de"
          device_id: "20b5"
          subsystem_id: "10de:1533"
          class: "0302"
          class_name: 3D controller
          driver: vfio-pci
          iommu_group: 42
          numa_node: 0
          functions: ["0000:17:00.0"]
          group_devices:
            - {address: "0000:17:00.0", vendor_id: "10de", device_id: "20b5", class: "0302",
               class_name: 3D controller, driver: vfio-pci}
          group_foreign_devices: []
          group_isolated: true
      contains:
        address:
          description: PCI address, C(domain:bus:slot.function).
          type: str
        vendor_id:
          description: PCI vendor id, four hex digits.
          type: str
        device_id:
          description: PCI device id, four hex digits.
          type: str
        subsystem_id:
          description: Subsystem C(vendor:device) ids, or null when unknown.
          type: str
        class:
          description: PCI class and subclass, four hex digits (C(0300) VGA, C(0302) 3D controller).
          type: str
        class_name:
          description: The class in words.
          type: str
        driver:
          description: The bound kernel driver, or C(none).
          type: str
        iommu_group:
          description: IOMMU group number, or null without an IOMMU.
          type: int
        numa_node:
          description: NUMA node of the device, or null when the platform reports none.
          type: int
        functions:
          description: Every PCI function of the same card (for example the GPU's audio function).
          type: list
          elements: str
        group_devices:
          description: Every device in the GPU's IOMMU group with its address, ids, class and driver.
          type: list
          elements: dict
        group_foreign_devices:
          description:
            - Addresses in the group that are neither functions of this card nor PCI bridges
              (root or switch ports, class 0604, which VFIO accepts in a group).
          type: list
          elements: str
        group_isolated:
          description: True when the group holds only this card's functions and PCI bridges.
          type: bool
        name:
          description: The device name from lspci (only with I(use_lspci)).
          type: str
          returned: when use_lspci is true
        kernel_modules:
          description: Kernel modules able to drive it, from lspci (only with I(use_lspci)).
          type: list
          elements: str
          returned: when use_lspci is true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.pci_sysfs import (
    gpu_facts,
    merge_lspci,
    parse_lspci_nnk,
    sysfs_path_problem,
)
from ansible_collections.cps.gpu_cluster.plugins.module_utils.numa import TopologyError, numa_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_path=dict(type="path", default="/sys"),
            use_lspci=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    sysfs_path = module.params["sysfs_path"]
    problem = sysfs_path_problem(sysfs_path)
    if problem:
        module.fail_json(msg="Cannot read the PCI devices: %s (point sysfs_path at a mounted sysfs, /sys by default)"
                         % problem)
    try:
        gpus, enabled = gpu_facts(sysfs_path)
    except OSError as exc:
        module.fail_json(msg="Cannot read the PCI devices under %s: %s" % (sysfs_path, exc))
    if module.params["use_lspci"]:
        lspci = module.get_bin_path("lspci", required=True)
        rc, out, err = module.run_command([lspci, "-nnk"])
        if rc != 0:
            module.fail_json(msg="lspci -nnk failed (rc=%d): %s" % (rc, err.strip()))
        gpus = merge_lspci(gpus, parse_lspci_nnk(out))
    try:
        numa = numa_facts(sysfs_path)
    except (OSError, TopologyError) as exc:
        module.fail_json(msg="Cannot read the NUMA layout under %s: %s" % (sysfs_path, exc))
    module.exit_json(
        changed=False,
        iommu_enabled=enabled,
        ansible_facts={"pci_gpus": gpus, "iommu_enabled": enabled, "host_numa": numa},
    )


if __name__ == "__main__":
    main()
