"""docs/migrating.md: scripts/convert-k3s-ansible.py turns k3s-ansible inventories into ours, and the
result passes preflight (issue 16, "Done when"). The k3s-io sample is upstream's own
(tests/fixtures/SOURCES.md); the techno-tim inventory is built here in that project's layout."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "convert-k3s-ansible.py"
SAMPLE = REPO / "tests" / "fixtures" / "migrating" / "k3s-ansible-inventory-sample.yml"
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
           ANSIBLE_NOCOLOR="1", PATH="{}:{}".format(Path(ANSIBLE_PLAYBOOK).parent, os.environ.get("PATH", "")))

spec = importlib.util.spec_from_file_location("convert_k3s_ansible", SCRIPT)
convert = importlib.util.module_from_spec(spec)
spec.loader.exec_module(convert)


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], env=ENV, capture_output=True, text=True, timeout=120, check=False)


def preflight(inventory):
    return subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/preflight.yml", "-i", str(inventory)], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(("args", "config"), [
    ("", {}),
    ("--disable traefik --disable servicelb", {"disable": ["traefik", "servicelb"]}),
    ("--tls-san=api.lan --node-label a=b --write-kubeconfig-mode 644", {"tls-san": "api.lan", "node-label": "a=b", "write-kubeconfig-mode": "644"}),
    ("--flannel-backend=none --disable-network-policy", {"flannel-backend": "none", "disable-network-policy": True}),
])
def test_args_to_config(args, config):
    assert convert.args_to_config(args) == config


def test_args_that_are_not_flags_are_refused():
    with pytest.raises(convert.ConversionError, match="every argument must be a --flag"):
        convert.args_to_config("traefik --disable x")


def test_k3s_io_sample_converts_and_passes_preflight(tmp_path):
    out = tmp_path / "converted"
    refused = run(SAMPLE, out)
    assert refused.returncode == 1 and "pass --vip with a free address of the node network" in refused.stderr
    done = run(SAMPLE, out, "--vip", "192.16.35.100", "--name", "legacy")
    assert done.returncode == 0, done.stderr
    assert "the source's token is not copied: put it in an ansible-vault file as k3s_token" in done.stderr
    hosts = yaml.safe_load((out / "hosts.yml").read_text())["all"]["children"]["k3s_cluster"]["children"]
    assert hosts["k3s_servers"]["hosts"] == {"server1": {"ansible_host": "192.16.35.11"}}
    assert hosts["k3s_agents"]["children"]["app_nodes"]["hosts"] == {"agent1": {"ansible_host": "192.16.35.12"},
                                                                     "agent2": {"ansible_host": "192.16.35.13"}}
    main = yaml.safe_load((out / "group_vars" / "all" / "main.yml").read_text())
    assert main["gpu_cluster_k3s_version"] == "v1.31.12+k3s1" and main["gpu_cluster_api_vip"] == "192.16.35.100"
    assert "changeme" not in "".join(p.read_text() for p in out.rglob("*.yml"))
    checked = preflight(out)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "Inventory OK: cluster legacy, 1 server(s), 2 agent(s) (0 GPU worker(s)), 0 Proxmox host(s)" in checked.stdout


def test_techno_tim_layout_converts_and_passes_preflight(tmp_path):
    source = tmp_path / "inventory" / "my-cluster"
    (source / "group_vars").mkdir(parents=True)
    (source / "hosts.ini").write_text("[master]\n192.168.30.38\n192.168.30.39\n192.168.30.40\n\n[node]\n192.168.30.41\n"
                                      "192.168.30.42\n\n[k3s_cluster:children]\nmaster\nnode\n")
    (source / "group_vars" / "all.yml").write_text(yaml.safe_dump({
        "k3s_version": "v1.36.4+k3s1", "ansible_user": "ansibleuser", "flannel_iface": "eth0",
        "apiserver_endpoint": "192.168.30.222", "k3s_token": "some-SUPER-DEDEUPER-secret-password",
        "extra_server_args": "--node-taint node-role.kubernetes.io/master=true:NoSchedule --tls-san 192.168.30.222 --disable servicelb --disable traefik",
        "extra_agent_args": "", "metal_lb_ip_range": "192.168.30.80-192.168.30.90", "system_timezone": "Etc/UTC"}))
    out = tmp_path / "converted"
    done = run(source / "hosts.ini", out, "--name", "tim")
    assert done.returncode == 0, done.stderr
    assert "not converted (set the cps.gpu_cluster equivalent by hand, docs/migrating.md): metal_lb_ip_range, system_timezone" in done.stderr
    servers = yaml.safe_load((out / "group_vars" / "k3s_servers.yml").read_text())["k3s_node_config_extra"]
    assert servers == {"node-taint": "node-role.kubernetes.io/master=true:NoSchedule", "tls-san": "192.168.30.222",
                       "disable": ["servicelb", "traefik"]}
    assert yaml.safe_load((out / "group_vars" / "k3s_cluster.yml").read_text()) == {"k3s_node_flannel_iface": "eth0"}
    assert not (out / "group_vars" / "k3s_agents.yml").exists()
    main = yaml.safe_load((out / "group_vars" / "all" / "main.yml").read_text())
    assert main["gpu_cluster_api_vip"] == "192.168.30.222"
    checked = preflight(out)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "Inventory OK: cluster tim, 3 server(s), 2 agent(s)" in checked.stdout


def test_refuses_a_non_empty_output_and_a_source_without_servers(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("")
    done = run(SAMPLE, tmp_path / "out", "--vip", "192.16.35.100")
    assert done.returncode == 1 and "exists and is not empty" in done.stderr
    (tmp_path / "empty.ini").write_text("[other]\nh1\n")
    done = run(tmp_path / "empty.ini", tmp_path / "out2")
    assert done.returncode == 1 and "no servers: the source has no host in a group named server or master" in done.stderr
