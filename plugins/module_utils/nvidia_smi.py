# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``nvidia-smi -q -x`` (XML) into plain GPU facts; build nvidia-smi argv.

Pure functions, unit-tested on XML captured from real machines.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import xml.etree.ElementTree as ET

# nvidia-smi exits 6 when "No devices were found" (NVML_ERROR_NOT_FOUND).
NO_DEVICES_RC = 6
# timeout(1) exits 124 when the command ran past its limit; when it had to SIGKILL the command after
# the grace period (a process stuck in the driver ignores SIGTERM) it is killed with its process
# group: 137 (128 + 9) through a shell, -9 as Python's subprocess reports it.
TIMEOUT_RCS = (124, 137, -9)
KILL_AFTER = 5
MIB_RE = re.compile(r"^\s*(\d+)\s*MiB\s*$")


class NvidiaSmiError(ValueError):
    """nvidia-smi output that cannot be read."""


def query_argv(binary="nvidia-smi", timeout=None, timeout_binary=None):
    """argv of the full XML query, under ``timeout_binary`` (coreutils timeout) when both are given.

    A hung nvidia-smi (common with a broken driver) is sent SIGTERM after ``timeout`` seconds and
    SIGKILL ``KILL_AFTER`` seconds later.
    """
    argv = [binary, "-q", "-x"]
    if timeout and timeout_binary:
        return [timeout_binary, "--kill-after=%d" % KILL_AFTER, str(int(timeout)), *argv]
    return argv


def decode_output(data):
    """Text of nvidia-smi's output: UTF-8, with undecodable bytes replaced (U+FFFD), never an error.

    Product names and error messages have been seen in other encodings; the XML still parses.
    """
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def _text(element, path):
    """Stripped text at path, or None when absent, empty or N/A."""
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    if not value or value in ("N/A", "None", "Not Supported", "[N/A]"):
        return None
    return value


def _mib(value):
    if value is None:
        return None
    match = MIB_RE.match(value)
    return int(match.group(1)) if match else None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _mig_devices(gpu):
    devices = []
    container = gpu.find("mig_devices")
    if container is None:
        return devices
    for device in container.findall("mig_device"):
        devices.append({
            "index": _int(_text(device, "index")),
            "gpu_instance_id": _int(_text(device, "gpu_instance_id")),
            "compute_instance_id": _int(_text(device, "compute_instance_id")),
            "multiprocessor_count": _int(_text(device, "device_attributes/shared/multiprocessor_count")),
            "memory_total_mib": _mib(_text(device, "fb_memory_usage/total")),
        })
    return devices


def parse_gpu(gpu, index, driver_version, cuda_version):
    """Facts of one ``<gpu>`` element."""
    return {
        "index": index,
        "minor_number": _int(_text(gpu, "minor_number")),
        "uuid": _text(gpu, "uuid"),
        "product_name": _text(gpu, "product_name"),
        "product_architecture": _text(gpu, "product_architecture"),
        "pci_bus_id": _text(gpu, "pci/pci_bus_id") or gpu.get("id"),
        "memory_total_mib": _mib(_text(gpu, "fb_memory_usage/total")),
        "mig_mode_current": _text(gpu, "mig_mode/current_mig"),
        "mig_mode_pending": _text(gpu, "mig_mode/pending_mig"),
        "mig_devices": _mig_devices(gpu),
        "persistence_mode": _text(gpu, "persistence_mode"),
        "driver_version": driver_version,
        "cuda_version": cuda_version,
    }


def parse_query_xml(text):
    """``{"driver_version", "cuda_version", "gpus": [...]}`` from ``nvidia-smi -q -x`` output.

    Raises NvidiaSmiError when the text is not an nvidia_smi_log document.
    """
    try:
        root = ET.fromstring(_strip_doctype(text))
    except ET.ParseError as exc:
        raise NvidiaSmiError("nvidia-smi -q -x output is not XML: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiError("nvidia-smi -q -x output has root <%s>, expected <nvidia_smi_log>" % root.tag)
    driver_version = _text(root, "driver_version")
    cuda_version = _text(root, "cuda_version")
    gpus = [parse_gpu(gpu, index, driver_version, cuda_version)
            for index, gpu in enumerate(root.findall("gpu"))]
    return {"driver_version": driver_version, "cuda_version": cuda_version, "gpus": gpus}


def _strip_doctype(text):
    # The DOCTYPE names a DTD file ElementTree would not load anyway; drop it to be explicit.
    return re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1)


def interpret_run(rc, stdout, stderr, timeout=None):
    """Facts from one nvidia-smi run: ``(facts, message)``; raises NvidiaSmiError on failure.

    ``stdout``/``stderr`` may be bytes (decoded with replacement). With ``timeout`` set (the run was
    wrapped by timeout(1)), exit codes 124 and 137 mean nvidia-smi did not answer in time.
    """
    stdout = decode_output(stdout)
    stderr = decode_output(stderr)
    if timeout and rc in TIMEOUT_RCS:
        raise NvidiaSmiError(
            "nvidia-smi -q -x did not answer within %d seconds (timeout) and was stopped; the NVIDIA driver "
            "is probably hung (check dmesg for Xid errors), or raise the module's timeout option" % int(timeout))
    if rc == NO_DEVICES_RC or (rc != 0 and "No devices were found" in (stdout + stderr)):
        return {"driver_version": None, "cuda_version": None, "gpus": []}, "nvidia-smi found no GPUs"
    if rc != 0:
        raise NvidiaSmiError("nvidia-smi -q -x failed with rc %d: %s" % (rc, (stderr or stdout).strip()))
    facts = parse_query_xml(stdout)
    return facts, "nvidia-smi reports %d GPU(s)" % len(facts["gpus"])
