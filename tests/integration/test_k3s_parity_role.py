"""k3s_node's parity pieces (issue 16) for real on localhost, into a temporary directory:
registries.yaml (0600, content, restart marker, removal only of our own file), the proxy lines
of the unit's env file (rendered with the role's vars and template), and the kubeconfig named
after the cluster and merged into an existing ~/.kube/config (others kept, backup, 0600,
idempotent). The tasks run as in the role; only the file paths are pointed at tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "kubeconfig"
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
SECRET = "registry-pass-5f1c0e"

INVENTORY = """
[k3s_servers]
srv1 ansible_connection=local ansible_host=10.0.0.11
[k3s_agents]
wk1 ansible_connection=local ansible_host=10.0.0.21 gpu_cluster_node_ip=10.0.0.31
[k3s_cluster:children]
k3s_servers
k3s_agents
"""


def run(tmp_path, play, extra, *args):
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(play)
    extra = dict(extra, ansible_python_interpreter=sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_DIFF_ALWAYS="true")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-v", "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"),
         "-e", json.dumps(extra), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def task_result(output, name):
    """The first result line after the task header `name` (changed/ok/skipping ...)."""
    block = output.split(name + "]", 1)[1]
    return next(line for line in block.splitlines() if line.startswith(("changed", "ok", "skipping", "fatal")))


def recap_changed(output):
    line = [row for row in output.splitlines() if row.startswith("srv1 ")][-1]
    return int(line.split("changed=")[1].split()[0])


REGISTRIES_PLAY = """
- hosts: srv1
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: registries.yml
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: restart_marker.yml
      vars:
        __k3s_node_config_file: {}
        __k3s_node_env_file: {}
        __k3s_node_unit_file: {}
"""

REGISTRIES = {
    "mirrors": {"docker.io": {"endpoint": ["https://mirror.lan:5000"]}},
    "configs": {"mirror.lan:5000": {"auth": {"username": "pull", "password": SECRET},
                                    "tls": {"ca_file": "/etc/ssl/mirror-ca.pem"}}},
}


def test_registries_yaml_written_private_marked_and_removed(tmp_path):
    target = tmp_path / "registries.yaml"
    marker = tmp_path / "restart-pending"
    extra = {"__k3s_node_registries_file": str(target), "__k3s_node_restart_marker": str(marker),
             "k3s_node_start": False, "k3s_node_registries": REGISTRIES}
    rc, output = run(tmp_path, REGISTRIES_PLAY, extra)
    assert rc == 0, output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    text = target.read_text()
    assert "# cps.gpu_cluster k3s_node: written from k3s_node_registries" in text
    assert yaml.safe_load(text) == REGISTRIES
    assert SECRET not in output  # no_log and no diff, even at -v with diffs on
    # the change went through the restart marker; the handler (k3s not started) then forgets it
    assert task_result(output, "Mark a k3s restart as pending").startswith("changed: [srv1]"), output
    assert not marker.exists()

    rc, output = run(tmp_path, REGISTRIES_PLAY, extra)
    assert rc == 0, output
    assert recap_changed(output) == 0, output  # idempotent: nothing rewritten, no restart
    assert task_result(output, "Mark a k3s restart as pending").startswith("skipping"), output

    rc, output = run(tmp_path, REGISTRIES_PLAY, dict(extra, k3s_node_registries={}))
    assert rc == 0, output
    assert not target.exists()  # ours, so removed when the variable is emptied


def test_registries_yaml_written_by_hand_is_left_alone(tmp_path):
    target = tmp_path / "registries.yaml"
    target.write_text("mirrors:\n  docker.io:\n    endpoint: [https://hand.lan]\n")
    extra = {"__k3s_node_registries_file": str(target), "__k3s_node_restart_marker": str(tmp_path / "m"),
             "k3s_node_start": False}
    rc, output = run(tmp_path, REGISTRIES_PLAY, extra)
    assert rc == 0, output
    assert target.read_text().startswith("mirrors:")


def test_bad_registries_fail_before_anything_is_written(tmp_path):
    target = tmp_path / "registries.yaml"
    extra = {"__k3s_node_registries_file": str(target), "__k3s_node_restart_marker": str(tmp_path / "m"),
             "k3s_node_start": False,
             "k3s_node_registries": {"configs": {"mirror.lan": {"auth": {"username": "u", "password": SECRET, "auth": "x"}}}}}
    rc, output = run(tmp_path, REGISTRIES_PLAY, extra)
    assert rc != 0
    assert "auth must hold exactly one of" in output
    assert SECRET not in output and not target.exists()


ENV_PLAY = """
- hosts: srv1
  gather_facts: false
  tasks:
    - ansible.builtin.include_vars: {file: "{{ playbook_dir }}/defaults.yml"}
    - ansible.builtin.include_vars: {file: "{{ playbook_dir }}/vars.yml"}
    - ansible.builtin.template:
        src: "{{ playbook_dir }}/k3s.env.j2"
        dest: "{{ playbook_dir }}/k3s.service.env"
        mode: "0600"
      vars:
        __k3s_node_token: "0123456789abcdef0123456789abcdef"
"""


def render_env(tmp_path, extra):
    role = REPO / "roles" / "k3s_node"
    shutil.copy(role / "defaults" / "main.yml", tmp_path / "defaults.yml")
    shutil.copy(role / "vars" / "main.yml", tmp_path / "vars.yml")
    shutil.copy(role / "templates" / "etc" / "systemd" / "system" / "k3s.env.j2", tmp_path / "k3s.env.j2")
    rc, output = run(tmp_path, ENV_PLAY, extra)
    assert rc == 0, output
    lines = (tmp_path / "k3s.service.env").read_text().splitlines()
    return [line for line in lines if not line.startswith("#")]


def test_env_file_holds_the_proxy_for_k3s_and_containerd(tmp_path):
    lines = render_env(tmp_path, {"gpu_cluster_http_proxy": "http://proxy.lan:3128",
                                  "gpu_cluster_https_proxy": "http://proxy.lan:3129",
                                  "gpu_cluster_no_proxy": [".lan"], "gpu_cluster_api_vip": "10.0.0.100"})
    no_proxy = ".lan,localhost,127.0.0.1,10.42.0.0/16,10.43.0.0/16,10.0.0.31,10.0.0.11,10.0.0.21,10.0.0.100,.svc,.cluster.local"
    assert lines == [
        "K3S_TOKEN=0123456789abcdef0123456789abcdef",
        "HTTP_PROXY=http://proxy.lan:3128", "HTTPS_PROXY=http://proxy.lan:3129", "NO_PROXY=" + no_proxy,
        "CONTAINERD_HTTP_PROXY=http://proxy.lan:3128", "CONTAINERD_HTTPS_PROXY=http://proxy.lan:3129",
        "CONTAINERD_NO_PROXY=" + no_proxy,
    ]


def test_env_file_without_a_proxy_holds_only_the_token(tmp_path):
    assert render_env(tmp_path, {"gpu_cluster_no_proxy": [".lan"]}) == ["K3S_TOKEN=0123456789abcdef0123456789abcdef"]


KUBECONFIG_PLAY = """
- hosts: srv1
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: kubeconfig.yml
"""


def test_kubeconfig_named_after_the_cluster_and_merged(tmp_path):
    home = tmp_path / "home" / ".kube"
    home.mkdir(parents=True)
    merged_path = home / "config"
    shutil.copy(FIXTURES / "existing-config.yaml", merged_path)
    merged_path.chmod(0o644)
    out = tmp_path / "state" / "kubeconfig"
    extra = {"__k3s_node_admin_kubeconfig_file": str(FIXTURES / "k3s.yaml"), "k3s_node_kubeconfig": str(out),
             "gpu_cluster_name": "homelab", "gpu_cluster_api_vip": "10.0.0.100",
             "k3s_node_kubeconfig_merge": True, "k3s_node_kubeconfig_merge_path": str(merged_path)}
    rc, output = run(tmp_path, KUBECONFIG_PLAY, extra)
    assert rc == 0, output
    ours = yaml.safe_load(out.read_text())
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert ours["current-context"] == "homelab"
    assert [c["name"] for c in ours["clusters"]] == ["homelab"] and [u["name"] for u in ours["users"]] == ["homelab"]
    assert ours["contexts"][0] == {"name": "homelab", "context": {"cluster": "homelab", "user": "homelab"}}
    assert ours["clusters"][0]["cluster"]["server"] == "https://10.0.0.100:6443"
    assert "client-key-data" not in output  # no_log

    merged = yaml.safe_load(merged_path.read_text())
    assert stat.S_IMODE(merged_path.stat().st_mode) == 0o600
    assert [c["name"] for c in merged["contexts"]] == ["kind-dev", "homelab"]
    assert merged["current-context"] == "kind-dev"
    assert merged["users"][1] == ours["users"][0]
    backups = [p for p in home.iterdir() if p.name.startswith("config.") and p.name != "config"]
    assert len(backups) == 1 and "old-token-of-a-rebuilt-cluster" in backups[0].read_text()

    rc, output = run(tmp_path, KUBECONFIG_PLAY, extra)
    assert rc == 0, output
    assert recap_changed(output) == 0, output
    assert len([p for p in home.iterdir() if p.name != "config"]) == 1


def test_kubeconfig_without_vip_points_at_the_server_and_merge_creates_the_file(tmp_path):
    merged_path = tmp_path / "newhome" / ".kube" / "config"
    out = tmp_path / "kubeconfig"
    extra = {"__k3s_node_admin_kubeconfig_file": str(FIXTURES / "k3s.yaml"), "k3s_node_kubeconfig": str(out),
             "k3s_node_kubeconfig_merge": True, "k3s_node_kubeconfig_merge_path": str(merged_path)}
    rc, output = run(tmp_path, KUBECONFIG_PLAY, extra)
    assert rc == 0, output
    ours = yaml.safe_load(out.read_text())
    assert ours["current-context"] == "gpu-cluster"  # no gpu_cluster_name: the default
    assert ours["clusters"][0]["cluster"]["server"] == "https://10.0.0.11:6443"
    assert yaml.safe_load(merged_path.read_text())["current-context"] == "gpu-cluster"
    assert stat.S_IMODE(merged_path.stat().st_mode) == 0o600


def run_remove_node(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "playbooks/remove_node.yml", "-i", str(REPO / "inventories" / "homelab"), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_remove_node_refuses_to_shrink_etcd_below_three_before_touching_a_host():
    rc, output = run_remove_node("-e", "remove_node=cp3")
    assert rc != 0
    assert "removing cp3 leaves 2 server(s)" in output and "remove_node_allow_small_quorum=true" in output
    assert "nothing was changed" in output
    assert "Cordon and drain" not in output  # the homelab hosts are never contacted


def test_remove_node_guard_runs_whatever_the_limit():
    # --limit cp3 left the guard play (on localhost) out: the removal went straight to the drain
    rc, output = run_remove_node("-e", "remove_node=cp3", "--limit", "cp3")
    assert rc != 0
    assert "removing cp3 leaves 2 server(s)" in output and "nothing was changed" in output
    assert "Cordon and drain" not in output


def test_remove_node_needs_a_name_of_the_cluster():
    rc, output = run_remove_node()
    assert rc != 0 and "Name the node to remove: -e remove_node=<inventory name>" in output
    rc, output = run_remove_node("-e", "remove_node=pve1")
    assert rc != 0 and "pve1 is not a host of k3s_cluster" in output


RENDER_PLAY = """
- hosts: k3s_cluster
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cps.gpu_cluster.k3s_node
        tasks_from: render_node.yml
      vars:
        k3s_node_render_dir: "{{ playbook_dir }}/render/{{ inventory_hostname }}"
"""


def test_etcd_s3_keys_in_the_servers_config_only_and_masked_for_review(tmp_path):
    s3 = {"endpoint": "minio.lan:9000", "bucket": "k3s-snapshots", "access_key": "AKIAEXAMPLE",
          "secret_key": "s3-secret-9b1e", "insecure": True}
    extra = {"k3s_node_etcd_s3": s3, "k3s_node_flannel_iface": "eth0", "gpu_cluster_api_vip": "10.0.0.100",
             "k3s_node_config_extra": {"disable": ["traefik", "servicelb"]}}
    rc, output = run(tmp_path, RENDER_PLAY, extra)
    assert rc == 0, output
    server = yaml.safe_load((tmp_path / "render" / "srv1" / "config.yaml").read_text())
    agent = yaml.safe_load((tmp_path / "render" / "wk1" / "config.yaml").read_text())
    assert server["etcd-s3"] is True and server["etcd-s3-endpoint"] == "minio.lan:9000"
    assert server["etcd-s3-bucket"] == "k3s-snapshots" and server["etcd-s3-insecure"] is True
    assert server["etcd-s3-secret-key"] == "<masked>" and server["etcd-s3-access-key"] == "<masked>"
    assert server["disable"] == ["traefik", "servicelb"]
    assert not [key for key in agent if key.startswith("etcd-s3")]
    assert "s3-secret-9b1e" not in output


def test_bad_etcd_s3_fails_saying_what_to_change(tmp_path):
    extra = {"k3s_node_etcd_s3": {"endpoint": "https://minio.lan", "bucket": "k3s-snapshots"},
             "k3s_node_flannel_iface": "eth0"}
    rc, output = run(tmp_path, RENDER_PLAY, extra)
    assert rc != 0
    assert "without a scheme" in output


SPEC_PLAY = """
- hosts: srv1
  gather_facts: false
  tasks:
    - ansible.builtin.validate_argument_spec:
        argument_spec: "{{ (lookup('ansible.builtin.file', playbook_dir ~ '/argument_specs.yml') | from_yaml).argument_specs.main.options }}"
        provided_arguments: "{{ provided }}"
"""


def test_main_argument_spec_takes_the_new_variables_and_hides_secrets(tmp_path):
    shutil.copy(REPO / "roles" / "k3s_node" / "meta" / "argument_specs.yml", tmp_path / "argument_specs.yml")
    provided = {"k3s_node_registries": REGISTRIES, "k3s_node_http_proxy": "http://proxy.lan:3128",
                "k3s_node_https_proxy": "", "k3s_node_no_proxy": [".lan"], "k3s_node_kubeconfig_name": "homelab",
                "k3s_node_kubeconfig_merge": True, "k3s_node_kubeconfig_merge_path": "/tmp/x",
                "k3s_node_etcd_s3": {"bucket": "snaps", "secret_key": "spec-secret-77"}}
    rc, output = run(tmp_path, SPEC_PLAY, {"provided": provided})
    assert rc == 0, output
    assert SECRET not in output and "spec-secret-77" not in output
    rc, output = run(tmp_path, SPEC_PLAY, {"provided": dict(provided, k3s_node_registries=["docker.io"],
                                                            k3s_node_kubeconfig_merge="maybe")})
    assert rc != 0
    assert "k3s_node_registries" in output and "k3s_node_kubeconfig_merge" in output
