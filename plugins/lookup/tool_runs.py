# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup tool_runs: the control node's CLIs asked for their versions (plugin_utils.run_needs.run_tools)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: tool_runs
author: cps.gpu_cluster contributors (@cps-gpu-cluster)
version_added: 0.2.0
short_description: Runs the control node's CLIs a run needs and returns their answers
description:
  - Runs each tool's C(argv) (the C(tools) of the C(run_needs) filter, like C(helm version --short) or
    C(terraform version -json)) on the control node, without a shell, and returns their exit codes and
    output shaped as a registered loop of M(ansible.builtin.command) over the tools, which the C(tool_problems)
    filter judges. Preflight asks it before any host is touched.
  - A lookup because it asks the control node, and runs in the controller's process (no module payload per
    tool). It runs in check mode too, as it only asks for versions.
  - A binary that cannot be started has the OS error's number as C(rc) (2 when it is not found) and no
    stderr; one that gives no answer within C(timeout) seconds has C(rc) 124.
options:
  _terms:
    description: The tools, each a dict with C(name), C(argv) (the command as a list) and C(why).
    type: list
    elements: dict
    required: true
  timeout:
    description: Seconds each tool may take to answer.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Ask the tools this run needs
  ansible.builtin.set_fact:
    tools_answers: "{{ lookup('cps.gpu_cluster.tool_runs', needs.tools) }}"

- name: What is missing or too old
  ansible.builtin.debug:
    msg: "{{ tools_answers | cps.gpu_cluster.tool_problems }}"
"""

RETURN = r"""
_raw:
  description: One dict, C(results), a list with one entry per tool in the order given.
  type: list
  elements: dict
  contains:
    results:
      description: Per tool C(item) (the tool), C(rc), C(stdout) and C(stderr) (trailing newline removed),
        and C(msg) when the binary could not be started.
      type: list
      elements: dict
  sample: [{results: [{item: {name: helm, argv: [helm, version, --short]}, rc: 0, stdout: v3.19.0+g3d8990f, stderr: ""}]}]
"""

from ansible.plugins.lookup import LookupBase

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import run_needs


class LookupModule(LookupBase):
    """tool_runs."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        tools = []
        for term in terms:  # the tools as one list (lookup('...', needs.tools)) or one by one
            tools.extend(term if isinstance(term, (list, tuple)) else [term])
        return [run_needs.run_tools(tools, timeout=self.get_option("timeout"))]
