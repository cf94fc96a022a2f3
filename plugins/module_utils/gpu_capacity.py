# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evaluate the GPU capacity of Kubernetes Nodes against expectations.

Pure functions over Node objects as ``kubernetes.core.k8s_info`` (or the raw API) returns them,
unit-tested without Ansible or a cluster. Cost is linear in the number of nodes.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re
from fractions import Fraction

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
# Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity):
#   <quantity> ::= <signedNumber><suffix>;  <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix> ::= <binarySI> (Ki..Ei) | <decimalExponent> (e|E <signed integer>) | <decimalSI> (m, "", k..E)
# The exponent alternative comes before the bare "E" (exa) so "1E3" is 1000 and "2E" is 2 * 10**18.
QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>m|k|M|G|T|P|E))?$")
SUFFIXES = {
    None: 1, "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
    "E": 10 ** 18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
}
# Larger decimal exponents are refused rather than computed (a "1e999999" must not eat the CPU).
MAX_EXPONENT = 64
PAGE_SIZE = 500


class QuantityError(ValueError):
    """A resource quantity that is not a whole number of devices."""


def is_gpu_resource(name):
    """Whether a resource name is one this module accounts for by default."""
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


def quantity_value(value):
    """Exact value (a Fraction) of a Kubernetes quantity: ``"1e3"``, ``"1k"``, ``"500m"``, ``"1Ki"``,
    ``"2E"``, ``"0.5"``, ``"-1"``, an int or a float.

    Follows resource.Quantity's grammar (sign, ``1.``/``.5`` numbers, binary and decimal SI suffixes,
    ``e``/``E`` exponents); surrounding whitespace is ignored. Raises QuantityError naming the value.
    """
    if isinstance(value, bool):
        raise QuantityError("%r is not a quantity" % (value,))
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise QuantityError("%r is not a quantity" % (value,))
        return Fraction(value)
    if not isinstance(value, str):
        raise QuantityError("%r is not a quantity" % (value,))
    match = QUANTITY_RE.match(value.strip())
    if not match:
        raise QuantityError("%r is not a Kubernetes quantity (e.g. 2, 1k, 1Ki, 1e3, 500m)" % (value,))
    number = Fraction(match.group("number"))
    if match.group("exponent") is not None:
        exponent = int(match.group("exponent"))
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError("%r has an exponent beyond +/-%d" % (value, MAX_EXPONENT))
        number *= Fraction(10) ** exponent
    else:
        number *= SUFFIXES[match.group("suffix") or match.group("decimal")]
    return -number if match.group("sign") == "-" else number


def parse_quantity(value):
    """Whole number of devices in a Kubernetes quantity (``"2"``, ``2``, ``"1k"``, ``"1e3"``, ``"2000m"``).

    Device-plugin resources are counted in whole devices: a quantity whose value is fractional
    (``"500m"``, ``"0.5"``) or negative is refused with QuantityError, as is anything that is not a
    quantity; ``"2000m"`` and ``"2.0"`` are 2.
    """
    exact = quantity_value(value)
    if exact < 0:
        raise QuantityError("%r is negative" % (value,))
    if exact.denominator != 1:
        raise QuantityError("%r is %s, not a whole number of devices" % (value, _decimal(exact)))
    return int(exact)


def _decimal(fraction):
    return "%g" % float(fraction)


class MalformedNodeError(ValueError):
    """A Node object whose structure is not what the Kubernetes API returns."""


def _mapping(value, where, name):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedNodeError("node %s: %s is a %s, expected a mapping" % (name, where, type(value).__name__))
    return value


def _list_of_mappings(value, where, name):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise MalformedNodeError("node %s: %s must be a list of mappings, got %r" % (name, where, value))
    return value


def _is_ready(conditions):
    for condition in conditions:
        if condition.get("type") == "Ready":
            return str(condition.get("status")) == "True"
    return False


def _labelled_gpu_node(labels):
    return [key for key, value in GPU_NODE_LABELS if str(labels.get(key, "")).lower() == value]


def summarize_node(node, resources=None):
    """One node's GPU view: readiness, schedulability, taints, GPU capacity/allocatable, GFD labels.

    ``resources`` restricts the resources reported; None means every GPU resource found.
    Malformed quantities are reported in ``errors`` (the resource is left out of the numbers);
    a malformed object (a Node that is not a mapping, a status, labels or allocatable of the wrong
    type, conditions or taints that are not lists of mappings) raises MalformedNodeError naming
    the node and the field.
    """
    if not isinstance(node, dict):
        raise MalformedNodeError("a Node object must be a mapping, got %s %r" % (type(node).__name__, node))
    metadata = _mapping(node.get("metadata"), "metadata", "<unnamed>")
    name = metadata.get("name") or "<unnamed>"
    if not isinstance(name, str):
        raise MalformedNodeError("node metadata.name must be a string, got %r" % (name,))
    spec = _mapping(node.get("spec"), "spec", name)
    status = _mapping(node.get("status"), "status", name)
    labels = _mapping(metadata.get("labels"), "metadata.labels", name)
    conditions = _list_of_mappings(status.get("conditions"), "status.conditions", name)
    taints = _list_of_mappings(spec.get("taints"), "spec.taints", name)
    fields = dict((field, _mapping(status.get(field), "status." + field, name)) for field in ("capacity", "allocatable"))
    summary = {
        "name": name,
        "ready": _is_ready(conditions),
        "schedulable": not spec.get("unschedulable", False),
        "taints": [{"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")} for t in taints],
        "capacity": {},
        "allocatable": {},
        "labels": dict((key, labels[key]) for key in GFD_LABELS if key in labels),
        "gpu_node_labels": _labelled_gpu_node(labels),
        "errors": [],
    }
    for field in ("capacity", "allocatable"):
        for resource, raw in fields[field].items():
            wanted = resource in resources if resources is not None else is_gpu_resource(str(resource))
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
