# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One error wrapper for every filter plugin: the pure functions in module_utils raise
ValueError/KeyError/TypeError on bad input; a filter turns that into AnsibleFilterError naming
the filter, so a playbook shows a clear message instead of a traceback."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError


def wrap(function, name=None):
    """function, raising AnsibleFilterError('<name>: <reason>') on bad input."""
    name = name or function.__name__

    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, KeyError, TypeError) as exc:
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
