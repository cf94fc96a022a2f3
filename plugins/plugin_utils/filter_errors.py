# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boundary of every filter plugin, written once (issue 28):

- wrap: the pure functions of plugins/plugin_utils/ raise ValueError/KeyError/TypeError on bad
  input; a filter turns that into AnsibleFilterError naming the filter, so a playbook shows a clear
  message instead of a traceback;
- phase_filter: one public filter per phase, its steps the phase's private functions;
- plain_inventory: Ansible's groups and hostvars as plain dicts of the variables a filter reads,
  templated, with what cannot be templated on the control node set aside for the caller to report;
- deferred: a filter file's view of a plugin_utils (or module_utils) module, imported when one of its
  functions is first called, not when the filter file is loaded."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from collections.abc import Mapping
from importlib import import_module

from jinja2 import Undefined

from ansible.errors import AnsibleError, AnsibleFilterError


_PACKAGE = "ansible_collections.cps.gpu_cluster.plugins."


class _Deferred(object):
    """The functions of one module of the collection, each imported at its first call."""

    __slots__ = ("_module",)

    def __init__(self, module):
        self._module = module

    def __getattr__(self, function):
        if function.startswith("__"):
            raise AttributeError(function)
        module = self._module

        def call(*args, **kwargs):
            return getattr(import_module(module), function)(*args, **kwargs)
        call.__name__ = function
        call.__qualname__ = "%s.%s" % (module.rsplit(".", 1)[-1], function)
        return call


def deferred(name, package="plugin_utils"):
    """plugins/<package>/<name>.py for a filter file: ``deferred("k3s").version_problem`` is a function
    that imports the module at its first call. Why: to resolve one collection filter, ansible-core loads
    the collection's filter files in turn up to the one that has it, in every worker process (a fresh one
    per task and host), and compiles collection Python from source there each time (no bytecode cache):
    a filter file that imported its modules at the top made every task using any of our filters compile
    most of plugin_utils (a sixth of a render's CPU time; docs/development.md). Functions only: read a
    constant with a plain import where it is used."""
    return _Deferred(_PACKAGE + package + "." + name)


def wrap(function, name=None, errors=(ValueError, KeyError, TypeError)):
    """function, raising AnsibleFilterError('<name>: <reason>') on bad input (``errors``)."""
    name = name or function.__name__

    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except errors as exc:
            raise AnsibleFilterError("%s: %s" % (name, exc)) from exc
    wrapper.__name__ = name
    wrapper.__doc__ = function.__doc__
    return wrapper


def phase_filter(name, steps):
    """One public filter for a phase: ``value | cps.gpu_cluster.<name>('<step>', ...)`` runs
    ``steps[step](value, ...)``; each step's errors name the filter and the step. The steps are the
    private Python of the phase (plugins/plugin_utils/); a role calls its phase's filter, never a
    helper of its own (issue 28)."""
    wrapped = dict((step, wrap(function, "%s('%s')" % (name, step))) for step, function in steps.items())

    def phase(value, step, *args, **kwargs):
        function = wrapped.get(step) if isinstance(step, str) else None
        if function is None:
            raise AnsibleFilterError("%s: unknown step %r; the steps are %s" % (name, step, ", ".join(sorted(wrapped))))
        return function(value, *args, **kwargs)
    phase.__name__ = name
    phase.__doc__ = "The %s phase's steps: %s." % (name, ", ".join(sorted(wrapped)))
    phase.steps = tuple(sorted(wrapped))
    return phase


_PLAIN = (str, int, float, bool, type(None))


def _undefined_in(value):
    """The first undefined part of a value (a Jinja Undefined, which ansible-core 2.19 hands out
    for a template that failed), or None."""
    if type(value) in _PLAIN:  # the common case first: no isinstance through the ABCs
        return None
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
    """Jinja's message for an Undefined, or "undefined" when it has none or cannot give it."""
    try:
        message = getattr(undefined, "_undefined_message", None)
        return str(message) if message else "undefined"
    except Exception:  # pylint: disable=broad-except
        return "undefined"


def plain_inventory(name, groups, hostvars, wanted, hosts=None):
    """``(groups, hostvars, failures)`` as plain dicts: every group's hosts, and per host (``hosts``, by
    default the group ``all``) the variables ``wanted(variable)`` selects, templated. A value that
    cannot be templated on the control node is left out and recorded in ``failures``
    ``{variable: (reason, [hosts])}``; the filter decides whether that is an error."""
    if not isinstance(groups, Mapping):
        raise AnsibleFilterError("%s: the input must be the groups mapping, got %s" % (name, type(groups).__name__))
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("%s: hostvars must be a mapping, got %s" % (name, type(hostvars).__name__))
    plain_groups = dict((str(group), [str(host) for host in members]) for group, members in groups.items())
    if hosts is None:
        hosts = plain_groups.get("all") or list(hostvars.keys())
    cluster_model = import_module(_PACKAGE + "plugin_utils.cluster_model")  # at the call, as deferred() does
    plain_hostvars = {}
    failures = {}
    selected = {}  # variable name -> wanted(name), asked once per name, not once per host
    seen = {}  # variable name -> the distinct list and dict values met so far (at most _SEEN of them)
    for host in hosts:
        if host not in hostvars:
            continue
        variables = hostvars[host]
        values = {}
        for variable in list(variables.keys()):
            keep = selected.get(variable)
            if keep is None:
                keep = selected[variable] = bool(wanted(variable))
            if not keep:
                continue
            try:
                value = variables[variable]
                same = cluster_model.same_value(value, seen.get(variable))
                if same is not None:
                    values[variable] = same
                    continue
                undefined = _undefined_in(value)
                reason = None if undefined is None else _undefined_message(undefined)
            except AnsibleError as exc:
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if reason is None:
                values[variable] = value
                if isinstance(value, (dict, list)):
                    earlier = seen.setdefault(variable, [])
                    if len(earlier) < cluster_model.SEEN_VALUES:
                        earlier.append(value)
            else:
                failures.setdefault(variable, (reason, []))[1].append(host)
        plain_hostvars[host] = values
    return plain_groups, plain_hostvars, failures


def refuse_failures(name, failures):
    """Raise AnsibleFilterError naming the first value ``plain_inventory`` could not template."""
    for variable, (reason, hosts) in failures.items():
        raise AnsibleFilterError("%s: %s: %s cannot be templated: %s" % (name, hosts[0], variable, reason))
