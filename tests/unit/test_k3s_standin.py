"""The molecule scenarios' stand-in k3s (molecule/shared/files/k3s-standin.py) refuses what k3s
refuses before it starts, and accepts the configurations the collection writes: the config.yaml of
each kind of node as k3s_node renders it (plugins/module_utils/k3s.node_config, to_nice_yaml as
the role's template), then one data row per rule it enforces."""

import hashlib
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
    missing = call(tmp_path, "server", "--cluster-reset", f"--cluster-reset-restore-path={snapshot}",
                   config={"cluster-init": True}, env={"K3S_TOKEN": "0123456789abcdef0123456789abcdef"})
    # pkg/etcd/etcd.go (Reset)
    assert missing.returncode == 1 and "etcd: snapshot path does not exist" in missing.stderr


def test_the_stand_in_claims_only_versions_whose_keys_it_knows(tmp_path):
    done = run(tmp_path, "server", {"cluster-init": True}, version="v1.40.0+k3s1")
    assert done.returncode == 1 and "update its key list" in done.stderr
    version = subprocess.run([sys.executable, str(standin(tmp_path)), "--version"], capture_output=True, text=True,
                             env=dict(os.environ, K3S_STANDIN_LOG=str(tmp_path / "calls.log")), check=True)
    assert version.stdout.split()[2] == PIN


# The restore rules (issue 42). Each row: what the real k3s refuses, and where (k3s-io/k3s):
#   pkg/cli/server/server.go, run(): --cluster-reset while a server URL is set; a restore without a
#     token when <data-dir>/server/token does not exist;
#   pkg/cluster/storage.go, getBootstrapKeyFromStorage(): data (restored or kept) encrypted with another token;
#   pkg/etcd/etcd.go, Reset(): with etcd S3 on, the restore path is an object key downloaded from the bucket;
#   pkg/cluster/managed.go, start(): a reset without a restore path once db/reset-flag exists, and the
#     flag removed by the next normal start.
TOKEN = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


def call(tmp_path, *args, config=None, env=None, check_only=False):
    cfg = tmp_path / "config.yaml"
    base = {"data-dir": str(tmp_path / "data")}
    base.update(config or {})
    cfg.write_text(to_nice_yaml(base, indent=2, sort_keys=True))
    environ = dict(os.environ, K3S_STANDIN_LOG=str(tmp_path / "calls.log"), K3S_STANDIN_S3_ROOT=str(tmp_path / "s3"))
    for name in ("K3S_TOKEN", "K3S_URL", "HTTPS_PROXY", "https_proxy", "K3S_STANDIN_CHECK_ONLY"):
        environ.pop(name, None)
    if check_only:
        environ["K3S_STANDIN_CHECK_ONLY"] = "1"
    environ.update(env or {})
    command, rest = args[0], args[1:]
    return subprocess.run([sys.executable, str(standin(tmp_path)), command, "--config", str(cfg), *rest],
                          capture_output=True, text=True, env=environ, check=False, timeout=30)


def data_with_snapshot(tmp_path, token=TOKEN):
    """A server's data created with `token` (what its first start leaves), and a snapshot of it."""
    db = tmp_path / "data" / "server" / "db"
    (db / "etcd").mkdir(parents=True)
    (db / "etcd" / "standin-bootstrap").write_text(hashlib.sha256(token.encode()).hexdigest() + "\n")
    saved = call(tmp_path, "etcd-snapshot", "save", "--name", "before", config={"node-name": "cp1"})
    assert saved.returncode == 0, saved.stderr
    (snap,) = (db / "snapshots").glob("before-cp1-*")
    return db, snap


def test_a_reset_on_a_server_that_joins_another_is_refused(tmp_path):
    db, snap = data_with_snapshot(tmp_path)
    args = ("server", "--cluster-reset", f"--cluster-reset-restore-path={snap}")
    done = call(tmp_path, *args, config={"server": URL}, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 1
    assert "cannot perform cluster-reset while server URL is set" in done.stderr
    # the same server with the URL cleared by a drop-in (config.yaml.d, later files win) resets
    dropins = tmp_path / "config.yaml.d"
    dropins.mkdir()
    (dropins / "90-restore.yaml").write_text('server: ""\n')
    done = call(tmp_path, *args, config={"server": URL}, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert (db / "reset-flag").exists()


def test_a_restore_needs_the_token_the_snapshot_was_taken_with(tmp_path):
    db, snap = data_with_snapshot(tmp_path)
    args = ("server", "--cluster-reset", f"--cluster-reset-restore-path={snap}")
    done = call(tmp_path, *args)
    assert done.returncode == 1 and "server/token does not exist, please pass --token" in done.stderr
    done = call(tmp_path, *args, env={"K3S_TOKEN": OTHER})
    assert done.returncode == 1
    assert "bootstrap data already found and encrypted with different token" in done.stderr
    done = call(tmp_path, *args, env={"K3S_TOKEN": "K10" + "ab" * 32 + "::server:" + TOKEN})
    assert done.returncode == 0, done.stderr
    assert "restart without --cluster-reset" in done.stdout
    assert list(db.glob("etcd-old-*"))  # the data that was there is kept aside, as k3s keeps it


def test_data_encrypted_with_another_token_does_not_start(tmp_path):
    data_with_snapshot(tmp_path)
    ready = call(tmp_path, "kubectl", "get", "--raw", "/readyz/etcd", env={"K3S_TOKEN": OTHER})
    assert ready.returncode == 1
    ready = call(tmp_path, "kubectl", "get", "--raw", "/readyz/etcd", env={"K3S_TOKEN": TOKEN})
    assert ready.returncode == 0 and ready.stdout.strip() == "ok"


def test_a_file_that_is_no_snapshot_is_refused(tmp_path):
    fake = tmp_path / "fake"
    fake.write_text("snapshot bytes\n")
    done = call(tmp_path, "server", "--cluster-reset", f"--cluster-reset-restore-path={fake}", env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 1 and "integrity check failed" in done.stderr


def test_with_etcd_s3_on_the_restore_path_is_a_key_in_the_bucket(tmp_path):
    db, snap = data_with_snapshot(tmp_path)
    s3 = {"etcd-s3": True, "etcd-s3-bucket": "backups", "etcd-s3-folder": "k3s"}
    local = ("server", "--cluster-reset", f"--cluster-reset-restore-path={snap}")
    done = call(tmp_path, *local, config=s3, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 1 and "The specified key does not exist" in done.stderr
    # a local snapshot restores with S3 switched off for the reset (k3s docs: --etcd-s3=false)
    done = call(tmp_path, *local, "--etcd-s3=false", config=s3, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    # a key in the bucket is downloaded; behind a proxy only with the proxy set
    bucket = tmp_path / "s3" / "backups" / "k3s"
    bucket.mkdir(parents=True)
    (bucket / "remote-snap").write_bytes(snap.read_bytes())
    (tmp_path / "s3" / ".needs-proxy").write_text("")
    remote = ("server", "--cluster-reset", "--cluster-reset-restore-path=remote-snap")
    done = call(tmp_path, *remote, config=s3, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 1 and "only through the proxy" in done.stderr
    done = call(tmp_path, *remote, config={**s3, "etcd-s3-proxy": "http://proxy:3128"}, env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert (db / "snapshots" / "remote-snap").exists()


def test_the_reset_flag_refuses_a_second_plain_reset_and_a_start_removes_it(tmp_path):
    _db, snap = data_with_snapshot(tmp_path)
    assert call(tmp_path, "server", "--cluster-reset", env={"K3S_TOKEN": TOKEN}).returncode == 0
    again = call(tmp_path, "server", "--cluster-reset", env={"K3S_TOKEN": TOKEN})
    assert again.returncode == 1 and "was previously reset" in again.stderr
    # a restore from a snapshot does not look at the flag (managed.go: "don't check the reset-flag")
    done = call(tmp_path, "server", "--cluster-reset", f"--cluster-reset-restore-path={snap}", env={"K3S_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr


def test_prune_keeps_the_newest_snapshots_of_a_name(tmp_path):
    db, _snap = data_with_snapshot(tmp_path)
    for age, name in enumerate(["pre-upgrade-a", "pre-upgrade-b", "pre-upgrade-c", "other-x"]):
        path = db / "snapshots" / name
        path.write_text("k3s-standin-snapshot bootstrap=x\n")
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    done = call(tmp_path, "etcd-snapshot", "prune", "--name", "pre-upgrade", "--snapshot-retention", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (db / "snapshots").glob("*-*") if not p.name.startswith("before")) == [
        "other-x", "pre-upgrade-b", "pre-upgrade-c"]


def test_a_token_file_on_the_command_line_opens_the_data_once_server_token_exists(tmp_path):
    """The collection's reset passes --token-file (never the token in argv). k3s reads the file into the
    server's token, but its restore check looks only at --token and <data-dir>/server/token
    (pkg/cli/server/server.go), so the playbook keeps server/token too."""
    db, snap = data_with_snapshot(tmp_path)
    token_file = tmp_path / "restore-token"
    token_file.write_text(TOKEN + "\n")
    args = ("server", "--cluster-reset", f"--token-file={token_file}", f"--cluster-reset-restore-path={snap}")
    done = call(tmp_path, *args)
    assert done.returncode == 1 and "server/token does not exist" in done.stderr
    (db.parent / "token").write_text(TOKEN + "\n")
    done = call(tmp_path, *args)
    assert done.returncode == 0, done.stderr
