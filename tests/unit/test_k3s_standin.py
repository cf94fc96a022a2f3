"""The molecule scenarios' stand-in k3s (molecule/shared/files/k3s-standin.py) refuses what k3s
refuses before it starts, and accepts the configurations the collection writes: the config.yaml of
each kind of node as k3s_node renders it (plugins/module_utils/k3s.node_config, to_nice_yaml as
the role's template), then one data row per rule it enforces."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.plugins.filter.core import to_nice_yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s, k3s_hardening

REPO = Path(__file__).resolve().parents[2]
SOURCE = (REPO / "molecule" / "shared" / "files" / "k3s-standin.py").read_text()
# the scenarios run the stand-in as the version versions.yml pins (and the minor before it)
PIN = yaml.safe_load((REPO / "versions.yml").read_text())["k3s_version"]
URL = "https://10.88.0.250:6443"
FULL = "K10" + "ab" * 32 + "::server:secret-0123456789"


def standin(tmp_path, version=PIN):
    path = tmp_path / "k3s"
    path.write_text(SOURCE.replace("@K3S_VERSION@", version))
    path.chmod(0o755)
    return path


def run(tmp_path, role, config, *args, env=None, version=PIN):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(config if isinstance(config, str) else to_nice_yaml(config, indent=2, sort_keys=True))
    environ = dict(os.environ, K3S_STANDIN_CHECK_ONLY="1", K3S_STANDIN_LOG=str(tmp_path / "calls.log"))
    environ.pop("K3S_TOKEN", None)
    environ.pop("K3S_URL", None)
    environ.update(env or {})
    return subprocess.run([sys.executable, str(standin(tmp_path, version)), role, "--config", str(cfg), *args],
                          capture_output=True, text=True, env=environ, check=False, timeout=30)


def cis(role):
    return k3s_hardening.cis_config(role, admission_config_file="/etc/rancher/k3s/admission.yaml",
                                    audit_policy_file="/etc/rancher/k3s/audit.yaml",
                                    audit_log_path="/var/lib/rancher/k3s/server/logs/audit.log")


ROLE_CONFIGS = {
    "first server": ("server", dict(role="server", node_ip="10.88.0.11", flannel_iface="eth0", cluster_init=True,
                                    tls_san=["10.88.0.250", "cp1"], cluster_cidr="10.42.0.0/16",
                                    service_cidr="10.43.0.0/16", node_name="cp1", cis=cis("server"),
                                    extra={"etcd-s3": True, "etcd-s3-bucket": "b", "etcd-s3-secret-key": "s"})),
    "joining server": ("server", dict(role="server", node_ip="10.88.0.12", flannel_iface="eth0", server_url=URL,
                                      tls_san=["10.88.0.250"], cluster_cidr="10.42.0.0/16",
                                      service_cidr="10.43.0.0/16", node_name="cp2")),
    "gpu worker": ("agent", dict(role="agent", node_ip="10.88.0.21", flannel_iface="eth0", server_url=URL,
                                 labels=["gpu=true", "nvidia.com/gpu.pool=shared"],
                                 taints=["nvidia.com/gpu=true:NoSchedule"], node_name="wk-gpu1", cis=cis("agent"))),
    "infra node": ("agent", dict(role="agent", node_ip="10.88.0.31", flannel_iface="eth0", server_url=URL,
                                 taints=["node-role.kubernetes.io/infra=true:NoSchedule"], node_name="infra1")),
}


@pytest.mark.parametrize("kind", sorted(ROLE_CONFIGS))
def test_the_configs_the_collection_writes_are_accepted(tmp_path, kind):
    role, settings = ROLE_CONFIGS[kind]
    settings = dict(settings)
    settings.pop("role")
    config = k3s.node_config(role, **settings)
    done = run(tmp_path, role, config, env={"K3S_TOKEN": FULL})
    assert done.returncode == 0, done.stderr
    assert "config accepted" in done.stdout


AGENT = {"server": URL, "node-ip": "10.88.0.31"}


@pytest.mark.parametrize("role, config, env, needle", [
    # the form infra nodes were written with before k3s_node_api_labels: the kubelet refuses it
    ("agent", {**AGENT, "node-label": ["node-role.kubernetes.io/infra=true"]}, {"K3S_TOKEN": FULL},
     "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: ['node-role.kubernetes.io/infra']"),
    ("agent", {**AGENT, "node-label": ["kubernetes.io/role=gpu"]}, {"K3S_TOKEN": FULL}, "--node-labels"),
    ("agent", {**AGENT, "node-label": ["gpu"]}, {"K3S_TOKEN": FULL}, "invalid node label 'gpu'"),
    ("agent", {**AGENT, "node-label": ["gpu=" + "x" * 64]}, {"K3S_TOKEN": FULL}, "invalid node label"),
    ("agent", {**AGENT, "node-taint": ["nvidia.com/gpu=true"]}, {"K3S_TOKEN": FULL}, "unsupported taint effect"),
    ("agent", {**AGENT, "node-taint": ["nvidia.com/gpu=true:NoScheduel"]}, {"K3S_TOKEN": FULL}, "unsupported taint effect"),
    ("agent", {**AGENT, "node-taint": ["bad key=x:NoSchedule"]}, {"K3S_TOKEN": FULL}, "invalid taint spec"),
    ("agent", {**AGENT, "tls-san": ["x"]}, {"K3S_TOKEN": FULL}, "unknown flag(s) ['tls-san']"),
    ("server", {"cluster-init": True, "node-labels": ["gpu=true"]}, {}, "unknown flag(s) ['node-labels']"),
    ("agent", {"node-ip": "10.88.0.31"}, {"K3S_TOKEN": FULL}, "--server is required"),
    ("agent", AGENT, {}, "--token is required"),
    ("agent", {**AGENT, "server": "10.88.0.250:6443"}, {"K3S_TOKEN": FULL}, "must begin with https://"),
    ("agent", {**AGENT, "server": "http://10.88.0.250:6443"}, {"K3S_TOKEN": FULL}, "must begin with https://"),
    ("agent", AGENT, {"K3S_TOKEN": "K10abc::server:x"}, "failed to normalize server token"),
    ("agent", AGENT, {"K3S_TOKEN": "secret with space"}, "whitespace"),
    ("server", {"cluster-init": True, "server": URL}, {"K3S_TOKEN": FULL}, "cluster-init and server are exclusive"),
    ("server", {"server": URL}, {}, "--token is required when joining a server"),
    ("server", {"cluster-reset-restore-path": "/var/lib/rancher/k3s/server/db/snapshots/s"}, {},
     "--cluster-reset required with --cluster-reset-restore-path"),
    ("server", "cluster-init: true\nkubelet:\n  arg: x\n", {}, "nested maps are not k3s configuration"),
])
def test_what_k3s_refuses_is_refused(tmp_path, role, config, env, needle):
    done = run(tmp_path, role, config, env=env)
    assert done.returncode == 1, done.stdout
    assert needle in done.stderr


def test_restore_flags_need_cluster_reset_and_an_existing_snapshot(tmp_path):
    snapshot = tmp_path / "snap"
    assert run(tmp_path, "server", {"cluster-init": True}, f"--cluster-reset-restore-path={snapshot}").returncode == 1
    environ = dict(os.environ, K3S_STANDIN_LOG=str(tmp_path / "calls.log"))
    (tmp_path / "config.yaml").write_text("cluster-init: true\n")
    args = [sys.executable, str(standin(tmp_path)), "server", "--config", str(tmp_path / "config.yaml"),
            "--cluster-reset", f"--cluster-reset-restore-path={snapshot}"]
    missing = subprocess.run(args, capture_output=True, text=True, env=environ, check=False, timeout=30)
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_the_stand_in_claims_only_versions_whose_keys_it_knows(tmp_path):
    done = run(tmp_path, "server", {"cluster-init": True}, version="v1.40.0+k3s1")
    assert done.returncode == 1 and "update its key list" in done.stderr
    version = subprocess.run([sys.executable, str(standin(tmp_path)), "--version"], capture_output=True, text=True,
                             env=dict(os.environ, K3S_STANDIN_LOG=str(tmp_path / "calls.log")), check=True)
    assert version.stdout.split()[2] == PIN
