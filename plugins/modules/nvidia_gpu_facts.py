#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_facts
short_description: NVIDIA GPUs as the NVIDIA driver sees them (nvidia-smi -q -x)
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x) when it is installed and returns one fact entry per GPU.
  - Without nvidia-smi (for example when the GPU Operator's driver runs in a container) it says so
    in C(msg) and returns an empty list; count passed-through GPUs with
    M(cps.gpu_cluster.pci_gpu_facts) instead.
  - Read-only; supports check mode.
options:
  nvidia_smi_path:
    description:
      - Path of the nvidia-smi binary. By default it is looked up on C(PATH) and in C(/usr/bin).
      - A path that is not an executable file is treated as nvidia-smi not being installed.
    type: path
  timeout:
    description:
      - Seconds nvidia-smi may take before it is stopped and the module fails, naming the command and the
        limit. A hung nvidia-smi is common with a broken driver.
      - Runs nvidia-smi under coreutils C(timeout); where that is missing the module warns and runs without.
      - C(0) disables the limit.
    type: int
    default: 30
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
notes:
  - nvidia-smi's C(N/A) values are returned as null.
  - nvidia-smi exiting 6 (C(No devices were found)) is reported as zero GPUs, not as a failure.
  - Output that is not valid UTF-8 is decoded with replacement characters and still parsed.
extends_documentation_fragment:
  - cps.gpu_cluster.attributes.read_only
attributes:
  facts:
    support: full
    description: Sets C(nvidia_gpus) and C(nvidia_driver_version) in C(ansible_facts).
  platform:
    support: full
    platforms: linux
    description: Runs C(nvidia-smi) on a Linux host or guest with the NVIDIA driver.
"""

EXAMPLES = r"""
- name: Read the GPUs the NVIDIA driver sees
  cps.gpu_cluster.nvidia_gpu_facts:

- name: Give a slow driver two minutes
  cps.gpu_cluster.nvidia_gpu_facts:
    timeout: 120

- name: The worker has its two A100s
  ansible.builtin.assert:
    that:
      - ansible_facts['nvidia_gpus'] | length == 2
      - ansible_facts['nvidia_gpus'] | map(attribute='product_name') | unique == ['NVIDIA A100 80GB PCIe']
"""

RETURN = r"""
nvidia_smi_found:
  description: Whether nvidia-smi was found and run.
  returned: always
  type: bool
  sample: true
msg:
  description: What happened, in words (no nvidia-smi, no GPUs, how many GPUs).
  returned: always
  type: str
  sample: nvidia-smi reports 2 GPU(s)
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    nvidia_driver_version:
      description: The NVIDIA driver version, or null without nvidia-smi or GPUs.
      type: str
      returned: always
      sample: "590.48.01"
    nvidia_gpus:
      description: One entry per GPU, in nvidia-smi order.
      type: list
      elements: dict
      returned: always
      contains:
        index:
          description: Position in nvidia-smi's output (the C(nvidia-smi -i) index).
          type: int
        minor_number:
          description: The C(/dev/nvidiaN) minor number.
          type: int
        uuid:
          description: GPU UUID.
          type: str
        product_name:
          description: Model, as nvidia-smi names it.
          type: str
        product_architecture:
          description: Architecture (newer drivers only).
          type: str
        pci_bus_id:
          description: PCI bus id, C(dddddddd:bb:dd.f).
          type: str
        memory_total_mib:
          description: Framebuffer memory in MiB.
          type: int
        mig_mode_current:
          description: C(Enabled), C(Disabled), or null when the GPU cannot do MIG.
          type: str
        mig_mode_pending:
          description: MIG mode after the next GPU reset; same values.
          type: str
        mig_devices:
          description: MIG devices (index, gpu_instance_id, compute_instance_id, multiprocessor_count,
            memory_total_mib); empty without MIG.
          type: list
          elements: dict
        persistence_mode:
          description: C(Enabled) or C(Disabled).
          type: str
        driver_version:
          description: Driver version.
          type: str
        cuda_version:
          description: Highest CUDA version the driver supports (null on old drivers).
          type: str
      sample:
        - index: 0
          minor_number: 0
          uuid: GPU-2a8e2d4c-0000-0000-0000-000000000000
          product_name: Tesla T4
          product_architecture: Turing
          pci_bus_id: "00000000:00:04.0"
          memory_total_mib: 15360
          mig_mode_current: null
          mig_mode_pending: null
          mig_devices: []
          persistence_mode: Enabled
          driver_version: "525.60.13"
          cuda_version: "12.0"
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    interpret_run,
    query_argv,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    binary = module.params["nvidia_smi_path"] or module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])
    if binary and not os.access(binary, os.X_OK):
        binary = None
    facts = {"nvidia_gpus": [], "nvidia_driver_version": None}
    if not binary:
        module.exit_json(
            changed=False, nvidia_smi_found=False, ansible_facts=facts,
            msg="nvidia-smi is not installed on this host (with the GPU Operator the driver runs in a "
                "container); use cps.gpu_cluster.pci_gpu_facts to count passed-through GPUs",
        )
    timeout = module.params["timeout"]
    if timeout < 0:
        module.fail_json(msg="timeout must be 0 (no limit) or a number of seconds, got %d" % timeout)
    timeout_binary = module.get_bin_path("timeout", opt_dirs=["/usr/bin", "/bin"]) if timeout else None
    if timeout and not timeout_binary:
        module.warn("coreutils timeout is not installed: nvidia-smi runs without the %d s limit" % timeout)
        timeout = 0
    argv = query_argv(binary, timeout, timeout_binary)
    rc, stdout, stderr = module.run_command(argv, encoding=None)
    try:
        result, message = interpret_run(rc, stdout, stderr, timeout)
    except NvidiaSmiError as exc:
        module.fail_json(msg="Could not read the GPUs with %s: %s" % (binary, exc), rc=rc, cmd=argv)
    facts["nvidia_gpus"] = result["gpus"]
    facts["nvidia_driver_version"] = result["driver_version"]
    module.exit_json(changed=False, nvidia_smi_found=True, ansible_facts=facts, msg=message)


if __name__ == "__main__":
    main()
