"""gpu_capacity: the API listing (limit/_continue pagination, label selector) and the module end to end on
given Node objects (malformed objects, exponent and milli quantities)."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_capacity import list_all
from ansible_collections.cps.gpu_cluster.plugins.modules import gpu_capacity


class Response:
    def __init__(self, body):
        self.data = json.dumps(body).encode()


class FakeCoreV1:
    """Serves 5 nodes in pages of ``limit``, as the API server does with metadata.continue."""

    def __init__(self, names):
        self.names = names
        self.calls = []

    def list_node(self, **kwargs):
        self.calls.append(kwargs)
        start = int(kwargs.get("_continue") or 0)
        end = start + kwargs["limit"]
        items = [{"metadata": {"name": name}} for name in self.names[start:end]]
        token = str(end) if end < len(self.names) else ""
        return Response({"kind": "NodeList", "items": items, "metadata": {"continue": token}})


def test_lister_follows_continue_with_limit_and_selector():
    api = FakeCoreV1([f"wk-{i}" for i in range(5)])
    nodes = list_all(gpu_capacity._lister(api, "gpu=true"), page_size=2)
    assert [n["metadata"]["name"] for n in nodes] == [f"wk-{i}" for i in range(5)]
    assert api.calls == [
        {"limit": 2, "_preload_content": False, "label_selector": "gpu=true"},
        {"limit": 2, "_preload_content": False, "label_selector": "gpu=true", "_continue": "2"},
        {"limit": 2, "_preload_content": False, "label_selector": "gpu=true", "_continue": "4"},
    ]


def test_lister_without_selector():
    api = FakeCoreV1(["a"])
    assert len(list_all(gpu_capacity._lister(api, None))) == 1
    assert api.calls == [{"limit": 500, "_preload_content": False}]


def run_module(monkeypatch, args):
    class Done(Exception):
        pass

    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: (item for item in ()).throw(Done("exit", kw)))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: (item for item in ()).throw(Done("fail", kw)))
    with pytest.raises(Done) as info:
        gpu_capacity.main()
    return info.value.args


def test_malformed_node_fails_cleanly_naming_node_and_field(monkeypatch):
    kind, result = run_module(monkeypatch, {"nodes": [{"metadata": {"name": "wk-gpu1"}, "status": {"allocatable": ["x"]}}]})
    assert kind == "fail"
    assert result["msg"] == ("Malformed Node object, cannot read its GPU capacity: node wk-gpu1: "
                             "status.allocatable is a list, expected a mapping")


def test_exponent_quantities_in_nodes_and_expected(monkeypatch):
    node = {"metadata": {"name": "wk-gpu1"},
            "status": {"allocatable": {"nvidia.com/gpu": "2e0"}, "capacity": {"nvidia.com/gpu": "2"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    kind, result = run_module(monkeypatch, {"nodes": [node], "expected": {"nvidia.com/gpu": "2000m"}})
    assert kind == "exit", result
    assert result["totals"] == {"nvidia.com/gpu": 2}
    kind, result = run_module(monkeypatch, {"nodes": [node], "expected": {"nvidia.com/gpu": "500m"}})
    assert kind == "fail" and "not a whole number of devices" in result["msg"]
