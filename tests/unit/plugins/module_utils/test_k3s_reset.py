"""k3s_reset decisions: which mounts to unmount and in what order (captured-format mountinfo of a
k3s agent with an NFS PVC and a local-path volume), which processes are k3s's shims, and a removal
walk that never enters a mount point or another filesystem."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_reset

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "mountinfo" / "k3s-agent.txt"


def mounts():
    return k3s_reset.parse_mountinfo(FIXTURE.read_text())


def test_parse_mountinfo_fields_and_escapes():
    parsed = {m["id"]: m for m in mounts()}
    assert parsed[1510]["fstype"] == "nfs4"
    assert parsed[1510]["source"] == "10.10.0.5:/srv/nfs/k8s/default-data-pvc-7d2e"
    assert parsed[1530]["mount_point"].endswith("kubernetes.io~local-volume/my vol")
    assert parsed[27]["mount_point"] == "/"


def test_mounts_under_the_k3s_trees_deepest_first():
    order = k3s_reset.mounts_under(mounts(), k3s_reset.K3S_TREES)
    # everything under the trees, nothing outside (kubelet-other, /run/netns, /run, /)
    assert "/var/lib/kubelet-other" not in order and "/run" not in order and "/" not in order
    assert "/run/netns/cni-1f0e" not in order
    nfs = "/var/lib/kubelet/pods/0b1c2d3e-aaaa-bbbb-cccc-000000000001/volumes/kubernetes.io~nfs/pvc-7d2e"
    assert nfs in order
    assert order.count("/var/lib/rancher/k3s/storage/pvc-91aa_default_cache") == 2
    # /run/k3s itself is a mount (last: its children go first)
    assert order[-1] == "/run/k3s"
    depths = [p.count("/") for p in order]
    assert depths == sorted(depths, reverse=True)


def test_stacked_mounts_newest_first():
    stacked = [m for m in mounts() if m["mount_point"].endswith("pvc-91aa_default_cache")]
    assert [m["id"] for m in sorted(stacked, key=lambda m: -m["id"])] == [1521, 1520]
    order = k3s_reset.mounts_under(stacked, ["/var/lib/rancher/k3s"])
    assert len(order) == 2


@pytest.mark.parametrize("path, root, inside", [
    ("/var/lib/kubelet", "/var/lib/kubelet", True),
    ("/var/lib/kubelet/pods/x", "/var/lib/kubelet", True),
    ("/var/lib/kubelet-other", "/var/lib/kubelet", False),
    ("/var/lib", "/var/lib/kubelet", False),
    ("/run/k3s/", "/run/k3s", True),
])
def test_is_within(path, root, inside):
    assert k3s_reset.is_within(path, root) is inside


def test_shims_and_their_children():
    processes = {
        100: ["/var/lib/rancher/k3s/data/abc123/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "5f2c"],
        101: ["/pause"],
        102: ["python3", "app.py"],
        200: ["/usr/bin/containerd-shim-runc-v2", "-namespace", "moby"],  # docker's, not k3s's
        300: ["/usr/local/bin/k3s", "agent"],
        400: [],
    }
    parents = {100: 1, 101: 100, 102: 101, 200: 1, 201: 200, 300: 1}
    shims = k3s_reset.shim_pids(processes)
    assert shims == [100]
    assert k3s_reset.descendants(shims, parents) == [100, 101, 102]
    assert k3s_reset.descendants([], parents) == []


def test_remove_tree_never_enters_a_mount_point(tmp_path):
    root = tmp_path / "kubelet"
    share = root / "pods" / "uid" / "volumes" / "kubernetes.io~nfs" / "pvc"
    share.mkdir(parents=True)
    (share / "data.txt").write_text("precious")
    (root / "pods" / "uid" / "etc-hosts").write_text("x")
    (root / "link").symlink_to(share)
    removed, kept = k3s_reset.remove_tree(str(root), [str(share)])
    assert kept == [str(share)]
    assert (share / "data.txt").read_text() == "precious"
    assert not (root / "pods" / "uid" / "etc-hosts").exists()
    assert not (root / "link").exists() and share.exists()  # the link went, not its target
    assert str(root) not in removed  # it still holds the kept mount point


def test_remove_tree_removes_everything_else_and_is_rerunnable(tmp_path):
    root = tmp_path / "k3s"
    (root / "server" / "db" / "etcd").mkdir(parents=True)
    (root / "server" / "token").write_text("t")
    removed, kept = k3s_reset.remove_tree(str(root), [])
    assert not root.exists() and kept == [] and str(root) in removed
    assert k3s_reset.remove_tree(str(root), []) == ([], [])


def test_remove_tree_dry_run_touches_nothing(tmp_path):
    root = tmp_path / "k3s"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_text("x")
    removed, kept = k3s_reset.remove_tree(str(root), [], dry_run=True)
    assert str(root) in removed and kept == [] and (root / "a" / "f").exists()


def test_remove_tree_keeps_a_root_that_is_a_mount_point(tmp_path):
    root = tmp_path / "run-k3s"
    root.mkdir()
    (root / "f").write_text("x")
    assert k3s_reset.remove_tree(str(root), [str(root)]) == ([], [str(root)])
    assert (root / "f").exists()
