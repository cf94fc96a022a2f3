"""verify's GPU inventory (issue 47) published to a stand-in Kubernetes API (kube_standin.py, which
refuses what the API server refuses: a ConfigMap in a namespace that does not exist, a data value that
is not a string, a second create). The inventory is the real H100 VM's (tests/fixtures/real-h100/:
its nvidia-smi -q -x, parsed by the module's own parser), as verify's worker play records it; the tasks
are the role's own (roles/verify/tasks/gpu_inventory.yml), run as verify.yml runs them after capacity."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from ansible_collections.cps.gpu_cluster.plugins.module_utils.nvidia_smi import parse_query_xml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_inventory
from kube_standin import KubeStandIn
from test_components_delivery import playbook

REPO = Path(__file__).resolve().parents[2]
H100_XML = REPO / "tests" / "fixtures" / "real-h100" / "nvidia-smi-q-x__h100-80gb-hbm3__580.159.04.xml"

PLAY = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      vars:
        __verify_gpu_workers: [localhost]
        __verify_skip_reason: ""
        verify_kubeconfig: "{{ kubeconfig }}"
      tasks:
        - name: What the worker play recorded
          ansible.builtin.set_fact:
            __verify_gpu_inventory: "{{ inventory }}"
            __verify_rows: []
        - name: Publish
          ansible.builtin.include_role:
            name: cps.gpu_cluster.verify
            tasks_from: gpu_inventory.yml
        - name: Rows
          ansible.builtin.copy:
            content: "{{ __verify_rows | to_json }}"
            dest: "{{ rows_file }}"
            mode: "0600"
          check_mode: false
    """)


def h100_inventory():
    parsed = parse_query_xml(H100_XML.read_text())
    smi = {"ansible_facts": {"nvidia_gpus": parsed["gpus"], "nvidia_driver_version": parsed["driver_version"]}}
    pci = [{"address": "0000:00:06.0", "vendor_id": "10de", "device_id": "2330", "driver": "nvidia", "numa_node": None}]
    return gpu_inventory.node_inventory("wk-gpu1", pci, smi)


def publish(tmp_path, api, *extra):
    book = tmp_path / "publish.yml"
    book.write_text(PLAY)
    rows_file = tmp_path / "rows.json"
    rows_file.unlink(missing_ok=True)
    variables = {"kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")), "inventory": h100_inventory(),
                 "rows_file": str(rows_file)}
    rc, out = playbook(book, "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
                       "-e", json.dumps(variables), *extra)
    return rc, out, json.loads(rows_file.read_text()) if rows_file.exists() else None


def publish_status(out):
    """ok or changed: the publish task's status line."""
    return re.search(r"Publish the GPU inventory ConfigMap\] \**\n(\w+): \[localhost\]", out).group(1)


def test_published_once_then_unchanged(tmp_path):
    with KubeStandIn({}, namespaces=("default", "gpu-operator")) as api:
        rc, out, rows = publish(tmp_path, api)
        assert rc == 0, out
        stored = api.configmaps[("gpu-operator", "gpu-inventory")]
        assert json.loads(stored["data"]["wk-gpu1.json"]) == h100_inventory()
        assert json.loads(stored["data"]["wk-gpu1.json"])["models"] == ["NVIDIA H100 80GB HBM3"]
        assert rows == [{"check": "GPU inventory", "target": "gpu-operator/gpu-inventory", "status": "PASS",
                         "detail": "published for 1 node(s)"}]
        assert api.writes("configmaps") == [("POST", "/".join(("", "api", "v1", "namespaces", "gpu-operator", "configmaps")))]
        assert publish_status(out) == "changed"
        # the same facts again: kubernetes.core patches, the object comes back unchanged, nothing changed
        rc, out, rows = publish(tmp_path, api)
        assert rc == 0, out
        assert publish_status(out) == "ok", out
        assert api.configmaps[("gpu-operator", "gpu-inventory")] == stored
        assert rows[0]["status"] == "PASS"


def test_check_mode_writes_nothing(tmp_path):
    with KubeStandIn({}, namespaces=("default", "gpu-operator")) as api:
        rc, out, rows = publish(tmp_path, api, "--check")
        assert rc == 0, out
        assert api.configmaps == {}  # a server-side dry run at most (dryRun=All), never stored
        assert rows[0]["detail"] == "published for 1 node(s) (check mode: not written)"


def test_without_the_gpu_operator_namespace_the_row_fails_with_the_apis_answer(tmp_path):
    with KubeStandIn({}) as api:
        rc, out, rows = publish(tmp_path, api)
        assert rc == 0, out  # the row carries the failure; verify's report fails the run
        assert rows[0]["status"] == "FAIL"
        # the API's Status, as kubernetes.core quotes it: 'namespaces \\"gpu-operator\\" not found', NotFound
        assert 'gpu-operator\\" not found' in rows[0]["detail"] and '"reason": "NotFound"' in rows[0]["detail"], rows
        assert rows[0]["detail"].startswith("not published: ")
        assert api.configmaps == {}
