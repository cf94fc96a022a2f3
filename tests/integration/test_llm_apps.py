"""The apps phase and the verify rows for LLM models, without a cluster: direct delivery says
SKIPPED with its reason, Fleet delivery writes one bundle per model idempotently, and verify
reports the LLM endpoints as SKIPPED with the reason."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
HOMELAB = REPO / "inventories" / "homelab"
ENV = dict(os.environ,
           ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
           ANSIBLE_INJECT_FACT_VARS="false",
           ANSIBLE_FORCE_COLOR="0",
           ANSIBLE_STDOUT_CALLBACK="default")
MODELS = yaml.safe_load((HOMELAB / "group_vars" / "all" / "llm.yml").read_text())["gpu_cluster_llm_models"]
WHOLE_GPU_MODELS = [dict((k, v) for k, v in model.items() if k != "pool") for model in MODELS]


def playbook(*args):
    result = subprocess.run(["ansible-playbook", *map(str, args)], cwd=REPO, env=ENV,
                            capture_output=True, text=True, timeout=1200, check=False)
    return result.returncode, result.stdout + result.stderr


def unreachable_kubeconfig(path):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        "users": [{"name": "x", "user": {"token": "t"}}]}))
    return path


def test_homelab_declares_exactly_qwen_and_embed():
    assert MODELS == [
        {"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingress_host": "qwen.127.0.0.1.nip.io"},
        {"name": "embed", "model": "BAAI/bge-base-en-v1.5", "gpu": 1, "pool": "inference"},
    ]


def test_apps_phase_skips_without_a_reachable_api_in_a_lab(tmp_path):
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB,
                       "-e", f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path / 'kubeconfig')}",
                       "-e", '{"gpu_cluster_lab": true}')
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED apps:" in line]
    assert len(lines) == 2, out  # LLM serving, then JupyterHub (tests/integration/test_jupyterhub_apps.py)
    assert "LLM serving: no Kubernetes API server answers at 127.0.0.1:1" in lines[0]


def test_apps_phase_fails_without_a_reachable_api_outside_a_lab(tmp_path):
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB,
                       "-e", f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path / 'kubeconfig')}")
    assert rc != 0, out
    assert "FAILED apps: LLM serving: no Kubernetes API server answers at 127.0.0.1:1" in out
    assert "SKIPPED apps:" not in out


def test_apps_phase_skips_without_models():
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB, "-e", '{"gpu_cluster_llm_models": [], "gpu_cluster_jupyterhub_enabled": false}')
    assert rc == 0, out
    assert "SKIPPED apps: LLM serving: gpu_cluster_llm_models is empty" in out


def test_apps_phase_fleet_writes_a_bundle_per_model_idempotently(tmp_path):
    args = (REPO / "playbooks" / "apps.yml", "-i", HOMELAB, "-e", "gpu_cluster_delivery=fleet",
            "-e", f"gpu_cluster_fleet_dir={tmp_path}")
    rc, out = playbook(*args)
    assert rc == 0, out
    # a first run into an empty directory warns about nothing (issue 43: it said "Skipped '<dir>' path
    # due to this access issue" from the search for bundles of models removed since the last run)
    assert "[WARNING]" not in out, out
    cluster = tmp_path / "homelab"
    assert sorted(p.name for p in cluster.iterdir()) == ["embed", "jupyterhub", "namespace-llm", "qwen"]
    assert sorted(p.name for p in (cluster / "namespace-llm").iterdir()) == [
        "00-namespace-llm.yaml", "01-networkpolicy-llm-ingress.yaml", "fleet.yaml"]
    assert sorted(p.name for p in (cluster / "qwen").iterdir()) == [
        "00-deployment-qwen.yaml", "01-service-qwen.yaml", "02-ingress-qwen.yaml", "fleet.yaml"]
    rc, out = playbook(*args)
    assert rc == 0, out
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\b", out), out


def test_apps_phase_refuses_a_bad_model(tmp_path):
    bad = [{"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 3}]
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB, "-e", "gpu_cluster_delivery=fleet",
                       "-e", f"gpu_cluster_fleet_dir={tmp_path}", "-e", json.dumps({"gpu_cluster_llm_models": bad}))
    assert rc != 0
    # preflight (which every phase playbook runs first) refuses it before anything is touched
    assert "The inventory has" in out and "gpu is 3; use 1, 2, 4 or 8" in out
    assert not (tmp_path / "homelab").exists()


def test_verify_reports_llm_endpoints_skipped(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    k3s_cluster:\n      children:\n        k3s_servers:\n          hosts: {}\n"
        "        k3s_agents:\n          children:\n            gpu_workers:\n              hosts:\n"
        f"                wk-local:\n                  ansible_connection: local\n"
        f"                  ansible_python_interpreter: {sys.executable}\n"
        "                  gpu_cluster_gpu_count: 1\n                  gpu_cluster_gpu_model: NVIDIA A100 80GB PCIe\n")
    rc, out = playbook(REPO / "playbooks" / "verify.yml", "-i", inventory, "-e", "gpu_cluster_name=llmtest",
                       "-e", f"gpu_cluster_kubeconfig={tmp_path}/absent", "-e", f"gpu_cluster_verify_report_dir={tmp_path}",
                       # a one-worker inventory that is not a whole cluster: preflight is off, verify is under test
                       # the homelab's models on whole GPUs (this inventory declares no pools)
                       "-e", json.dumps({"gpu_cluster_lab": True, "gpu_cluster_llm_models": WHOLE_GPU_MODELS,
                                         "gpu_cluster_preflight": False}))
    assert rc == 0, out[-3000:]
    assert out.count("SKIPPED verify: LLM endpoints: kubeconfig") == 1, out[-3000:]
    report = (tmp_path / "llmtest-verify.md").read_text()
    assert re.search(r"\| LLM endpoints \| cluster \| SKIPPED \| kubeconfig .*absent does not exist", report), report


def test_a_model_removed_from_the_inventory_leaves_the_fleet_directory(tmp_path):
    """Fleet: a model (or a whole namespace of models) removed from gpu_cluster_llm_models has its bundle's
    files removed, so Fleet deletes its Deployment and frees its GPUs; other components' bundles stay."""
    base = (REPO / "playbooks" / "apps.yml", "-i", HOMELAB, "-e", "gpu_cluster_delivery=fleet",
            "-e", f"gpu_cluster_fleet_dir={tmp_path}")
    rc, out = playbook(*base)
    assert rc == 0, out
    cluster = tmp_path / "homelab"
    (cluster / "embed" / "notes.txt").write_text("a file of the user's\n")

    def yaml_files(name):
        return sorted(p.name for p in (cluster / name).glob("*.yaml"))

    only_qwen = json.dumps({"gpu_cluster_llm_models": [m for m in MODELS if m["name"] == "qwen"]})
    rc, out = playbook(*base, "-e", only_qwen)
    assert rc == 0, out
    assert yaml_files("embed") == []
    assert (cluster / "embed" / "notes.txt").exists()  # only the bundle's own YAML goes
    assert "fleet.yaml" in yaml_files("qwen") and "fleet.yaml" in yaml_files("namespace-llm")
    assert "fleet.yaml" in yaml_files("jupyterhub")
    rc, out = playbook(*base, "-e", only_qwen)
    assert rc == 0, out
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\b", out), out
    # no model at all: the namespace bundle goes too (the apps phase says the models are switched off)
    rc, out = playbook(*base, "-e", '{"gpu_cluster_llm_models": []}')
    assert rc == 0, out
    assert yaml_files("qwen") == [] and yaml_files("namespace-llm") == []
    assert "fleet.yaml" in yaml_files("jupyterhub")


def test_a_switched_off_component_leaves_the_fleet_directory(tmp_path):
    """Fleet: JupyterHub (apps) and the monitoring stack (gpu) switched off after they were on have their
    bundles' files removed, so Fleet uninstalls them and their notebook servers free the GPUs; the other
    bundles stay, and a second run changes nothing."""
    fleet = ("-i", HOMELAB, "-e", "gpu_cluster_delivery=fleet", "-e", f"gpu_cluster_fleet_dir={tmp_path}")
    cluster = tmp_path / "homelab"

    def yaml_files(name):
        return sorted(p.name for p in (cluster / name).glob("*.yaml"))

    for phase in ("apps.yml", "gpu.yml"):
        rc, out = playbook(REPO / "playbooks" / phase, *fleet)
        assert rc == 0, out
    assert "fleet.yaml" in yaml_files("jupyterhub") and "fleet.yaml" in yaml_files("monitoring")
    hub_off = ("-e", '{"gpu_cluster_jupyterhub_enabled": false}')
    rc, out = playbook(REPO / "playbooks" / "apps.yml", *fleet, *hub_off)
    assert rc == 0, out
    assert yaml_files("jupyterhub") == []
    assert "fleet.yaml" in yaml_files("qwen") and "fleet.yaml" in yaml_files("monitoring")
    rc, out = playbook(REPO / "playbooks" / "apps.yml", *fleet, *hub_off)
    assert rc == 0, out
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\b", out), out
    rc, out = playbook(REPO / "playbooks" / "gpu.yml", *fleet, "-e", '{"gpu_cluster_monitoring_enabled": false}')
    assert rc == 0, out
    assert yaml_files("monitoring") == []
    assert "fleet.yaml" in yaml_files("gpu-operator") and "fleet.yaml" in yaml_files("gpu-alerts")
