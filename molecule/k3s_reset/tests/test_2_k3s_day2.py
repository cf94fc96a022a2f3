"""Day-2 refusals and recoveries after the reset, with ansible-playbook against these containers
(stand-in releases of the pinned k3s and of the minor before it are served on each container's
loopback; the stand-in binary checks each config as k3s does and logs its calls to
/var/log/k3s-standin.log). Ordered: each test starts from
the state the one before left.

- a fresh install after the reset;
- a downgrade through site.yml and a skipped minor through k3s.yml are refused, naming what to set,
  before anything changes on any node; add_node.yml refuses a downgrade and agents newer than the
  servers;
- a changed k3s_token is refused and the stored token stays; the K10 form is accepted and is what
  joining nodes get; a trailing newline is no change;
- upgrade.yml stops when its etcd snapshot fails before any drain, and drains/upgrades once it works;
- an interrupted converge (binary replaced, run stopped) restarts k3s on the re-run (marker);
- a rebuilt cp1 joins the servers that still run instead of starting a cluster (cluster-init).

No --limit: the inventory's gpu_cluster_node_ip comes from each container's facts."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
# molecule's inventory directory: the connection (ansible_inventory.yml) and the groups (hosts)
INVENTORY = str(Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent) if os.environ.get("MOLECULE_INVENTORY_FILE") else ""
SERVERS = ["k3s_reset-cp1", "k3s_reset-cp2", "k3s_reset-cp3"]
AGENT = "k3s_reset-agent1"
ALL = [*SERVERS, AGENT]
# The stand-in releases follow versions.yml (molecule.yml derives the same): the pin, and the minor before it.
PIN = yaml.safe_load((REPO / "versions.yml").read_text())["k3s_version"]
MINOR = int(PIN.split(".")[1])
OLD, NEW = f"v1.{MINOR - 1}.2+k3s1", PIN
DOWNGRADE, NEWER_PATCH, SKIPS_A_MINOR = f"v1.{MINOR - 2}.9+k3s1", f"v1.{MINOR - 1}.3+k3s1", f"v1.{MINOR + 1}.0+k3s1"
FULL = "K10" + f"{48879:064x}" + "::server:{secret}"

pytestmark = pytest.mark.skipif(not INVENTORY, reason="SKIPPED day-2: run through molecule (MOLECULE_INVENTORY_FILE)")


def playbook(name, *args, **extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_LOG_PATH=str(Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "day2.log"))
    cmd = ["ansible-playbook", "-i", INVENTORY, str(REPO / "playbooks" / name), *args]
    if extra:
        cmd += ["-e", json.dumps(extra)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def sh(host, command, check=True):
    proc = subprocess.run(["podman", "exec", host, "sh", "-c", command], capture_output=True, text=True,
                          check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc.stdout


def unchanged(out):
    recap = [line for line in out.splitlines() if line.split(" ")[0] in ALL and "changed=" in line]
    return len(recap) == len(ALL) and all("changed=0" in line for line in recap)


def node_name(host):
    """The k3s node name: gpu_cluster_node_name in molecule.yml (inventory name, '_' -> '-')."""
    return host.replace("_", "-")


def version(host):
    return sh(host, "/usr/local/bin/k3s --version").split()[2]


def config(host):
    return yaml.safe_load(sh(host, "cat /etc/rancher/k3s/config.yaml"))


def test_fresh_install_after_the_reset():
    rc, out = playbook("k3s.yml")
    assert rc == 0, out
    assert config("k3s_reset-cp1")["cluster-init"] is True
    assert all(version(h) == OLD for h in ALL)


def test_the_cluster_identity_is_recorded_and_another_clusters_inventory_refused():
    """k3s.yml wrote one identity on every server and in the state directory; the inventory of
    another cluster (its state directory records another identity) is refused by the day-2
    playbooks before anything changes, naming both identities."""
    record = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "state" / "cluster-id"
    identity = record.read_text().strip()
    assert len(identity) == 32
    assert {sh(h, "cat /var/lib/rancher/k3s/server/cluster-id").strip() for h in SERVERS} == {identity}
    other = "0123456789abcdef" * 2
    record.write_text(other + "\n")
    try:
        restore = {"k3s_snapshot_action": "restore", "k3s_snapshot_name": "x", "k3s_snapshot_restore_confirm": True}
        runs = (("upgrade.yml", {"gpu_cluster_k3s_version": NEW}), ("add_node.yml", {}),
                ("remove_node.yml", {"remove_node": AGENT}), ("reset.yml", {}), ("etcd_snapshot.yml", restore))
        for name, extra in runs:
            rc, out = playbook(name, **extra)
            assert rc != 0, name
            assert f"records cluster {other}, but k3s_reset-cp1, k3s_reset-cp2, k3s_reset-cp3 belong(s) to cluster {identity}" in out, name
        assert all(version(h) == OLD for h in ALL)
    finally:
        record.write_text(identity + "\n")


def test_reset_limited_to_one_server_follows_the_quorum_rule():
    """Issue 42: reset.yml --limit <one server> would leave two etcd members with the reset one still
    counted; refused as remove_node.yml refuses it, before any node is touched."""
    rc, out = playbook("reset.yml", "--limit", "k3s_reset-cp2,localhost")
    assert rc != 0 and "resetting k3s_reset-cp2 (--limit) leaves 2 server(s)" in out and "remove_node.yml" in out
    assert "Uninstall k3s from this node" not in out
    assert version("k3s_reset-cp2") == OLD


LOCAL_PV = "pvc-5e7d1c2b-8a3f-4b6e-9d10-2f4a6c8e0b13"
LOCAL_DIR = f"/var/lib/rancher/k3s/storage/{LOCAL_PV}_ml_scratch"


def test_remove_and_reset_refuse_a_node_holding_local_path_volume_data():
    """A local-path volume's directory (not a mount) holding data on the agent: remove_node.yml
    refuses before the drain and reset.yml before any node is touched, naming the PersistentVolume."""
    sh(AGENT, f"mkdir -p {LOCAL_DIR} && echo weights > {LOCAL_DIR}/model.bin")
    for host in ALL:
        sh(host, "rm -f /var/log/k3s-standin.log")
    try:
        rc, out = playbook("remove_node.yml", remove_node=AGENT)
        assert rc != 0
        assert f"{node_name(AGENT)} holds the data of local-path PersistentVolumes" in out
        assert f"{LOCAL_PV} (claim ml/scratch, {LOCAL_DIR})" in out and "k3s_node_delete_local_volumes=true" in out
        calls = "".join(sh(h, "cat /var/log/k3s-standin.log 2>/dev/null || true") for h in ALL)
        assert "drain" not in calls and "delete node" not in calls
        rc, out = playbook("reset.yml")
        assert rc != 0 and f"{LOCAL_PV} (claim ml/scratch" in out
        assert "Uninstall k3s from this node" not in out
        for host in ALL:  # nothing was uninstalled anywhere
            assert version(host) == OLD
        assert sh(AGENT, f"cat {LOCAL_DIR}/model.bin").strip() == "weights"
    finally:
        sh(AGENT, f"rm -rf {LOCAL_DIR}")


# A task of the prerequisites role in the output: the run went past the version gate.
PREREQ = "TASK [cps.gpu_cluster.k3s_prereq : "


def test_downgrade_refused_through_site_yml():
    rc, out = playbook("site.yml", "--tags", "k3s", gpu_cluster_k3s_version=DOWNGRADE)
    assert rc != 0
    assert "does not support downgrades" in out and f"Set gpu_cluster_k3s_version to {OLD} or newer" in out
    assert "k3s_install_allow_downgrade" in out
    assert PREREQ not in out  # refused before anything changes on any node
    assert all(version(h) == OLD for h in ALL)


def test_skipped_minor_refused():
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=SKIPS_A_MINOR)
    assert rc != 0
    assert "skips minor versions" in out and "one minor at a time" in out and f"v1.{MINOR}.x" in out
    assert PREREQ not in out
    assert all(version(h) == OLD for h in ALL)


def test_add_node_refuses_a_downgrade_and_an_agent_newer_than_the_servers():
    unit = "/etc/systemd/system/k3s-agent.service"
    sh(AGENT, f"mv {unit} {unit}.day2")  # the agent looks new: add_node.yml would join it
    try:
        rc, out = playbook("add_node.yml", gpu_cluster_k3s_version=DOWNGRADE)
        assert rc != 0
        assert "does not support downgrades" in out and f"Set gpu_cluster_k3s_version to {OLD} or newer" in out
        assert PREREQ not in out
        rc, out = playbook("add_node.yml", gpu_cluster_k3s_version=NEWER_PATCH)
        assert rc != 0
        assert f"the servers run k3s {OLD} and gpu_cluster_k3s_version is {NEWER_PATCH}" in out
        assert f"Run playbooks/upgrade.yml first, or set gpu_cluster_k3s_version to {OLD}" in out
        assert PREREQ not in out
        # the servers limited out: their version cannot be compared, so nothing joins
        rc, out = playbook("add_node.yml", "--limit", f"{AGENT},localhost")
        assert rc != 0
        assert "which this run left out (k3s_reset-cp1, k3s_reset-cp2, k3s_reset-cp3): keep k3s_servers in --limit" in out
        assert PREREQ not in out
    finally:
        sh(AGENT, f"mv {unit}.day2 {unit}")
    assert all(version(h) == OLD for h in ALL)


def test_token_change_refused_and_stored_token_unchanged():
    before = sh("k3s_reset-cp1", "cat /etc/rancher/k3s/cluster-token")
    rc, out = playbook("k3s.yml", k3s_token="a-different-token-0123456789")
    assert rc != 0
    assert "k3s token rotate" in out and "nothing was changed" in out
    assert "a-different-token" not in out
    assert sh("k3s_reset-cp1", "cat /etc/rancher/k3s/cluster-token") == before
    assert before.strip() in sh(AGENT, "cat /etc/systemd/system/k3s-agent.service.env")


def test_k10_token_accepted_and_used_by_joining_nodes():
    secret = sh("k3s_reset-cp1", "cat /etc/rancher/k3s/cluster-token").strip()
    full = FULL.format(secret=secret)
    # what k3s writes once it runs
    sh("k3s_reset-cp1", f"mkdir -p /var/lib/rancher/k3s/server && printf '%s\\n' '{full}' > /var/lib/rancher/k3s/server/token")
    rc, out = playbook("k3s.yml", k3s_token=full)
    assert rc == 0, out
    assert f"K3S_TOKEN={full}" in sh(AGENT, "cat /etc/systemd/system/k3s-agent.service.env")
    assert f"K3S_TOKEN={full}" in sh("k3s_reset-cp2", "cat /etc/systemd/system/k3s.service.env")
    assert f"K3S_TOKEN={secret}" in sh("k3s_reset-cp1", "cat /etc/systemd/system/k3s.service.env")
    assert sh("k3s_reset-cp1", "cat /etc/rancher/k3s/cluster-token").strip() == secret
    # surrounding whitespace is no change
    rc, out = playbook("k3s.yml", k3s_token=full + "\n")
    assert rc == 0, out
    assert unchanged(out), out


def test_snapshot_failure_stops_the_upgrade_before_any_drain():
    for host in SERVERS:  # the servers run etcd: a snapshot needs a running etcd (the stand-in's data)
        sh(host, "systemctl start k3s")
    for host in ALL:
        sh(host, "rm -f /var/log/k3s-standin.log")
    for host in SERVERS:
        sh(host, "touch /etc/k3s-standin-fail-snapshot")
    rc, out = playbook("upgrade.yml", gpu_cluster_k3s_version=NEW)
    assert rc != 0
    assert "etcd snapshot" in out and "no node was drained or upgraded" in out
    calls = "".join(sh(h, "cat /var/log/k3s-standin.log 2>/dev/null || true") for h in ALL)
    assert f"etcd-snapshot save --name pre-upgrade-{NEW.replace('+', '-')}" in calls
    assert "drain" not in calls
    assert all(version(h) == OLD for h in ALL)
    # the same upgrade once the snapshot works: every node drained, upgraded, uncordoned
    for host in SERVERS:
        sh(host, "rm -f /etc/k3s-standin-fail-snapshot")
    rc, out = playbook("upgrade.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    calls = "".join(sh(h, "cat /var/log/k3s-standin.log 2>/dev/null || true") for h in ALL)
    # k3s applies no retention to on-demand snapshots: the pre-upgrade ones are pruned to the newest 3
    assert "etcd-snapshot prune --name pre-upgrade --snapshot-retention 3" in calls
    for host in ALL:
        assert f"kubectl drain {node_name(host)} " in calls and f"kubectl uncordon {node_name(host)}" in calls
        assert version(host) == NEW
        assert sh(host, "test -e /var/lib/rancher/k3s/restart-pending && echo yes || echo no").strip() == "no"


def test_upgrade_rerun_uncordons_a_node_an_interrupted_upgrade_left_cordoned():
    # what an upgrade interrupted after the agent's drain and binary, before its uncordon, leaves
    sh(AGENT, "touch /var/lib/rancher/k3s/drained-for-upgrade")
    for host in ALL:
        sh(host, "rm -f /var/log/k3s-standin.log")
    rc, out = playbook("upgrade.yml", gpu_cluster_k3s_version=NEW)  # every node already runs NEW
    assert rc == 0, out
    calls = "".join(sh(h, "cat /var/log/k3s-standin.log 2>/dev/null || true") for h in ALL)
    assert f"kubectl uncordon {node_name(AGENT)}" in calls
    assert "drain" not in calls and calls.count("uncordon") == 1  # nodes cordoned by hand stay so
    assert sh(AGENT, "test -e /var/lib/rancher/k3s/drained-for-upgrade && echo yes || echo no").strip() == "no"


def test_a_raised_pin_outside_upgrade_yml_and_agents_past_the_servers_are_refused():
    """Issue 42: k3s.yml with a newer pin would replace every node's binary at once (no snapshot, no
    drain): refused, pointing to upgrade.yml. upgrade.yml --limit <agent> reads the servers it leaves
    out first: an agent may not be newer than the servers (k3s docs upgrades/manual.md)."""
    newer = f"v1.{MINOR}.{int(NEW.split('.')[2].split('+')[0]) + 1}+k3s1"
    for host in ALL:
        sh(host, "rm -f /var/log/k3s-standin.log")
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=newer)
    assert rc != 0 and "Run playbooks/upgrade.yml" in out and "no etcd snapshot and no drain" in out
    assert PREREQ not in out
    rc, out = playbook("upgrade.yml", "--limit", f"{AGENT},localhost", gpu_cluster_k3s_version=newer)
    assert rc != 0 and "servers first" in out
    assert f"k3s_reset-cp1 runs {NEW}" in out
    calls = "".join(sh(h, "cat /var/log/k3s-standin.log 2>/dev/null || true") for h in ALL)
    assert "drain" not in calls and "etcd-snapshot save" not in calls
    assert all(version(h) == NEW for h in ALL)


def test_interrupted_converge_restarts_on_rerun():
    # the binary on the agent is replaced (damaged here), then the run stops before k3s_node
    sh(AGENT, "echo '# damaged' >> /usr/local/bin/k3s")
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW, k3s_node_role="interrupted")
    assert rc != 0
    assert sh(AGENT, "cat /var/lib/rancher/k3s/restart-pending").startswith(f"k3s {NEW} installed")
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    assert "Restart k3s, a restart is pending" in out
    assert "RUNNING HANDLER [cps.gpu_cluster.k3s_node : Restart k3s]" in out
    assert sh(AGENT, "test -e /var/lib/rancher/k3s/restart-pending && echo yes || echo no").strip() == "no"


def test_rebuilt_first_server_joins_instead_of_cluster_init():
    full = sh("k3s_reset-cp1", "cat /var/lib/rancher/k3s/server/token").strip()
    for host in ("k3s_reset-cp2", "k3s_reset-cp3"):  # they still run the cluster
        sh(host, "mkdir -p /var/lib/rancher/k3s/server/db/etcd && "
                 f"printf '%s\\n' '{full}' > /var/lib/rancher/k3s/server/token")
    sh("k3s_reset-cp1", "rm -rf /var/lib/rancher/k3s /etc/rancher/k3s")  # rebuilt: empty
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    cfg = config("k3s_reset-cp1")
    assert "cluster-init" not in cfg
    cp2_ip = sh("k3s_reset-cp2", "ip -4 -o route get 1.1.1.1 | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p'").strip()
    assert cfg["server"] == f"https://{cp2_ip}:6443"
    assert f"K3S_TOKEN={full}" in sh("k3s_reset-cp1", "cat /etc/systemd/system/k3s.service.env")
    # the token the cluster runs with is now also kept on cp2 (the token server)
    assert sh("k3s_reset-cp2", "cat /etc/rancher/k3s/cluster-token").strip() == full


# etcd restore (playbooks/etcd_snapshot.yml). Before this round the restore stopped at once
# ('__k3s_node_plan' is undefined), and with that fixed it removed every server's db directory
# (their snapshots with it) and reset on cp1 even when cp1 was down.
DB = "/var/lib/rancher/k3s/server/db"
SNAP = "snap-day2"


def restore(name=SNAP, **extra):
    return playbook("etcd_snapshot.yml", k3s_snapshot_action="restore", k3s_snapshot_name=name,
                    k3s_snapshot_restore_confirm=True, k3s_snapshot_restore_wait_retries=3, **extra)


def snapshot_as(host, name):
    """A snapshot as k3s writes it, `k3s etcd-snapshot save` on a server whose etcd runs (the stand-in's
    file carries the key of the token the data was created with), renamed to `name`."""
    sh(host, f"/usr/local/bin/k3s etcd-snapshot save --name tmp-{name} >/dev/null && "
             f"mv \"$(ls -t {DB}/snapshots/tmp-{name}-* | head -1)\" {DB}/snapshots/{name}")


def ip(host):
    return sh(host, "ip -4 -o route get 1.1.1.1 | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p'").strip()


STATE = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "state"
# Until systemd's boot is over (a container stopped and started again): `is-system-running --wait` returns
# then, and says "degraded" in these containers (run-rpc_pipefs.mount cannot mount there), which the
# old loop (`-q --wait && break`) took for "not yet" and waited out its 60 s each time.
BOOTED = ("for i in $(seq 60); do case \"$(systemctl is-system-running --wait 2>/dev/null)\" in running|degraded) break;; "
          "esac; sleep 1; done; true")


def active(host):
    return sh(host, "systemctl is-active k3s || true").strip()


def test_restore_of_a_missing_snapshot_is_refused_before_anything_stops():
    for host in ("k3s_reset-cp2", "k3s_reset-cp3"):
        sh(host, "systemctl start k3s")
        assert active(host) == "active"
    rc, out = restore("no-such-snapshot")
    assert rc != 0
    assert "snapshot no-such-snapshot is on none of the reachable servers" in out and "nothing was stopped" in out
    assert "Stop k3s on the servers still to do" not in out
    assert all(active(h) == "active" for h in ("k3s_reset-cp2", "k3s_reset-cp3"))
    rc, out = restore("../etc/passwd")
    assert rc != 0 and "is not a snapshot file name" in out


def test_restore_with_the_first_server_down_keeps_every_snapshot():
    """cp1 is down: the restore runs on cp2, a server that joined cp1 (config server: cp1), which real
    k3s refuses to reset while its server URL is set (pkg/cli/server/server.go): the playbook clears it
    with a drop-in. A down server must be said to be off before anything stops (issue 42)."""
    snapshot_as("k3s_reset-cp2", SNAP)
    sh("k3s_reset-cp3", f"mkdir -p {DB}/snapshots {DB}/etcd && printf 'keep\\n' > {DB}/snapshots/cp3-own "
                        f"&& printf 'old member\\n' > {DB}/etcd/member")
    for host in SERVERS:
        sh(host, "rm -f /var/log/k3s-standin.log")
    subprocess.run(["podman", "stop", "k3s_reset-cp1"], check=True, capture_output=True)
    rc, out = restore()
    assert rc != 0 and "k3s_reset-cp1 could not be reached" in out and "Nothing was stopped" in out
    assert '"k3s_snapshot_restore_servers_off": ["k3s_reset-cp1"]' in out
    assert all(active(h) == "active" for h in ("k3s_reset-cp2", "k3s_reset-cp3"))
    rc, out = restore(k3s_snapshot_restore_servers_off=["k3s_reset-cp1"])
    assert rc == 0, out
    assert "down: k3s_reset-cp1" in out and "NOT DONE: k3s_reset-cp1 could not be reached" in out
    calls = sh("k3s_reset-cp2", "cat /var/log/k3s-standin.log")
    assert f"server --cluster-reset --token-file=/var/lib/rancher/k3s/server/restore-token " \
           f"--cluster-reset-restore-path={DB}/snapshots/{SNAP}" in calls
    assert "kubectl get --raw /readyz/etcd" in calls  # etcd's health, not only the node's Ready condition
    assert sh("k3s_reset-cp2", "test -e /var/lib/rancher/k3s/server/restore-token && echo yes || echo no").strip() == "no"
    assert config("k3s_reset-cp2")["server"].endswith(":6443")  # config.yaml keeps it; the drop-in clears it
    assert sh("k3s_reset-cp2", "cat /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml").count('server: ""') == 1
    assert yaml.safe_load((STATE / "etcd-restore-pending").read_text())["servers"] == ["k3s_reset-cp1"]
    assert "--cluster-reset" not in sh("k3s_reset-cp3", "cat /var/log/k3s-standin.log")
    # cp3: its etcd moved aside (not removed), its own snapshot kept, joined to cp2, running
    assert sh("k3s_reset-cp3", f"cat {DB}/etcd-old-restore-*/member") == "old member\n"
    assert sh("k3s_reset-cp3", f"cat {DB}/snapshots/cp3-own") == "keep\n"
    assert config("k3s_reset-cp3")["server"] == f"https://{ip('k3s_reset-cp2')}:6443"
    assert all(active(h) == "active" for h in ("k3s_reset-cp2", "k3s_reset-cp3"))
    # the markers stay while cp1 is left to do; every snapshot was copied to the control node first
    assert sh("k3s_reset-cp2", f"cat {DB}/restore-done") == f"{SNAP}\n"
    assert sh("k3s_reset-cp3", f"cat {DB}/restore-joined") == f"{SNAP}\n"
    backups = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "backups"
    assert list(backups.glob(f"2*/k3s_reset-cp2/snapshots/{SNAP}"))
    assert list(backups.glob("2*/k3s_reset-cp3/snapshots/cp3-own"))


def test_interrupted_rejoin_of_the_returning_server_completes_on_rerun_without_a_second_reset():
    subprocess.run(["podman", "start", "k3s_reset-cp1"], check=True, capture_output=True)
    sh("k3s_reset-cp1", BOOTED)
    sh("k3s_reset-cp1", f"mkdir -p {DB}/etcd && printf 'cp1 old member\\n' > {DB}/etcd/member "
                        "&& touch /etc/k3s-standin-fail-start")
    rc, out = restore()  # interrupted: k3s fails to start on cp1 after its etcd moved aside
    assert rc != 0
    assert sh("k3s_reset-cp2", f"cat {DB}/restore-done") == f"{SNAP}\n"  # still in progress
    sh("k3s_reset-cp1", "rm -f /etc/k3s-standin-fail-start")
    rc, out = restore()
    assert rc == 0, out
    assert sh("k3s_reset-cp2", "grep -c -- --cluster-reset /var/log/k3s-standin.log").strip() == "1"
    assert sh("k3s_reset-cp1", f"cat {DB}/etcd-old-restore-*/member") == "cp1 old member\n"
    cfg = config("k3s_reset-cp1")
    assert "cluster-init" not in cfg and cfg["server"].endswith(":6443")
    assert all(active(h) == "active" for h in SERVERS)
    for host in SERVERS:  # done everywhere: the markers and the drop-in are gone
        assert sh(host, f"ls {DB}/restore-done {DB}/restore-joined /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml "
                        "2>/dev/null || true").strip() == ""
    assert not (STATE / "etcd-restore-pending").exists()


def test_rebuilt_first_server_with_its_peers_down_is_refused():
    for host in SERVERS:
        sh(host, "systemctl stop k3s")
    sh("k3s_reset-cp1", "rm -rf /var/lib/rancher/k3s /etc/rancher/k3s")  # rebuilt: empty
    subprocess.run(["podman", "stop", "k3s_reset-cp2", "k3s_reset-cp3"], check=True, capture_output=True)
    try:
        rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
        assert rc != 0
        assert "k3s_reset-cp1 would start a new cluster (cluster-init)" in out
        assert "k3s_reset-cp2, k3s_reset-cp3 could not be reached" in out and "remove them from k3s_servers" in out
        assert sh("k3s_reset-cp1", "test -e /etc/rancher/k3s/cluster-token && echo yes || echo no").strip() == "no"
    finally:
        subprocess.run(["podman", "start", "k3s_reset-cp2", "k3s_reset-cp3"], check=True, capture_output=True)


# The recoveries a real k3s accepts (issue 42). Each starts from the cluster the test before left
# (cp1 wiped, cp2 and cp3 back): k3s.yml installs it again first.
SERVE_RELEASES = ("systemctl is-active -q fake-k3s-release || systemd-run --unit=fake-k3s-release "
                  "python3 -m http.server --bind 127.0.0.1 --directory /srv/k3s-release 18080 >/dev/null; "
                  "for i in $(seq 30); do python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:18080/\")' "
                  "2>/dev/null && break; sleep 1; done")


def serve_releases(hosts=tuple(SERVERS)):
    """The stand-in release server (prepare.yml) is a transient unit: a container stopped and started
    again (podman stop/start) has lost it; k3s.yml reads the release's checksum from it."""
    for host in hosts:
        sh(host, f"{BOOTED}; {SERVE_RELEASES}")


def start_servers():
    for host in SERVERS:
        sh(host, "systemctl start k3s")
        assert active(host) == "active", host


def test_restore_of_a_local_snapshot_with_etcd_s3_configured():
    """k3s downloads the restore path from the bucket whenever etcd S3 is on (pkg/etcd/etcd.go, Reset):
    a local snapshot restores with --etcd-s3=false and its full path; a snapshot only in the bucket
    restores through the proxy the cluster is configured with, and a re-run after that reset failed
    completes it."""
    s3 = {"endpoint": "s3.lab.example:9000", "bucket": "k3s-etcd", "folder": "lab", "access_key": "AKIALAB0000000000000",
          "secret_key": "lab-secret-key-0123456789"}
    serve_releases()  # the tests before stopped and started every server's container
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW, k3s_node_etcd_s3=s3)
    assert rc == 0, out
    assert config("k3s_reset-cp1")["etcd-s3"] is True
    start_servers()
    snapshot_as("k3s_reset-cp1", "s3-local")
    rc, out = restore("s3-local", k3s_node_etcd_s3=s3)
    assert rc == 0, out
    assert "--cluster-reset-restore-path=/var/lib/rancher/k3s/server/db/snapshots/s3-local --etcd-s3=false" in sh(
        "k3s_reset-cp1", "cat /var/log/k3s-standin.log")
    assert "lab-secret-key" not in out
    # a snapshot only in the bucket, which answers only through the proxy: the reset gets the proxy
    # settings (gpu_cluster_https_proxy, as the unit's environment has them)
    snapshot_as("k3s_reset-cp1", "s3-remote")
    sh("k3s_reset-cp1", f"mkdir -p /var/lib/k3s-standin-s3/k3s-etcd/lab && mv {DB}/snapshots/s3-remote "
                        "/var/lib/k3s-standin-s3/k3s-etcd/lab/ && touch /var/lib/k3s-standin-s3/.needs-proxy")
    rc, out = restore("s3-remote", k3s_node_etcd_s3=s3)
    assert rc != 0 and "only through the proxy" in out
    rc, out = restore("s3-remote", k3s_node_etcd_s3=s3, gpu_cluster_https_proxy="http://proxy.lab.example:3128")
    assert rc == 0, out
    assert "fetched from etcd S3" in out
    assert "--cluster-reset-restore-path=s3-remote" in sh("k3s_reset-cp1", "cat /var/log/k3s-standin.log")
    assert "lab-secret-key" not in out
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)  # S3 off again
    assert rc == 0, out


def test_every_server_rebuilt_then_restored_with_the_original_token():
    """Every server lost: k3s.yml rebuilds them with the token the control node keeps (state directory),
    never a new one, and the snapshot from the control node's backup restores (k3s refuses data encrypted
    with another token: pkg/cluster/storage.go)."""
    start_servers()
    snapshot_as("k3s_reset-cp1", "before-loss")
    original = (STATE / "server-token").read_text().strip()  # k3s.yml keeps it there (0600)
    assert len(original) == 64 and oct((STATE / "server-token").stat().st_mode & 0o777) == "0o600"
    backup = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "backups" / "20261101T000000Z" / "k3s_reset-cp1" / "snapshots"
    backup.mkdir(parents=True, exist_ok=True)
    (backup / "before-loss").write_text(sh("k3s_reset-cp1", f"cat {DB}/snapshots/before-loss"))
    for host in SERVERS:  # every server lost: rebuilt empty
        sh(host, "systemctl stop k3s; rm -rf /var/lib/rancher/k3s /etc/rancher/k3s")
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    assert config("k3s_reset-cp1")["cluster-init"] is True
    assert sh("k3s_reset-cp1", "cat /etc/rancher/k3s/cluster-token").strip() == original
    start_servers()  # the new, empty cluster runs
    rc, out = restore("before-loss")
    assert rc == 0, out
    assert "copied from " in out
    assert sh("k3s_reset-cp1", "/usr/local/bin/k3s kubectl get --raw /readyz/etcd").strip() == "ok"
    assert all(active(h) == "active" for h in SERVERS)


def test_two_servers_down_then_returning_rejoin_the_restored_cluster():
    """cp1 and cp2 unreachable: the restore refuses until they are said to be off, then restores on cp3
    (a joined server) and records them; when they come back, their k3s starts on the old cluster's
    data: k3s.yml stops it, moves the data aside and joins them to cp3, never resuming the old cluster."""
    start_servers()
    snapshot_as("k3s_reset-cp3", "two-down")
    subprocess.run(["podman", "stop", "k3s_reset-cp1", "k3s_reset-cp2"], check=True, capture_output=True)
    try:
        rc, out = restore("two-down")
        assert rc != 0 and "k3s_reset-cp1, k3s_reset-cp2 could not be reached" in out
        assert active("k3s_reset-cp3") == "active"  # nothing was stopped
        rc, out = restore("two-down", k3s_snapshot_restore_servers_off=["k3s_reset-cp1", "k3s_reset-cp2"])
        assert rc == 0, out
        assert "NOT DONE: k3s_reset-cp1, k3s_reset-cp2 could not be reached" in out
        assert yaml.safe_load((STATE / "etcd-restore-pending").read_text())["servers"] == ["k3s_reset-cp1", "k3s_reset-cp2"]
    finally:
        subprocess.run(["podman", "start", "k3s_reset-cp1", "k3s_reset-cp2"], check=True, capture_output=True)
    serve_releases(("k3s_reset-cp1", "k3s_reset-cp2"))
    rc, out = playbook("k3s.yml", gpu_cluster_k3s_version=NEW)
    assert rc == 0, out
    for host in ("k3s_reset-cp1", "k3s_reset-cp2"):
        assert sh(host, f"ls -d {DB}/etcd-old-restore-* | wc -l").strip() != "0", host
        cfg = config(host)
        assert "cluster-init" not in cfg and cfg["server"] == f"https://{ip('k3s_reset-cp3')}:6443", host
    assert not (STATE / "etcd-restore-pending").exists()
    assert sh("k3s_reset-cp3", "ls /etc/rancher/k3s/config.yaml.d/90-etcd-restore.yaml 2>/dev/null || true").strip() == ""
    start_servers()
