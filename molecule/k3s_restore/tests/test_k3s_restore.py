"""etcd restores a real k3s accepts (issue 42), with ansible-playbook (playbooks/etcd_snapshot.yml and
k3s.yml) against three servers k3s.yml installed with the stand-in release of the pinned k3s (prepare.yml;
the stand-in binary checks each config and each reset as k3s does, cites the k3s source it mirrors, and logs
its calls to /var/log/k3s-standin.log). Ordered: each test starts from the state the one before left.

- a missing snapshot is refused before anything stops;
- cp1 down: the restore runs on a joined server (its server URL cleared for the reset), after the down
  server is said to be off; an interrupted rejoin completes on the re-run without a second reset;
- a rebuilt first server whose peers are down is refused (it would start a new cluster);
- a local snapshot restores with etcd S3 configured (--etcd-s3=false), one only in the bucket through the
  cluster's proxy;
- every server rebuilt: k3s.yml reuses the token the control node keeps, and the restore from the control
  node's backup starts;
- two servers down: restored on the third, and when they return they rejoin it, never the old cluster.

These were the second half of k3s_reset's day-2 tests: a scenario of their own runs beside it."""

import subprocess

import pytest
import yaml
from day2 import BOOTED, DB, EPHEMERAL, INVENTORY, REPO, STATE, active, config, ip, playbook, restore, serve_releases, sh, snapshot_as, start_servers

SERVERS = ["k3s_restore-cp1", "k3s_restore-cp2", "k3s_restore-cp3"]
NEW = yaml.safe_load((REPO / "versions.yml").read_text())["k3s_version"]
SNAP = "snap-day2"

pytestmark = pytest.mark.skipif(not INVENTORY, reason="SKIPPED day-2: run through molecule (MOLECULE_INVENTORY_FILE)")


# Until systemd's boot is over (a container stopped and started again): `is-system-running --wait` returns
# then, and says "degraded" in these containers (run-rpc_pipefs.mount cannot mount there), which the
# old loop (`-q --wait && break`) took for "not yet" and waited out its 60 s each time.


def test_restore_of_a_missing_snapshot_is_refused_before_anything_stops():
    for host in ("k3s_restore-cp2", "k3s_restore-cp3"):
        sh(host, "systemctl start k3s")
        assert active(host) == "active"
    rc, out = restore("no-such-snapshot")
    assert rc != 0
    assert "snapshot no-such-snapshot is on none of the reachable servers" in out and "nothing was stopped" in out
    assert "Stop k3s on the servers still to do" not in out
    assert all(active(h) == "active" for h in ("k3s_restore-cp2", "k3s_restore-cp3"))
    rc, out = restore("../etc/passwd")
    assert rc != 0 and "is not a snapshot file name" in out


def test_restore_with_the_first_server_down_keeps_every_snapshot():
    """cp1 is down: the restore runs on cp2, a server that joined cp1 (config server: cp1), which real
    k3s refuses to reset while its server URL is set (pkg/cli/server/server.go): the playbook clears it
    with a drop-in. A down server must be said to be off before anything stops (issue 42)."""
    snapshot_as("k3s_restore-cp2", SNAP)
    sh("k3s_restore-cp3", f"mkdir -p {DB}/snapshots {DB}/etcd && printf 'keep\\n' > {DB}/snapshots/cp3-own "
                          f"&& printf 'old member\\n' > {DB}/etcd/member")
    for host in SERVERS:
        sh(host, "rm -f /var/log/k3s-standin.log")
    subprocess.run(["podman", "stop", "k3s_restore-cp1"], check=True, capture_output=True)
    rc, out = restore(SNAP)
    assert rc != 0 and "k3s_restore-cp1 could not be reached" in out and "Nothing was stopped" in out
    assert '"k3s_snapshot_restore_servers_off": ["k3s_restore-cp1"]' in out
    assert all(active(h) == "active" for h in ("k3s_restore-cp2", "k3s_restore-cp3"))
    rc, out = restore(SNAP, k3s_snapshot_restore_servers_off=["k3s_restore-cp1"])
    assert rc == 0, out
    assert "down: k3s_restore-cp1" in out and "NOT DONE: k3s_restore-cp1 could not be reached" in out
    calls = sh("k3s_restore-cp2", "cat /var/log/k3s-standin.log")
    assert f"server --cluster-reset --token-file=/var/lib/rancher/k3s/server/restore-token " \
           f"--cluster-reset-restore-path={DB}/snapshots/{SNAP}" in calls
    assert "kubectl get --raw /readyz/etcd" in calls  # etcd's health, not only the node's Ready condition
    assert sh("k3s_restore-cp2", "test -e /var/lib/rancher/k3s/server/restore-token && echo yes || echo no").strip() == "no"
    assert config("k3s_restore-cp2")["server"].endswith(":6443")  # config.yaml keeps it; the drop-in clears it
    assert sh("k3s_restore-cp2", "cat /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml").count('server: ""') == 1
    assert yaml.safe_load((STATE / "etcd-restore-pending").read_text())["servers"] == ["k3s_restore-cp1"]
    assert "--cluster-reset" not in sh("k3s_restore-cp3", "cat /var/log/k3s-standin.log")
    # cp3: its etcd moved aside (not removed), its own snapshot kept, joined to cp2, running
    assert sh("k3s_restore-cp3", f"cat {DB}/etcd-old-restore-*/member") == "old member\n"
    assert sh("k3s_restore-cp3", f"cat {DB}/snapshots/cp3-own") == "keep\n"
    assert config("k3s_restore-cp3")["server"] == f"https://{ip('k3s_restore-cp2')}:6443"
    assert all(active(h) == "active" for h in ("k3s_restore-cp2", "k3s_restore-cp3"))
    # the markers stay while cp1 is left to do; every snapshot was copied to the control node first
    assert sh("k3s_restore-cp2", f"cat {DB}/restore-done") == f"{SNAP}\n"
    assert sh("k3s_restore-cp3", f"cat {DB}/restore-joined") == f"{SNAP}\n"
    backups = EPHEMERAL / "backups"
    assert list(backups.glob(f"2*/k3s_restore-cp2/snapshots/{SNAP}"))
    assert list(backups.glob("2*/k3s_restore-cp3/snapshots/cp3-own"))


def test_interrupted_rejoin_of_the_returning_server_completes_on_rerun_without_a_second_reset():
    subprocess.run(["podman", "start", "k3s_restore-cp1"], check=True, capture_output=True)
    sh("k3s_restore-cp1", BOOTED)
    sh("k3s_restore-cp1", f"mkdir -p {DB}/etcd && printf 'cp1 old member\\n' > {DB}/etcd/member "
                          "&& touch /etc/k3s-standin-fail-start")
    rc, out = restore(SNAP)  # interrupted: k3s fails to start on cp1 after its etcd moved aside
    assert rc != 0
    assert sh("k3s_restore-cp2", f"cat {DB}/restore-done") == f"{SNAP}\n"  # still in progress
    sh("k3s_restore-cp1", "rm -f /etc/k3s-standin-fail-start")
    rc, out = restore(SNAP)
    assert rc == 0, out
    assert sh("k3s_restore-cp2", "grep -c -- --cluster-reset /var/log/k3s-standin.log").strip() == "1"
    assert sh("k3s_restore-cp1", f"cat {DB}/etcd-old-restore-*/member") == "cp1 old member\n"
    cfg = config("k3s_restore-cp1")
    assert "cluster-init" not in cfg and cfg["server"].endswith(":6443")
    assert all(active(h) == "active" for h in SERVERS)
    for host in SERVERS:  # done everywhere: the markers and the drop-in are gone
        assert sh(host, f"ls {DB}/restore-done {DB}/restore-joined /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml "
                        "2>/dev/null || true").strip() == ""
    assert not (STATE / "etcd-restore-pending").exists()


def test_rebuilt_first_server_with_its_peers_down_is_refused():
    serve_releases(["k3s_restore-cp1"])  # its container was stopped and started by the tests before
    for host in SERVERS:
        sh(host, "systemctl stop k3s")
    sh("k3s_restore-cp1", "rm -rf /var/lib/rancher/k3s /etc/rancher/k3s")  # rebuilt: empty
    subprocess.run(["podman", "stop", "k3s_restore-cp2", "k3s_restore-cp3"], check=True, capture_output=True)
    try:
        rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
        assert rc != 0
        assert "k3s_restore-cp1 would start a new cluster (cluster-init)" in out
        assert "k3s_restore-cp2, k3s_restore-cp3 could not be reached" in out and "remove them from k3s_servers" in out
        assert sh("k3s_restore-cp1", "test -e /etc/rancher/k3s/cluster-token && echo yes || echo no").strip() == "no"
    finally:
        subprocess.run(["podman", "start", "k3s_restore-cp2", "k3s_restore-cp3"], check=True, capture_output=True)


# The recoveries a real k3s accepts (issue 42). Each starts from the cluster the test before left
# (cp1 wiped, cp2 and cp3 back): k3s.yml installs it again first.


def test_restore_of_a_local_snapshot_with_etcd_s3_configured():
    """k3s downloads the restore path from the bucket whenever etcd S3 is on (pkg/etcd/etcd.go, Reset):
    a local snapshot restores with --etcd-s3=false and its full path; a snapshot only in the bucket
    restores through the proxy the cluster is configured with, and a re-run after that reset failed
    completes it."""
    s3 = {"endpoint": "s3.lab.example:9000", "bucket": "k3s-etcd", "folder": "lab", "access_key": "AKIALAB0000000000000",
          "secret_key": "lab-secret-key-0123456789"}
    serve_releases(SERVERS)  # the tests before stopped and started every server's container
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW, k3s_node_etcd_s3=s3)
    assert rc == 0, out
    assert config("k3s_restore-cp1")["etcd-s3"] is True
    start_servers(SERVERS)
    snapshot_as("k3s_restore-cp1", "s3-local")
    rc, out = restore("s3-local", k3s_node_etcd_s3=s3)
    assert rc == 0, out
    assert "--cluster-reset-restore-path=/var/lib/rancher/k3s/server/db/snapshots/s3-local --etcd-s3=false" in sh(
        "k3s_restore-cp1", "cat /var/log/k3s-standin.log")
    assert "lab-secret-key" not in out
    # a snapshot only in the bucket, which answers only through the proxy: the reset gets the proxy
    # settings (gpu_cluster_https_proxy, as the unit's environment has them)
    snapshot_as("k3s_restore-cp1", "s3-remote")
    sh("k3s_restore-cp1", f"mkdir -p /var/lib/k3s-standin-s3/k3s-etcd/lab && mv {DB}/snapshots/s3-remote "
                          "/var/lib/k3s-standin-s3/k3s-etcd/lab/ && touch /var/lib/k3s-standin-s3/.needs-proxy")
    rc, out = restore("s3-remote", k3s_node_etcd_s3=s3)
    assert rc != 0 and "only through the proxy" in out
    rc, out = restore("s3-remote", k3s_node_etcd_s3=s3, gpu_cluster_https_proxy="http://proxy.lab.example:3128")
    assert rc == 0, out
    assert "fetched from etcd S3" in out
    assert "--cluster-reset-restore-path=s3-remote" in sh("k3s_restore-cp1", "cat /var/log/k3s-standin.log")
    assert "lab-secret-key" not in out
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)  # S3 off again
    assert rc == 0, out


def test_every_server_rebuilt_then_restored_with_the_original_token():
    """Every server lost: k3s.yml rebuilds them with the token the control node keeps (state directory),
    never a new one, and the snapshot from the control node's backup restores (k3s refuses data encrypted
    with another token: pkg/cluster/storage.go)."""
    start_servers(SERVERS)
    snapshot_as("k3s_restore-cp1", "before-loss")
    original = (STATE / "server-token").read_text().strip()  # k3s.yml keeps it there (0600)
    assert len(original) == 64 and oct((STATE / "server-token").stat().st_mode & 0o777) == "0o600"
    backup = EPHEMERAL / "backups" / "20261101T000000Z" / "k3s_restore-cp1" / "snapshots"
    backup.mkdir(parents=True, exist_ok=True)
    (backup / "before-loss").write_text(sh("k3s_restore-cp1", f"cat {DB}/snapshots/before-loss"))
    for host in SERVERS:  # every server lost: rebuilt empty
        sh(host, "systemctl stop k3s; rm -rf /var/lib/rancher/k3s /etc/rancher/k3s")
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    assert config("k3s_restore-cp1")["cluster-init"] is True
    assert sh("k3s_restore-cp1", "cat /etc/rancher/k3s/cluster-token").strip() == original
    start_servers(SERVERS)  # the new, empty cluster runs
    rc, out = restore("before-loss")
    assert rc == 0, out
    assert "copied from " in out
    assert sh("k3s_restore-cp1", "/usr/local/bin/k3s kubectl get --raw /readyz/etcd").strip() == "ok"
    assert all(active(h) == "active" for h in SERVERS)


def test_two_servers_down_then_returning_rejoin_the_restored_cluster():
    """cp1 and cp2 unreachable: the restore refuses until they are said to be off, then restores on cp3
    (a joined server) and records them; when they come back, their k3s starts on the old cluster's
    data: k3s.yml stops it, moves the data aside and joins them to cp3, never resuming the old cluster."""
    start_servers(SERVERS)
    snapshot_as("k3s_restore-cp3", "two-down")
    subprocess.run(["podman", "stop", "k3s_restore-cp1", "k3s_restore-cp2"], check=True, capture_output=True)
    try:
        rc, out = restore("two-down")
        assert rc != 0 and "k3s_restore-cp1, k3s_restore-cp2 could not be reached" in out
        assert active("k3s_restore-cp3") == "active"  # nothing was stopped
        rc, out = restore("two-down", k3s_snapshot_restore_servers_off=["k3s_restore-cp1", "k3s_restore-cp2"])
        assert rc == 0, out
        assert "NOT DONE: k3s_restore-cp1, k3s_restore-cp2 could not be reached" in out
        assert yaml.safe_load((STATE / "etcd-restore-pending").read_text())["servers"] == ["k3s_restore-cp1", "k3s_restore-cp2"]
    finally:
        subprocess.run(["podman", "start", "k3s_restore-cp1", "k3s_restore-cp2"], check=True, capture_output=True)
    serve_releases(("k3s_restore-cp1", "k3s_restore-cp2"))
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    for host in ("k3s_restore-cp1", "k3s_restore-cp2"):
        assert sh(host, f"ls -d {DB}/etcd-old-restore-* | wc -l").strip() != "0", host
        cfg = config(host)
        assert "cluster-init" not in cfg and cfg["server"] == f"https://{ip('k3s_restore-cp3')}:6443", host
    assert not (STATE / "etcd-restore-pending").exists()
    assert sh("k3s_restore-cp3", "ls /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml 2>/dev/null || true").strip() == ""
    start_servers(SERVERS)
