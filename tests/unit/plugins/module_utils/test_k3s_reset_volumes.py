"""Local-path volume data is found before k3s's trees are removed (k3s_reset.local_volumes): the
directories local-path-provisioner creates (<pv>_<namespace>_<claim>, its provisioner.go) that hold
a file and are not mount points; the mount points come from the recorded mountinfo of a k3s agent."""

from pathlib import Path

from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_reset

MOUNTINFO = Path(__file__).resolve().parents[3] / "fixtures" / "mountinfo" / "k3s-agent.txt"
PV = "pvc-3f1c2a9e-0d5b-4f1e-9a43-7c2b1e6d5a10"


def tree(tmp_path, files):
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_text(content)
    return str(tmp_path)


def test_a_volume_holding_a_file_is_found_and_named(tmp_path):
    base = tree(tmp_path, {f"{PV}_ml_scratch/data/weights.bin": "x", "pvc-1111_default_empty/sub": None,
                           "not-a-volume/file": "x", f"{PV}-tmp": "x"})
    found = k3s_reset.local_volumes([base], [])
    assert found == [{"pv": PV, "namespace": "ml", "claim": "scratch", "path": f"{base}/{PV}_ml_scratch"}]
    message = k3s_reset.local_volumes_message(found, "wk-gpu1")
    assert message.startswith("wk-gpu1 holds the data of local-path PersistentVolumes")
    assert f"{PV} (claim ml/scratch, {base}/{PV}_ml_scratch)" in message
    assert "k3s_node_delete_local_volumes=true" in message and "Nothing was changed" in message


def test_mounted_volumes_and_missing_directories_are_not_data_to_lose(tmp_path):
    base = tree(tmp_path, {f"{PV}_ml_scratch/data.bin": "x", "pvc-22_ns_inner/x/file": "x"})
    assert k3s_reset.local_volumes([base], [f"{base}/{PV}_ml_scratch", f"{base}/pvc-22_ns_inner/x"]) == []
    assert k3s_reset.local_volumes([str(tmp_path / "absent")], []) == []
    assert k3s_reset.local_volumes_message([], "wk-gpu1") == ""


def test_the_recorded_agent_mounts_keep_its_mounted_volume_out(tmp_path):
    """The capture's local-path volume is a mount point: with the capture's mounts (moved under
    tmp_path) it is not data to lose; the same directory unmounted is."""
    root = "/var/lib/rancher/k3s/storage"
    mounts = [m["mount_point"] for m in k3s_reset.parse_mountinfo(MOUNTINFO.read_text())]
    local = sorted({m for m in mounts if m.startswith(root + "/")})
    assert local == [f"{root}/pvc-91aa_default_cache"]
    base = tree(tmp_path, {"pvc-91aa_default_cache/cache.db": "x"})
    moved = [m.replace(root, base) for m in mounts]
    assert k3s_reset.local_volumes([base], moved) == []
    assert [v["pv"] for v in k3s_reset.local_volumes([base], [])] == ["pvc-91aa"]
