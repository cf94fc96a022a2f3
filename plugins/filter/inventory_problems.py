# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter inventory_problems: every problem of a cps.gpu_cluster inventory."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, plain_inventory

_checks = deferred("inventory_checks")
_model = deferred("cluster_model")
_secrets = deferred("secrets_needed")


# libyaml's parser when PyYAML has it (the same documents, several times faster): the argument specs of every
# role are read on each preflight
_SPEC_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
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
            data = yaml.load(handle, Loader=_SPEC_LOADER) or {}
        options = {}
        for entry in (data.get("argument_specs") or {}).values():
            options.update((entry or {}).get("options") or {})
        specs[role] = options
    _ROLE_SPECS[roles_dir] = specs
    return specs


def _wanted(name, options=frozenset(), prefixes=()):
    """What the checks read: ansible_host/connection, every gpu_cluster_* variable and role option, and
    every other name of a role's prefix (refused as unknown: known_variables)."""
    return name in ("ansible_host", "ansible_connection") or name.startswith("gpu_cluster_") or name in options \
        or name.startswith(prefixes)


def _plain(filter_name, groups, hostvars):
    """Plain (groups, hostvars) dicts of what the checks read, and a problem for each gpu_cluster_*
    variable or ansible_host that cannot be templated (a role variable built from facts is the
    role's to check when it runs)."""
    options = frozenset(name for spec in role_specs().values() for name in spec)
    prefixes = tuple("%s_" % role for role in role_specs())
    plain_groups, plain_hostvars, failures = plain_inventory(filter_name, groups, hostvars,
                                                             lambda name: _wanted(name, options, prefixes))
    problems = []
    for name, (reason, on) in failures.items():
        # a role variable too (issue 43: an undefined vault variable anywhere, a dict's value included, gets
        # this message, not a task-finalisation error later), unless it is built from facts or other
        # ansible_* variables preflight has not got: that one is the role's to check when it runs
        role_variable = name in options or name.startswith(prefixes)
        if not (name.startswith("gpu_cluster_") or name == "ansible_host" or (role_variable and "ansible_" not in reason)):
            continue
        where = on[0] if len(on) == 1 else "%s (and %d other host(s))" % (on[0], len(on) - 1)
        problems.append("%s: %s cannot be templated on the control node (%s); preflight reads the inventory before any host "
                        "is contacted, so give it a value that needs no facts and no undefined variable" % (where, name, reason))
    return plain_groups, plain_hostvars, problems


def inventory_problems(groups, hostvars, secrets_needed=False):
    """Every problem of the inventory described by groups and hostvars, one message each;
    ``secrets_needed``: also the vaulted values of the components this run delivers (true: all)."""
    try:
        _secrets.components(secrets_needed)
    except ValueError as exc:
        raise AnsibleFilterError("inventory_problems: %s" % exc) from None
    plain_groups, plain_hostvars, untemplated = _plain("inventory_problems", groups, hostvars)
    # the boundary: the inventory read once, every check (and the model, built once) reads that
    return untemplated + _checks.inventory_problems(_model.inventory(plain_groups, plain_hostvars, shared=True), role_specs=role_specs(),
                                                    secrets_needed=secrets_needed)


def inventory_warnings(groups, hostvars):
    """What is allowed but probably wrong in the inventory, one message each (never fatal)."""
    plain_groups, plain_hostvars, _untemplated = _plain("inventory_warnings", groups, hostvars)
    return _checks.inventory_warnings(_model.inventory(plain_groups, plain_hostvars, shared=True))


class FilterModule(object):
    """cps.gpu_cluster inventory validation."""

    def filters(self):
        return {"inventory_problems": inventory_problems, "inventory_warnings": inventory_warnings}
