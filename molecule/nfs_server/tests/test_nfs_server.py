"""The NFS server exports /export/k3s to the node network."""


def test_packages(host):
    assert host.package("nfs-kernel-server").is_installed
    assert host.package("nfs-common").is_installed


def test_export_directory(host):
    export = host.file("/export/k3s")
    assert export.is_directory
    assert export.mode == 0o777


def test_exports_file(host):
    exports = host.file("/etc/exports.d/gpu-cluster.exports")
    assert exports.mode == 0o644
    assert "/export/k3s 10.0.0.0/24(rw,sync,no_subtree_check,no_root_squash)" in exports.content_string


def test_exportfs_publishes_the_export(host):
    out = host.check_output("exportfs -v")
    assert "/export/k3s" in out
    assert "10.0.0.0/24" in out
    assert "no_root_squash" in out


def test_service_enabled(host):
    assert host.service("nfs-server").is_enabled
