"""The NFS server exports /export/k3s to the nodes' addresses only, root squashed, from a
directory owned by the dedicated uid/gid that is not world-writable."""

import json
import stat

UID = GID = 2049


def test_packages(host):
    assert host.package("nfs-kernel-server").is_installed
    assert host.package("nfs-common").is_installed


def test_dedicated_user_and_group(host):
    user = host.user("gpu-cluster-nfs")
    assert user.exists and user.uid == UID and user.gid == GID
    assert user.shell == "/usr/sbin/nologin"
    assert host.group("gpu-cluster-nfs").gid == GID


def test_export_directory(host):
    export = host.file("/export/k3s")
    assert export.is_directory
    assert export.uid == UID and export.gid == GID
    assert export.mode == 0o770
    assert not export.mode & stat.S_IWOTH


def test_exports_file(host):
    exports = host.file("/etc/exports.d/gpu-cluster.exports")
    assert exports.mode == 0o644
    lines = [line for line in exports.content_string.splitlines() if line and not line.startswith("#")]
    assert lines == ["/export/k3s 10.0.0.11(rw,sync,no_subtree_check,root_squash,all_squash,anonuid=2049,anongid=2049)"]


def test_exportfs_publishes_the_export(host):
    out = host.check_output("exportfs -v")
    assert "/export/k3s" in out
    assert "10.0.0.11" in out
    assert "10.0.0.0/24" not in out
    assert "no_root_squash" not in out
    assert "root_squash" in out and "all_squash" in out
    assert "anonuid=2049" in out and "anongid=2049" in out


def test_service_enabled(host):
    assert host.service("nfs-server").is_enabled


# nfs_client_mounts (issue 47): one fstab(5) line per share, read back with util-linux's own fstab
# parser (findmnt --fstab, libmount). The options are the cluster's NFS mount options: the default of
# docs/components.md on the bookworm host, the gpu_cluster_nfs_mount_options of molecule.yml on trixie.
FSTAB_MOUNTS = {
    "nfs_server-srv": ("10.0.0.11:/export/k3s", "/mnt/gpu-cluster-nfs",
                       "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noatime"),
    "nfs_server-trixie": ("nfs.homelab.lan:/export/datasets", "/mnt/datasets", "nfsvers=4.2,nconnect=4,hard,noatime"),
}


def test_nfs_client_mounts_are_in_fstab_with_the_cluster_options(host):
    source, target, options = FSTAB_MOUNTS[host.backend.get_hostname()]
    found = json.loads(host.check_output("findmnt --fstab --json --output SOURCE,TARGET,FSTYPE,OPTIONS --mountpoint %s", target))
    assert found["filesystems"] == [{"source": source, "target": target, "fstype": "nfs", "options": options}]
    # exactly one line for it: a re-run (molecule's idempotence step) added none
    assert [line.split()[1] for line in host.file("/etc/fstab").content_string.splitlines()
            if line.strip() and not line.startswith("#")].count(target) == 1
