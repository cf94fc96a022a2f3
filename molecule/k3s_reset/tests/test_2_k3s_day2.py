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

import os
from pathlib import Path

import pytest
import yaml
from day2 import INVENTORY, REPO, config, playbook, sh

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


def unchanged(out):
    recap = [line for line in out.splitlines() if line.split(" ")[0] in ALL and "changed=" in line]
    return len(recap) == len(ALL) and all("changed=0" in line for line in recap)


def node_name(host):
    """The k3s node name: gpu_cluster_node_name in molecule.yml (inventory name, '_' -> '-')."""
    return host.replace("_", "-")


def version(host):
    return sh(host, "/usr/local/bin/k3s --version").split()[2]


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
