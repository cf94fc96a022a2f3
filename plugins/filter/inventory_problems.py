# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter inventory_problems: every problem of a cps.gpu_cluster inventory."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
from collections.abc import Mapping

import yaml

from jinja2 import Undefined

from ansible.errors import AnsibleError, AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.inventory_checks import inventory_problems as _inventory_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.inventory_checks import inventory_warnings as _inventory_warnings


ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
_ROLE_SPECS = {}


def role_specs(roles_dir=ROLES_DIR):
    """role name -> {option: spec}, the options of every entry point of every role of the collection."""
    if roles_dir in _ROLE_SPECS:
        return _ROLE_SPECS[roles_dir]
    specs = {}
    for role in sorted(os.listdir(roles_dir)) if os.path.isdir(roles_dir) else []:
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        options = {}
        for entry in (data.get("argument_specs") or {}).values():
            options.update((entry or {}).get("options") or {})
        specs[role] = options
    _ROLE_SPECS[roles_dir] = specs
    return specs


def _wanted(name, options=frozenset()):
    return name in ("ansible_host", "ansible_connection") or name.startswith("gpu_cluster_") or name in options


def _undefined_in(value):
    """The first undefined part of a value (a Jinja Undefined, which ansible-core 2.19 hands out
    for a template that failed), or None."""
    if isinstance(value, Undefined):
        return value
    if isinstance(value, Mapping):
        for item in value.values():
            found = _undefined_in(item)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for item in value:
            found = _undefined_in(item)
            if found is not None:
                return found
    return None


def _undefined_message(undefined):
    message = getattr(undefined, "_undefined_message", None)
    try:
        return str(message) if message else "undefined"
    except Exception:  # pylint: disable=broad-except
        return "undefined"


def _host_variables(hostvars, host, failures):
    """The variables the checks read, templated, as a plain dict; a value that cannot be templated
    on the control node is left out and recorded in failures (name -> (reason, [hosts]))."""
    variables = hostvars[host]
    result = {}
    options = frozenset(name for spec in role_specs().values() for name in spec)
    for name in list(variables.keys()):
        if not _wanted(name, options):
            continue
        try:
            value = variables[name]
            undefined = _undefined_in(value)
            reason = None if undefined is None else _undefined_message(undefined)
        except AnsibleError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if reason is None:
            result[name] = value
        elif name.startswith("gpu_cluster_") or name == "ansible_host":
            failures.setdefault(name, (reason, []))[1].append(host)
        # A role variable built from facts is the role's to check when it runs.
    return result


def _plain(filter_name, groups, hostvars):
    """Plain (groups, hostvars) dicts of what the checks read."""
    if not isinstance(groups, Mapping):
        raise AnsibleFilterError("%s: the input must be the groups mapping, got %s" % (filter_name, type(groups).__name__))
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("%s: hostvars must be a mapping, got %s" % (filter_name, type(hostvars).__name__))
    plain_groups = dict((name, list(hosts)) for name, hosts in groups.items())
    hosts = plain_groups.get("all") or list(hostvars.keys())
    failures = {}
    plain_hostvars = dict((host, _host_variables(hostvars, host, failures)) for host in hosts if host in hostvars)
    problems = []
    for name, (reason, on) in failures.items():
        where = on[0] if len(on) == 1 else "%s (and %d other host(s))" % (on[0], len(on) - 1)
        problems.append("%s: %s cannot be templated on the control node (%s); preflight reads the inventory before any host "
                        "is contacted, so give it a value that needs no facts and no undefined variable" % (where, name, reason))
    return plain_groups, plain_hostvars, problems


def inventory_problems(groups, hostvars):
    """Every problem of the inventory described by groups and hostvars, one message each."""
    plain_groups, plain_hostvars, untemplated = _plain("inventory_problems", groups, hostvars)
    return untemplated + _inventory_problems(plain_groups, plain_hostvars, role_specs=role_specs())


def inventory_warnings(groups, hostvars):
    """What is allowed but probably wrong in the inventory, one message each (never fatal)."""
    plain_groups, plain_hostvars, _untemplated = _plain("inventory_warnings", groups, hostvars)
    return _inventory_warnings(plain_groups, plain_hostvars)


class FilterModule(object):
    """cps.gpu_cluster inventory validation."""

    def filters(self):
        return {"inventory_problems": inventory_problems, "inventory_warnings": inventory_warnings}
