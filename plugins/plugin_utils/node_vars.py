# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reader of a host's node and GPU variables (and the one count converter).

The cluster model (cluster_model.build) reads every node through these functions, and so do the
few consumers that get one host's variables from a role (the GPU pools' filters, k3s node names,
NFS export clients, Terraform variables, verify). Nothing else in the plugins reads
``gpu_cluster_gpu_count``, ``gpu_cluster_gpu_model``, ``gpu_cluster_node_name`` or
``gpu_cluster_node_ip`` itself (``grep -rn "node_vars\\|cluster_model" plugins``; docs/development.md).
Preflight (inventory_checks) validates the raw values and names the variable that is wrong.

Imports nothing of the collection, so that every module_utils file can use it without a cycle.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def is_int(value):
    """Whether ``value`` is a whole number as YAML gives it (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_int(value, default=0):
    """The one converter of a count read from the inventory: an int (not a bool), or a string of
    decimal digits (a value templated from an extra var); anything else is ``default``."""
    if is_int(value):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return default


def node_name(host, variables=None):
    """The Kubernetes node name of an inventory host: ``gpu_cluster_node_name``, else the host."""
    name = (variables or {}).get("gpu_cluster_node_name")
    return name if isinstance(name, str) and name else host


def node_address(variables=None):
    """The node IP: ``gpu_cluster_node_ip``, else ``ansible_host`` ('' when neither is set)."""
    variables = variables or {}
    for key in ("gpu_cluster_node_ip", "ansible_host"):
        value = variables.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def gpu_count(variables=None):
    """``gpu_cluster_gpu_count`` of a host (0 when unset or not a count)."""
    return as_int((variables or {}).get("gpu_cluster_gpu_count"))


def gpu_model(variables=None):
    """``gpu_cluster_gpu_model`` of a host ('' when unset or not a string)."""
    model = (variables or {}).get("gpu_cluster_gpu_model")
    return model if isinstance(model, str) else ""
