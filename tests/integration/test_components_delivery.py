"""component_delivery in fleet mode on localhost, and the storage and gpu phases when direct
delivery has no cluster: SKIPPED in a lab (gpu_cluster_lab) or on a CPU-only cluster, FAILED
with the reason anywhere else."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CPU_ONLY = REPO / "tests" / "fixtures" / "components" / "inventory-cpu-only"
ENV = dict(os.environ,
           ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
           ANSIBLE_INJECT_FACT_VARS="false",
           ANSIBLE_FORCE_COLOR="0",
           ANSIBLE_STDOUT_CALLBACK="default")


LOCAL = ["-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]


def playbook(*args):
    result = subprocess.run(["ansible-playbook", *map(str, args)], cwd=REPO, env=ENV,
                            capture_output=True, text=True, timeout=1200, check=False)
    return result.returncode, result.stdout + result.stderr


def recap_changed(output):
    return int(re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", output).group(1))


DELIVER = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      tasks:
        - ansible.builtin.include_role:
            name: cps.gpu_cluster.component_delivery
          vars:
            component_delivery_mode: fleet
            component_delivery_fleet_dir: "{{ fleet_dir }}"
            component_delivery_cluster: lab
            component_delivery_component:
              name: demo
              namespace: demo
              chart: {repo: "https://charts.example.org", name: demo, version: 1.2.3, release: demo,
                      values: {replicas: 2}}
              manifests: "{{ demo_manifests }}"
    """)


def test_fleet_bundle_written_idempotently_and_pruned(tmp_path):
    play = tmp_path / "deliver.yml"
    play.write_text(DELIVER)
    two = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"a": "1"}},
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}, "data": {"b": "2"}}]
    vars_two = tmp_path / "two.yml"
    vars_two.write_text(yaml.safe_dump({"fleet_dir": str(tmp_path / "fleet"), "demo_manifests": two}))
    rc, out = playbook(play, *LOCAL, "-e", f"@{vars_two}")
    assert rc == 0, out
    bundle = tmp_path / "fleet" / "lab" / "demo"
    assert sorted(p.name for p in bundle.iterdir()) == ["00-configmap-one.yaml", "01-configmap-two.yaml", "fleet.yaml"]
    assert yaml.safe_load((bundle / "fleet.yaml").read_text()) == {
        "defaultNamespace": "demo",
        # every bundle is labelled for dependsOn selectors (plugin_utils/management.py)
        "labels": {"gpu-cluster.cps/bundle": "demo", "gpu-cluster.cps/cluster": "lab"},
        "helm": {"repo": "https://charts.example.org", "chart": "demo", "version": "1.2.3",
                 "releaseName": "demo", "values": {"replicas": 2}},
    }
    assert yaml.safe_load((bundle / "01-configmap-two.yaml").read_text()) == two[1]

    rc, out = playbook(play, *LOCAL, "-e", f"@{vars_two}")
    assert rc == 0, out
    assert recap_changed(out) == 0, out

    vars_one = tmp_path / "one.yml"
    vars_one.write_text(yaml.safe_dump({"fleet_dir": str(tmp_path / "fleet"), "demo_manifests": two[:1]}))
    rc, out = playbook(play, *LOCAL, "-e", f"@{vars_one}", "--check")
    assert rc == 0, out
    assert (bundle / "01-configmap-two.yaml").exists(), "check mode must not remove anything"
    rc, out = playbook(play, *LOCAL, "-e", f"@{vars_one}")
    assert rc == 0, out
    assert sorted(p.name for p in bundle.iterdir()) == ["00-configmap-one.yaml", "fleet.yaml"]


REMOVE = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      tasks:
        - ansible.builtin.include_role:
            name: cps.gpu_cluster.component_delivery
            tasks_from: remove
          vars:
            component_delivery_mode: "{{ mode }}"
            component_delivery_fleet_dir: "{{ fleet_dir }}"
            component_delivery_kubeconfig: "{{ kubeconfig | default('') }}"
            component_delivery_cluster: lab
            component_delivery_component: {name: demo, namespace: demo, chart: {release: demo}}
    """)


def test_a_switched_off_component_leaves_the_fleet_directory(tmp_path):
    """remove (Fleet): the bundle's YAML files go, so Fleet uninstalls it; the user's other files stay;
    --check touches nothing; a second run (or a run for a bundle never written) changes nothing."""
    deliver, remove = tmp_path / "deliver.yml", tmp_path / "remove.yml"
    deliver.write_text(DELIVER)
    remove.write_text(REMOVE)
    fleet = tmp_path / "fleet"
    rc, out = playbook(deliver, *LOCAL, "-e", f"fleet_dir={fleet}", "-e", '{"demo_manifests": []}')
    assert rc == 0, out
    bundle = fleet / "lab" / "demo"
    (bundle / "README.txt").write_text("the user's notes\n")
    rc, out = playbook(remove, *LOCAL, "-e", f"fleet_dir={fleet}", "-e", "mode=fleet", "--check")
    assert rc == 0, out
    assert (bundle / "fleet.yaml").exists(), "check mode must not remove anything"
    rc, out = playbook(remove, *LOCAL, "-e", f"fleet_dir={fleet}", "-e", "mode=fleet")
    assert rc == 0, out
    assert recap_changed(out) == 1, out
    assert sorted(p.name for p in bundle.iterdir()) == ["README.txt"]
    rc, out = playbook(remove, *LOCAL, "-e", f"fleet_dir={fleet}", "-e", "mode=fleet")
    assert rc == 0, out
    assert recap_changed(out) == 0, out
    rc, out = playbook(remove, *LOCAL, "-e", f"fleet_dir={tmp_path / 'empty'}", "-e", "mode=fleet")
    assert rc == 0, out
    assert not (tmp_path / "empty").exists()


def test_removing_without_a_reachable_cluster_says_why(tmp_path):
    """remove (direct): a cluster that does not answer fails with the API's reason, not a trace."""
    remove = tmp_path / "remove.yml"
    remove.write_text(REMOVE)
    rc, out = playbook(remove, *LOCAL, "-e", f"fleet_dir={tmp_path}", "-e", "mode=direct",
                       "-e", f"kubeconfig={unreachable_kubeconfig(tmp_path)}")
    assert rc != 0
    assert "Could not look up Helm release demo in namespace demo" in out and "Connection refused" in out, out
    assert "Traceback" not in out


def test_broken_component_fails_with_what_to_change(tmp_path):
    play = tmp_path / "deliver.yml"
    play.write_text(DELIVER.replace("version: 1.2.3", "version: latest"))
    rc, out = playbook(play, *LOCAL, "-e", f"fleet_dir={tmp_path}", "-e", "demo_manifests=[]")
    assert rc != 0
    assert "chart.version must be pinned" in out


def test_storage_phase_skips_without_a_cluster_in_a_lab():
    rc, out = playbook(REPO / "playbooks" / "storage.yml", "-i", CPU_ONLY, "--limit", "localhost",
                       "-e", '{"gpu_cluster_lab": true}')
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED storage:" in line]
    assert len(lines) == 1, out
    assert "kubeconfig /nonexistent/cpu-lab.yaml does not exist" in lines[0]


def test_storage_phase_fails_without_a_cluster_outside_a_lab():
    rc, out = playbook(REPO / "playbooks" / "storage.yml", "-i", CPU_ONLY, "--limit", "localhost")
    assert rc != 0, out
    assert "SKIPPED storage:" not in out
    assert "FAILED storage: kubeconfig /nonexistent/cpu-lab.yaml does not exist (run playbooks/k3s.yml" in out


def test_gpu_phase_skips_on_a_cpu_only_cluster():
    """No GPU workers is the user's choice: SKIPPED outside a lab too."""
    rc, out = playbook(REPO / "playbooks" / "gpu.yml", "-i", CPU_ONLY)
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED gpu:" in line]
    assert len(lines) == 1, out
    assert "no hosts in group gpu_workers" in lines[0]


def unreachable_kubeconfig(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        "users": [{"name": "x", "user": {"token": "t"}}]}))
    return kubeconfig


def test_gpu_phase_skips_without_a_reachable_api_in_a_lab(tmp_path):
    rc, out = playbook(REPO / "playbooks" / "gpu.yml", "-i", REPO / "inventories" / "homelab",
                       "-e", f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path)}", "-e", '{"gpu_cluster_lab": true}')
    assert rc == 0, out
    lines = [line for line in out.splitlines() if "SKIPPED gpu:" in line]
    assert len(lines) == 1, out
    assert "no Kubernetes API server answers at 127.0.0.1:1" in lines[0]


def test_gpu_phase_fails_without_a_reachable_api_outside_a_lab(tmp_path):
    rc, out = playbook(REPO / "playbooks" / "gpu.yml", "-i", REPO / "inventories" / "homelab",
                       "-e", f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path)}")
    assert rc != 0, out
    assert "SKIPPED gpu:" not in out
    assert "FAILED gpu: no Kubernetes API server answers at 127.0.0.1:1" in out
    assert "Deliver the NVIDIA GPU Operator" not in out


def test_driver_upgrade_skips_in_a_lab_and_fails_elsewhere_without_a_cluster(tmp_path):
    """playbooks/gpu_driver_upgrade.yml with every setting at its default: no reachable API server is
    SKIPPED in a lab, FAILED with the reason elsewhere; verify does not run after an upgrade that did not."""
    upgrade = REPO / "playbooks" / "gpu_driver_upgrade.yml"
    kubeconfig = unreachable_kubeconfig(tmp_path)
    rc, out = playbook(upgrade, "-i", REPO / "inventories" / "homelab", "-e", f"gpu_cluster_kubeconfig={kubeconfig}",
                       "-e", '{"gpu_cluster_lab": true}')
    assert rc == 0, out
    assert "SKIPPED gpu driver upgrade: no Kubernetes API server answers at 127.0.0.1:1" in out
    assert "ok: [wk-gpu1]" not in out and "unreachable=1" not in out, out  # verify's worker play did not run
    rc, out = playbook(upgrade, "-i", REPO / "inventories" / "homelab", "-e", f"gpu_cluster_kubeconfig={kubeconfig}")
    assert rc != 0, out
    assert "FAILED gpu driver upgrade: no Kubernetes API server answers at 127.0.0.1:1" in out


def test_driver_upgrade_under_fleet_writes_the_pinned_driver_and_its_upgrade_policy(tmp_path):
    """Fleet: the GPU Operator bundle carries the driver of versions.yml for the homelab's A100s and H100s
    and the node-by-node upgradePolicy; the inventory's version and parallelism reach it."""
    upgrade = REPO / "playbooks" / "gpu_driver_upgrade.yml"
    fleet = ("-i", REPO / "inventories" / "homelab", "-e", "gpu_cluster_delivery=fleet", "-e", f"gpu_cluster_fleet_dir={tmp_path}")
    rc, out = playbook(upgrade, *fleet)
    assert rc == 0, out
    driver = yaml.safe_load((tmp_path / "homelab" / "gpu-operator" / "fleet.yaml").read_text())["helm"]["values"]["driver"]
    pins = yaml.safe_load((REPO / "versions.yml").read_text())
    assert driver["version"] == str(pins["gpu_driver_version"]) and driver["enabled"] is True
    assert driver["upgradePolicy"]["maxParallelUpgrades"] == 1 and driver["upgradePolicy"]["autoUpgrade"] is True
    assert "every GPU model is Turing or newer" in out and "commit the Fleet bundle" in out
    rc, out = playbook(upgrade, *fleet, "-e", '{"gpu_cluster_gpu_driver_version": "580.95.05", '
                       '"gpu_cluster_gpu_driver_max_parallel_upgrades": 2}')
    assert rc == 0, out
    driver = yaml.safe_load((tmp_path / "homelab" / "gpu-operator" / "fleet.yaml").read_text())["helm"]["values"]["driver"]
    assert driver["version"] == "580.95.05" and driver["upgradePolicy"]["maxParallelUpgrades"] == 2
