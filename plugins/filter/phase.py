# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the phase playbooks (thin wrappers over module_utils.phase).

phase_gate(reason, phase, lab, switched_off): {status, msg}; SKIPPED only in a lab or when switched off.
command_failure(result, secrets, what): a failed module result as one message, secrets redacted.
terraform_failure(result, secrets, directory, check_mode): a failed terraform run's message, naming its step.
unreachable_nodes(addresses, state, state_path, provision_enabled, lab): what to do about nodes that do not answer.
run_needs(groups, hostvars, playbook_phases, run_tags): the secrets and tools a run needs of the control node.
tool_problems(results): the tools run_needs asked for that are missing or too old.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, plain_inventory, wrap

phase = deferred("phase")
needs = deferred("run_needs")
_model = deferred("cluster_model")


def run_needs(groups, hostvars, playbook_phases=None, run_tags=None, skip_tags=None):
    """run_needs on the few cluster-wide settings it reads, templated (a value that cannot be templated
    counts as unset: inventory_problems names it)."""
    plain_groups, plain_hostvars, _failures = plain_inventory("run_needs", groups, hostvars, needs.wanted)
    return needs.run_needs(_model.inventory(plain_groups, plain_hostvars, shared=True), playbook_phases=playbook_phases,
                           run_tags=run_tags, skip_tags=skip_tags)


class FilterModule(object):
    """phase_gate, command_failure, terraform_failure."""

    def filters(self):
        return {
            "phase_gate": wrap(phase.phase_gate, "phase_gate"),
            "command_failure": wrap(phase.command_failure, "command_failure"),
            "terraform_failure": wrap(phase.terraform_failure, "terraform_failure"),
            "unreachable_nodes": wrap(phase.unreachable_nodes, "unreachable_nodes"),
            "run_needs": wrap(run_needs, "run_needs"),
            "tool_problems": wrap(needs.tool_problems, "tool_problems"),
        }
