"""Module integration: gpu_capacity and nvidia_gpu_facts run by ansible-playbook on localhost.

No cluster and no GPU needed: gpu_capacity gets ``nodes`` (real Node JSON from tests/fixtures/k8s-node),
nvidia_gpu_facts gets a stand-in nvidia-smi that prints real XML from tests/fixtures/nvidia-smi.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")

PLAYBOOK = """
- name: Run each module once per case and keep the results
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Evaluate GPU capacity
      cps.gpu_cluster.gpu_capacity: "{{ item }}"
      loop: "{{ capacity_cases }}"
      register: capacity_results
      ignore_errors: true

    - name: Read GPU facts
      cps.gpu_cluster.nvidia_gpu_facts: "{{ item }}"
      loop: "{{ facts_cases }}"
      register: facts_results
      ignore_errors: true

    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ {'capacity': capacity_results['results'], 'facts': facts_results['results']} | to_json }}"
        dest: "{{ result_path }}"
        mode: "0600"
      check_mode: false
"""
CAPACITY = {}
FACTS = {}


def capacity_case(name):
    def register(build):
        CAPACITY[name] = build
        return build
    return register


def facts_case(name):
    def register(build):
        FACTS[name] = build
        return build
    return register


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case through one ansible-playbook run in check mode (the modules are read-only)."""
    tmp_path = tmp_path_factory.mktemp("gpu_capacity_playbook")
    capacity_names, facts_names = sorted(CAPACITY), sorted(FACTS)
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    extra = tmp_path / "extra.json"
    result_path = tmp_path / "result.json"
    extra.write_text(json.dumps({
        "capacity_cases": [CAPACITY[name]() for name in capacity_names],
        "facts_cases": [FACTS[name](tmp_path) for name in facts_names],
        "result_path": str(result_path), "ansible_python_interpreter": sys.executable}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    argv = [ANSIBLE_PLAYBOOK, str(playbook), "-i", "localhost,", "-c", "local", "-e", f"@{extra}", "--check"]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(result_path.read_text())
    return {**dict(zip(capacity_names, data["capacity"])), **dict(zip(facts_names, data["facts"]))}


def node(name, gpus="2", ready="True", unschedulable=False):
    data = json.loads((FIXTURES / "k8s-node" / "node__tesla-t4-x2__gpu-operator.json").read_text())
    data = copy.deepcopy(data)
    data["metadata"]["name"] = name
    data["status"]["allocatable"]["nvidia.com/gpu"] = gpus
    data["status"]["capacity"]["nvidia.com/gpu"] = gpus
    for condition in data["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = ready
    if unschedulable:
        data["spec"]["unschedulable"] = True
    return data


@capacity_case("met")
def met():
    mig = json.loads((FIXTURES / "k8s-node" / "node__a100__mig-mixed-3-instances.json").read_text())
    return {"nodes": [node("wk-gpu1"), node("wk-gpu2"), mig],
            "expected": {"nvidia.com/gpu": 4, "nvidia.com/mig-1g.5gb": 2,
                         "per_node": {"wk-gpu1": {"nvidia.com/gpu": 2}, "wk-gpu2": {"nvidia.com/gpu": 2}}}}


def test_gpu_capacity_met(results):
    result = results["met"]
    assert result["failed"] is False and result["changed"] is False
    assert result["shortfalls"] == []
    assert result["totals"]["nvidia.com/gpu"] == 4
    assert result["totals"]["nvidia.com/mig-2g.10gb"] == 1
    names = [n["name"] for n in result["nodes"]]
    assert names == ["wk-gpu1", "wk-gpu2", "qa-mig-worker-gpu-a100"]
    first = result["nodes"][0]
    assert set(first) >= {"name", "ready", "schedulable", "taints", "capacity", "allocatable", "labels"}
    assert first["labels"]["nvidia.com/gpu.product"] == "Tesla-T4"
    assert first["allocatable"] == {"nvidia.com/gpu": 2}


@capacity_case("short")
def short():
    return {"nodes": [node("wk-gpu1", gpus="1"), node("wk-gpu2", ready="False"),
                      node("wk-gpu3", unschedulable=True), node("wk-gpu4", gpus="lots")],
            "expected": {"nvidia.com/gpu": 8,
                         "per_node": {f"wk-gpu{i}": {"nvidia.com/gpu": 2} for i in range(1, 5)}}}


def test_gpu_capacity_shortfalls_fail_with_every_sentence(results):
    result = results["short"]
    assert result["failed"] is True and result["changed"] is False
    expected = [
        "node wk-gpu4 reports a malformed capacity quantity for nvidia.com/gpu: 'lots' is not a Kubernetes quantity (e.g. 2, 1k, 1Ki, 1e3, 500m)",
        "node wk-gpu4 reports a malformed allocatable quantity for nvidia.com/gpu: 'lots' is not a Kubernetes quantity (e.g. 2, 1k, 1Ki, 1e3, 500m)",
        "node wk-gpu1 has 1 allocatable nvidia.com/gpu, expected 2",
        "node wk-gpu2 is NotReady; it is expected to offer 2 nvidia.com/gpu",
        "node wk-gpu3 is cordoned (unschedulable); it is expected to offer 2 nvidia.com/gpu",
        "node wk-gpu4 has 0 allocatable nvidia.com/gpu, expected 2",
        "cluster has 1 allocatable nvidia.com/gpu on Ready schedulable nodes, expected 8",
    ]
    assert result["shortfalls"] == expected
    assert result["msg"] == "GPU capacity falls short: " + "; ".join(expected)
    assert result["totals"] == {"nvidia.com/gpu": 1}


@capacity_case("selector")
def selector():
    cpu = node("cp1")
    cpu["metadata"]["labels"] = {"node-role.kubernetes.io/control-plane": "true"}
    return {"nodes": [node("wk-gpu1"), cpu], "label_selector": "nvidia.com/gpu.present=true"}


def test_gpu_capacity_label_selector_on_given_nodes(results):
    result = results["selector"]
    assert [n["name"] for n in result["nodes"]] == ["wk-gpu1"]


@capacity_case("bad_expected")
def bad_expected():
    return {"nodes": [], "expected": {"nvidia.com/gpu": "many"}}


def test_gpu_capacity_rejects_bad_expectations(results):
    result = results["bad_expected"]
    assert result["failed"] is True
    assert result["msg"] == ("Invalid option expected: expected.nvidia.com/gpu must be a whole number of devices: "
                             "'many' is not a Kubernetes quantity (e.g. 2, 1k, 1Ki, 1e3, 500m)")


@capacity_case("unreachable")
def unreachable():
    return {"host": "https://127.0.0.1:1", "api_key": "not-a-token", "validate_certs": False}


def test_gpu_capacity_unreachable_api_is_a_message(results):
    result = results["unreachable"]
    assert result["failed"] is True
    assert result["msg"].startswith("Could not list nodes from the Kubernetes API")
    assert "not-a-token" not in result["msg"]
    assert result["invocation"]["module_args"]["api_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def fake_nvidia_smi(directory, body):
    directory.mkdir()
    script = directory / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


@facts_case("xml")
def xml_case(tmp_path):
    xml = FIXTURES / "nvidia-smi" / "h100-mig-derived.xml"
    return {"nvidia_smi_path": fake_nvidia_smi(tmp_path / "xml", f'[ "$1 $2" = "-q -x" ] || exit 2\ncat "{xml}"\n')}


def test_nvidia_gpu_facts_parses_real_xml(results):
    result = results["xml"]
    assert result["failed"] is False and result["changed"] is False
    assert result["nvidia_smi_found"] is True
    facts = result["ansible_facts"]
    assert facts["nvidia_driver_version"] == "590.48.01"
    gpu = facts["nvidia_gpus"][0]
    assert gpu["product_name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["mig_mode_current"] == "Enabled"
    assert gpu["pci_bus_id"] == "00000000:00:09.0"


@facts_case("no_devices")
def no_devices(tmp_path):
    return {"nvidia_smi_path": fake_nvidia_smi(tmp_path / "none", 'echo "No devices were found"\nexit 6\n')}


def test_nvidia_gpu_facts_no_devices(results):
    result = results["no_devices"]
    assert result["failed"] is False
    assert result["ansible_facts"]["nvidia_gpus"] == []
    assert result["msg"] == "nvidia-smi found no GPUs"


@facts_case("driver_failure")
def driver_failure(tmp_path):
    return {"nvidia_smi_path": fake_nvidia_smi(
        tmp_path / "broken", 'echo "NVIDIA-SMI has failed because it could not communicate" >&2\nexit 9\n')}


def test_nvidia_gpu_facts_driver_failure(results):
    result = results["driver_failure"]
    assert result["failed"] is True
    assert "failed with rc 9: NVIDIA-SMI has failed" in result["msg"]


@facts_case("absent")
def absent(tmp_path):
    return {"nvidia_smi_path": str(tmp_path / "absent")}


def test_nvidia_gpu_facts_without_nvidia_smi(results):
    result = results["absent"]
    assert result["failed"] is False
    assert result["nvidia_smi_found"] is False
    assert result["ansible_facts"] == {"nvidia_gpus": [], "nvidia_driver_version": None}
    assert "pci_gpu_facts" in result["msg"]
