# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evaluate the GPU capacity of Kubernetes Nodes against expectations.

Pure functions over Node objects as ``kubernetes.core.k8s_info`` (or the raw API) returns them,
unit-tested without Ansible or a cluster. Cost is linear in the number of nodes.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# GPU Feature Discovery labels reported per node when present.
GFD_LABELS = (
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.memory",
    "nvidia.com/gpu.replicas",
    "nvidia.com/mig.strategy",
)
# Labels that say "this node should have GPUs" (ours, and the operator's node feature discovery).
GPU_NODE_LABELS = (
    ("gpu", "true"),
    ("nvidia.com/gpu.present", "true"),
)
# Kubernetes resource quantities (integers only make sense for device-plugin resources).
QUANTITY_RE = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
SUFFIXES = {
    None: 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18,
    "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
}
PAGE_SIZE = 500


class QuantityError(ValueError):
    """A resource quantity that is not a whole number of devices."""


def is_gpu_resource(name):
    """Whether a resource name is one this module accounts for by default."""
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


def parse_quantity(value):
    """Whole number of devices in a Kubernetes quantity (``"2"``, ``2``, ``"1k"``).

    Raises QuantityError for anything else (negative, fractional, garbage), naming the value.
    """
    if isinstance(value, bool):
        raise QuantityError("%r is not a quantity" % (value,))
    if isinstance(value, int):
        if value < 0:
            raise QuantityError("%r is negative" % (value,))
        return value
    if isinstance(value, float):
        if value < 0 or value != int(value):
            raise QuantityError("%r is not a whole number of devices" % (value,))
        return int(value)
    if not isinstance(value, str):
        raise QuantityError("%r is not a quantity" % (value,))
    match = QUANTITY_RE.match(value.strip())
    if not match or match.group("suffix") == "m":
        raise QuantityError("%r is not a whole-number quantity" % (value,))
    number = match.group("number")
    multiplier = SUFFIXES[match.group("suffix")]
    if "." in number:
        whole, frac = number.split(".")
        scaled = int(whole) * multiplier + int(frac) * multiplier // (10 ** len(frac))
        if int(frac) * multiplier % (10 ** len(frac)):
            raise QuantityError("%r is not a whole number of devices" % (value,))
        return scaled
    return int(number) * multiplier


def _is_ready(node):
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status")) == "True"
    return False


def _labelled_gpu_node(labels):
    return [key for key, value in GPU_NODE_LABELS if str(labels.get(key, "")).lower() == value]


def summarize_node(node, resources=None):
    """One node's GPU view: readiness, schedulability, taints, GPU capacity/allocatable, GFD labels.

    ``resources`` restricts the resources reported; None means every GPU resource found.
    Malformed quantities are reported in ``errors`` (the resource is left out of the numbers).
    """
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    labels = metadata.get("labels") or {}
    name = metadata.get("name") or "<unnamed>"
    summary = {
        "name": name,
        "ready": _is_ready(node),
        "schedulable": not spec.get("unschedulable", False),
        "taints": [
            {"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")}
            for t in spec.get("taints") or []
        ],
        "capacity": {},
        "allocatable": {},
        "labels": dict((key, labels[key]) for key in GFD_LABELS if key in labels),
        "gpu_node_labels": _labelled_gpu_node(labels),
        "errors": [],
    }
    for field in ("capacity", "allocatable"):
        for resource, raw in (status.get(field) or {}).items():
            wanted = resource in resources if resources is not None else is_gpu_resource(resource)
            if not wanted:
                continue
            try:
                summary[field][resource] = parse_quantity(raw)
            except QuantityError as exc:
                summary["errors"].append(
                    "node %s reports a malformed %s quantity for %s: %s" % (name, field, resource, exc))
    if resources is not None:
        for resource in resources:
            for field in ("capacity", "allocatable"):
                summary[field].setdefault(resource, 0)
    return summary


def counts_toward_totals(summary, require_ready=True):
    """Totals count Ready nodes only and, when require_ready, only schedulable (uncordoned) ones."""
    if not summary["ready"]:
        return False
    return summary["schedulable"] or not require_ready


def _plural(count, resource):
    return "%d %s" % (count, resource)


def evaluate(nodes, resources=None, expected=None, require_ready=True):
    """Summaries, totals and shortfalls of a list of Node objects.

    ``expected`` maps a resource to the total allocatable the cluster must offer at least, and
    optionally ``per_node`` to {node name: {resource: count}}. Returns a dict with ``nodes``,
    ``totals`` and ``shortfalls`` (human sentences naming node and numbers).
    """
    expected = dict(expected or {})
    per_node = expected.pop("per_node", None) or {}
    summaries = []
    by_name = {}
    totals = {}
    shortfalls = []
    for node in nodes:
        summary = summarize_node(node, resources)
        summaries.append(summary)
        by_name[summary["name"]] = summary
        shortfalls.extend(summary["errors"])
        if counts_toward_totals(summary, require_ready):
            for resource, count in summary["allocatable"].items():
                totals[resource] = totals.get(resource, 0) + count
        else:
            for resource in summary["allocatable"]:
                totals.setdefault(resource, 0)
        if summary["gpu_node_labels"] and not any(summary["allocatable"].values()) and not summary["errors"]:
            shortfalls.append(
                "node %s is labelled %s but advertises no allocatable GPU resource "
                "(is the GPU Operator's device plugin running there?)"
                % (summary["name"], ", ".join("%s=true" % key for key in summary["gpu_node_labels"])))
    for resource in resources or []:
        totals.setdefault(resource, 0)

    for node_name in sorted(per_node):
        wants = per_node[node_name] or {}
        summary = by_name.get(node_name)
        offer = ", ".join(_plural(_expected_count(c, node_name, r), r) for r, c in sorted(wants.items()))
        if summary is None:
            shortfalls.append("node %s is expected to offer %s but is not in the cluster" % (node_name, offer))
            continue
        if require_ready and not summary["ready"]:
            shortfalls.append("node %s is NotReady; it is expected to offer %s" % (node_name, offer))
            continue
        if require_ready and not summary["schedulable"]:
            shortfalls.append("node %s is cordoned (unschedulable); it is expected to offer %s" % (node_name, offer))
            continue
        for resource, count in sorted(wants.items()):
            want = _expected_count(count, node_name, resource)
            have = summary["allocatable"].get(resource, 0)
            if have < want:
                shortfalls.append("node %s has %d allocatable %s, expected %d"
                                  % (node_name, have, resource, want))

    for resource, count in sorted(expected.items()):
        want = _expected_count(count, None, resource)
        have = totals.get(resource, 0)
        if have < want:
            shortfalls.append("cluster has %d allocatable %s on Ready%s nodes, expected %d"
                              % (have, resource, " schedulable" if require_ready else "", want))
    return {"nodes": summaries, "totals": totals, "shortfalls": shortfalls}


def _expected_count(count, node_name, resource):
    try:
        return parse_quantity(count)
    except QuantityError as exc:
        where = "per_node.%s.%s" % (node_name, resource) if node_name else resource
        raise ValueError("expected.%s must be a whole number of devices: %s" % (where, exc)) from None


def validate_expected(expected):
    """Problems with the ``expected`` option, as sentences (empty when it is well formed)."""
    problems = []
    for key, value in (expected or {}).items():
        if key == "per_node":
            if not isinstance(value, dict):
                problems.append("expected.per_node must map node names to {resource: count}")
                continue
            for node_name, wants in value.items():
                if not isinstance(wants, dict):
                    problems.append("expected.per_node.%s must map resources to counts" % node_name)
                    continue
                for resource, count in wants.items():
                    try:
                        _expected_count(count, node_name, resource)
                    except ValueError as exc:
                        problems.append(str(exc))
        else:
            try:
                _expected_count(value, None, key)
            except ValueError as exc:
                problems.append(str(exc))
    return problems


def list_all(list_page, page_size=PAGE_SIZE):
    """Every item of a paginated list call.

    ``list_page(limit, continue_token)`` returns ``(items, next_continue_token)``; the loop follows
    ``metadata.continue`` until it is empty, so large clusters are read page by page.
    """
    items = []
    token = None
    while True:
        page, token = list_page(page_size, token)
        items.extend(page)
        if not token:
            return items


def matches_selector(node, selector):
    """Whether a node matches an equality-based label selector (``a=b,c!=d,e,!f``)."""
    if not selector:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    for term in (t.strip() for t in selector.split(",")):
        if not term:
            continue
        if "!=" in term:
            key, value = (part.strip() for part in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = (part.strip() for part in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True
