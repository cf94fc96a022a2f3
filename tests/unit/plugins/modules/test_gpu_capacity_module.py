"""gpu_capacity's API listing: limit/_continue pagination and the label selector reach list_node."""

from __future__ import annotations

import json

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
