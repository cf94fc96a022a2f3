"""The lookup cps.gpu_cluster.pinned (issue 28: the filter of the same name was a lookup in disguise)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleLookupError
from ansible_collections.cps.gpu_cluster.plugins.lookup.pinned import LookupModule

REPO = Path(__file__).resolve().parents[4]
PINS = yaml.safe_load((REPO / "versions.yml").read_text())


def test_returns_each_pin_in_the_order_asked():
    assert LookupModule().run(["k3s_version", "gpu_operator_chart"]) == [PINS["k3s_version"], PINS["gpu_operator_chart"]]


def test_an_unknown_key_names_the_pinned_ones():
    with pytest.raises(AnsibleLookupError, match=r"pins no 'k3s_versoin' \(pinned: .*k3s_version"):
        LookupModule().run(["k3s_versoin"])


def test_roles_read_pins_through_the_lookup_and_the_filter_is_deprecated():
    """No role, playbook or scenario uses the deprecated filter; meta/runtime.yml routes it to its removal."""
    callers = [p for top in ("roles", "playbooks", "molecule") for p in (REPO / top).rglob("*.yml")]
    assert len(callers) > 50 and any("lookup('cps.gpu_cluster.pinned'" in p.read_text() for p in callers)
    assert [str(p) for p in callers if "| cps.gpu_cluster.pinned" in p.read_text()] == []
    routing = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["plugin_routing"]["filter"]["pinned"]
    assert routing["deprecation"]["removal_version"] == "2.0.0" and "lookup" in routing["deprecation"]["warning_text"]
