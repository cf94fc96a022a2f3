# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The forms of the values every check reads, one pattern per kind of value (issue 28). Each is
anchored (``^...\\Z``), so ``match``, ``fullmatch`` and ``search`` all test the whole string, and
cites the rule it follows. Every module of plugins/plugin_utils/ that checks one of these kinds
imports it from here; none writes its own."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re
from collections.abc import Mapping

# Kubernetes IsDNS1123Label (k8s.io/apimachinery/pkg/util/validation): namespaces, most object names.
DNS_LABEL = re.compile(r"^(?=.{1,63}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
# Kubernetes IsDNS1123Subdomain: at most 253 characters, dot-separated DNS-1123 labels of any length
# (node names, for one).
DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
# A DNS name (RFC 1123, lower case): labels of at most 63 characters, 253 in all. Host names of
# Ingresses, and object names that also end up in DNS (issuers, classes, Secrets we reference).
DNS_NAME = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\Z")
# Kubernetes label keys and values (IsQualifiedName, IsValidLabelValue): an optional DNS-subdomain
# prefix and '/', then a name of at most 63 characters; a value is empty or such a name.
LABEL_NAME = re.compile(r"^(?=.{1,63}\Z)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
LABEL_VALUE = re.compile(r"^((?=.{1,63}\Z)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?\Z")
LABEL_KEY = re.compile(r"^(([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)/)?(?=[^/]{1,63}\Z)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
# Go's time.ParseDuration (kubelet, Fleet, Velero flags): one or more <number><unit>.
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+\Z")
GO_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)")
GO_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


# Go's time.Duration is an int64 of nanoseconds: time.ParseDuration refuses more ("invalid duration"),
# as does prometheus/common model.ParseDuration, which Loki reads its durations with ("out of range").
GO_DURATION_MAX_HOURS = (2 ** 63 - 1) // (3600 * 10 ** 9)  # 2562047h, about 292 years


def go_duration_seconds(value):
    """Seconds of a Go duration that GO_DURATION accepts (``1h30m`` -> 5400.0); None for anything else."""
    if not isinstance(value, str) or not GO_DURATION.match(value):
        return None
    return sum(float(number) * GO_DURATION_UNITS[unit] for number, unit in GO_DURATION_PART.findall(value))


# A Kubernetes quantity (k8s.io/apimachinery/pkg/api/resource ParseQuantity), unsigned: requests,
# limits and volume sizes are never negative. Groups: the number and the suffix (binary SI, decimal
# SI or a decimal exponent).
QUANTITY = re.compile(r"^(?P<number>[0-9]+(\.[0-9]*)?|\.[0-9]+)(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?\Z")
# A volume size the monitoring and logs volumes accept: a whole number of Gi or Ti (a subset of
# QUANTITY, so a size reads at a glance). Groups: the number and the unit.
VOLUME_SIZE = re.compile(r"^([1-9][0-9]*)(Gi|Ti)\Z")


def quantity_value(value):
    """The number a Kubernetes quantity (QUANTITY; a YAML number too) stands for, as a float (``10Gi`` ->
    10737418240.0, ``500m`` -> 0.5); None for anything else (``512GB``, ``-1``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # YAML gives cpu: 32 as a number
    if not isinstance(value, str):
        return None
    match = QUANTITY.match(value)
    if not match:
        return None
    number, suffix = float(match.group("number")), match.group("suffix") or ""
    binary = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
    decimal = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    if suffix in binary:
        return number * binary[suffix]
    if suffix in decimal:
        return number * decimal[suffix]
    return number * 10 ** int(suffix[1:])


# An e-mail address an ACME server (Let's Encrypt, through cert-manager's ClusterIssuer email) takes as
# a contact: one '@', a local part and a domain with a dot, no spaces or control characters.
EMAIL = re.compile(r"^[^@\s\x00-\x1f\x7f]+@[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)+\Z")


_SCALARS = (str, int, float, bool, type(None))


def copy_data(value):
    """A deep copy of data (mappings, lists, tuples, scalars) as the filters receive it: a mapping becomes a
    dict, a list a list, a tuple a tuple; strings and numbers (immutable, tags included) are kept.

    Not ``copy.deepcopy``: ansible-core 2.19 hands a filter its variables' dicts and lists as lazy
    containers, whose ``__deepcopy__`` deep-copies their templar, with every variable of the play
    (ansible/_internal/_templating/_lazy_containers.py). Profiled, that copy was 30 % of a homelab
    render's CPU time (issue 45). Anything else is copied with ``copy.deepcopy``."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Mapping):
        return dict((key, copy_data(item)) for key, item in value.items())
    if isinstance(value, list):
        return [copy_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(copy_data(item) for item in value)
    return copy.deepcopy(value)
