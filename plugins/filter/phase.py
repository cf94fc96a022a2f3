# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the phase playbooks (thin wrappers over module_utils.phase).

phase_gate(reason, phase, lab, switched_off): {status, msg}; SKIPPED only in a lab or when switched off.
phase_status(reason, lab, switched_off): "", "SKIPPED" or "FAIL".
redact_secrets(text, secrets): text with each secret replaced by <redacted>.
command_failure(result, secrets, what): a failed module result as one message, secrets redacted.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.module_utils import phase


class FilterModule(object):
    """phase_gate, phase_status, redact_secrets, command_failure."""

    def filters(self):
        return {
            "phase_gate": phase.phase_gate,
            "phase_status": phase.cannot_run_status,
            "redact_secrets": phase.redact,
            "command_failure": phase.command_failure,
        }
