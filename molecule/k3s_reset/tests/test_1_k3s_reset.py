"""k3s_reset after converge (playbooks/reset.yml) and idempotence (a second reset): the files on
the NFS and local-path stand-ins survived, nothing is mounted under k3s's trees, the trees,
units, config and binary are gone, the shim holding a mount was killed, and the first server's
snapshots and tokens are in gpu_cluster_backup_dir on the control node (0600)."""

import os
import stat
from pathlib import Path

AGENT = "k3s_reset-agent1"
TREES = ["/var/lib/kubelet", "/var/lib/rancher/k3s", "/run/k3s"]


def name(host):
    return host.backend.get_hostname()


def test_files_on_the_shares_survived(host):
    if name(host) != AGENT:
        return
    for share in ("/srv/nfs-share/pvc-data", "/srv/local-path/pvc-cache"):
        keep = host.file(f"{share}/keep.txt")
        assert keep.exists, f"{share}/keep.txt was deleted by the reset"
        assert keep.content_string.strip() == f"precious data in {share}"


def test_nothing_mounted_under_the_k3s_trees(host):
    mount_points = [line.split()[4] for line in host.file("/proc/self/mountinfo").content_string.splitlines()]
    for point in mount_points:
        for tree in TREES:
            assert not (point == tree or point.startswith(tree + "/")), f"{point} is still mounted"


def test_k3s_trees_units_config_and_binary_are_gone(host):
    for path in [*TREES, "/etc/rancher/k3s", "/usr/local/bin/k3s", "/etc/systemd/system/k3s.service",
                 "/etc/systemd/system/k3s.service.env", "/etc/systemd/system/k3s-agent.service",
                 "/etc/systemd/system/k3s-agent.service.env"]:
        assert not host.file(path).exists, f"{path} is still there"
    assert host.file("/var/lib/rancher").is_directory  # only k3s's own directory goes


def test_the_cni_and_flannel_state_is_gone_as_k3s_killall_removes_it(host):
    """k3s-io/k3s install.sh (k3s-killall.sh, k3s-uninstall.sh): /var/lib/cni, /run/flannel and the CNI's
    cni-* network namespaces go with k3s (issue 42)."""
    for path in ("/var/lib/cni", "/run/flannel"):
        assert not host.file(path).exists, f"{path} is still there"
    assert "cni-" not in host.check_output("ip netns list")


def test_the_shim_was_killed(host):
    if name(host) != AGENT:
        return
    assert "containerd-shim" not in host.check_output("ps -eo args")


def test_backup_on_the_control_node(host):
    if name(host) != "k3s_reset-cp1":
        return
    runs = sorted((Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "backups").glob("2*/k3s_reset-cp1"))
    assert runs, "no dated backup directory"
    backup = runs[0]  # the first reset; the idempotence run keeps its own
    snapshot = backup / "snapshots" / "etcd-snapshot-k3s_reset-cp1-1763900000"
    assert snapshot.read_text() == "snapshot bytes\n"
    assert (backup / "token").read_text().startswith("K10")
    assert len((backup / "cluster-token").read_text().strip()) == 64
    for path in (snapshot, backup / "token", backup / "cluster-token"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.stat().st_mode) == 0o700
    log = (Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible.log").read_text()
    assert f"backed up to {backup.parent}/k3s_reset-cp1/" in log
