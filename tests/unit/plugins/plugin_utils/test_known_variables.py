"""Issue 43: a variable of the collection's prefixes that it does not read (a misspelt or renamed
setting, which Ansible silently ignores) is refused by preflight, naming the closest known name, and
an inventory written for an earlier release is told the new name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import known_variables as kv
from test_inventory_checks import homelab

REPO = Path(__file__).resolve().parents[4]
# what reads the inventory: the table must name exactly the gpu_cluster_* variables these read
READERS = ("roles", "playbooks", "plugins", "inventories", "terraform", "lab")
NAME = re.compile(r"\bgpu_cluster_[a-z0-9_]*[a-z0-9]\b")


def read_names():
    found = set()
    for top in READERS:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and path.name != "known_variables.py" and path.suffix in (".py", ".yml", ".yaml", ".j2", ".tf", ".tftpl", ".sh", ".md"):
                found.update(NAME.findall(path.read_text(errors="replace")))
    return found


def role_options():
    options = {}
    for spec in sorted((REPO / "roles").glob("*/meta/argument_specs.yml")):
        entries = (yaml.safe_load(spec.read_text()) or {}).get("argument_specs") or {}
        options[spec.parents[1].name] = {name for entry in entries.values() for name in ((entry or {}).get("options") or {})}
    return options


def test_the_table_is_what_the_collection_reads():
    found = read_names()
    assert found - set(kv.GPU_CLUSTER_VARIABLES) == set(), "read but not in known_variables.GPU_CLUSTER_VARIABLES"
    assert set(kv.GPU_CLUSTER_VARIABLES) - found == set(), "in the table but read nowhere (renamed? add it to RENAMED)"
    assert not set(kv.RENAMED) & found, "a renamed setting is still read"
    assert all(new in kv.GPU_CLUSTER_VARIABLES for new, _why in kv.RENAMED.values())


def problems_with(**settings):
    groups, hostvars = homelab()
    for host in groups["gpu_workers"]:
        hostvars[host] = dict(hostvars[host], **settings)  # each host its own copy, as Ansible gives them
    return ic.inventory_problems(groups, hostvars, role_specs=role_options())


def test_homelab_has_no_unknown_variable():
    assert not [p for p in problems_with() if "is not a setting" in p]


@pytest.mark.parametrize(("name", "suggestion"), [
    ("gpu_cluster_jupyterhub_enable", "did you mean gpu_cluster_jupyterhub_enabled?"),
    ("gpu_cluster_k3s_verison", "did you mean gpu_cluster_k3s_version?"),
    ("k3s_node_drain_timout", "did you mean k3s_node_drain_timeout?"),
    ("gpu_cluster_gpu_driver_upgrade_retries", "it was renamed; set gpu_cluster_gpu_driver_upgrade_timeout instead"),
    ("gpu_cluster_no_such_setting_at_all", "docs/inventory.md lists the settings"),
])
def test_unknown_variable_refused_with_the_closest_name(name, suggestion):
    problems = [p for p in problems_with(**{name: "s3cr3t-value"}) if name in p]
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"wk-gpu1 (and 3 other host(s)): {name} is not a setting of cps.gpu_cluster")
    assert suggestion in problems[0]
    assert "s3cr3t-value" not in problems[0], "a refusal names the variable, never its value"


def test_names_of_no_prefix_of_the_collection_are_left_alone():
    problems = problems_with(my_site_variable=1, k3s_snapshot_name="x", ansible_user="debian")
    assert not [p for p in problems if "is not a setting" in p]


def test_owner_takes_the_longest_role_prefix():
    assert kv.owner("k3s_node_token", ["k3s", "k3s_node"]) == "k3s_node"
    assert kv.owner("gpu_cluster_name", ["k3s_node"]) == ""
    assert kv.owner("nfs_clients", ["nfs_client"]) is None
