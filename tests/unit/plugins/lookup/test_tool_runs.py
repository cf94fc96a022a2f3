"""The lookup cps.gpu_cluster.tool_runs (preflight asks the control node's CLIs with it; issue 45), resolved by
ansible-core's plugin loader as a playbook resolves it (its documented options with it), in a fresh
interpreter: the tools as playbooks/preflight.yml passes them (one list,
``lookup('cps.gpu_cluster.tool_runs', __preflight_needs.tools)``) or one by one, answered in the shape
tool_problems reads. The stand-in CLI is tests/fixtures/tools'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
HELM = {"name": "helm", "argv": [str(REPO / "tests" / "fixtures" / "tools" / "helm-cli" / "helm"), "version", "--short"],
        "why": "the gpu phase of this run installs Helm charts with it"}
ABSENT = {"name": "terraform", "argv": ["/nonexistent/terraform", "version", "-json"],
          "why": "the provision phase of this run creates the VMs with it"}
PROBE = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader, lookup_loader
init_plugin_loader([sys.argv[1]])
lookup = lookup_loader.get("cps.gpu_cluster.tool_runs")
calls = json.loads(sys.argv[2])
print(json.dumps([lookup.run(terms, variables={}, **kwargs) for terms, kwargs in calls]))
"""


def run(*calls):
    """What the lookup returns for each (terms, options)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, str(REPO / "collections"), json.dumps(calls)],
                          capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(proc.stdout)


def test_one_list_of_tools_or_the_tools_one_by_one_and_its_timeout():
    one_list, one_by_one, none, slow = run([[[HELM, ABSENT]], {}], [[HELM, ABSENT], {}], [[[]], {}],
                                           [[{"name": "terraform", "argv": ["sleep", "30"], "why": "w"}], {"timeout": 1}])
    assert one_list == one_by_one
    (answers,) = one_list
    assert [(r["item"]["name"], r["rc"], r["stderr"]) for r in answers["results"]] == [("helm", 0, ""), ("terraform", 2, "")]
    assert answers["results"][0]["stdout"].startswith("v3.")
    assert none == [{"results": []}]
    assert slow[0]["results"][0]["rc"] == 124


def test_preflight_asks_through_the_lookup():
    """The lookup, not a command loop, answers preflight's tool check (a lookup runs in --check too, as the loop
    did with check_mode: false), and its answers go to tool_problems."""
    text = (REPO / "playbooks" / "preflight.yml").read_text()
    assert "__preflight_tools: \"{{ lookup('cps.gpu_cluster.tool_runs', __preflight_needs.tools) }}\"" in text
    assert "__preflight_tools | cps.gpu_cluster.tool_problems" in text
