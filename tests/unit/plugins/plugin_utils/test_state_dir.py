"""module_utils.state_dir: where a cluster's state lives, and what is refused."""

from __future__ import annotations

import os

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import state_dir as sd


def test_default_is_beside_a_directory_inventory(tmp_path):
    (tmp_path / "homelab").mkdir()
    assert sd.default_state_dir([str(tmp_path / "homelab")]) == str(tmp_path / "homelab" / ".gpu-cluster")


def test_default_of_a_file_inventory_is_its_directory(tmp_path):
    (tmp_path / "hosts.yml").write_text("all: {}\n")
    assert sd.default_state_dir(str(tmp_path / "hosts.yml")) == str(tmp_path / ".gpu-cluster")


def test_first_path_source_counts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b").mkdir()
    assert sd.default_state_dir(["host1,host2,", "", None, str(tmp_path / "b")]) == str(tmp_path / "b" / ".gpu-cluster")
    assert sd.default_state_dir([]) == str(tmp_path / ".gpu-cluster")


def test_configured_wins_and_expands_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sd.state_dir(["/elsewhere"], "~/state") == str(tmp_path / "state")
    assert sd.state_dir(["/elsewhere"], "~/state", "terraform") == str(tmp_path / "state" / "terraform")
    assert sd.state_dir([str(tmp_path)], "", "backups") == str(tmp_path / ".gpu-cluster" / "backups")


@pytest.mark.parametrize(("configured", "sub", "message"), [
    (["x"], "", "gpu_cluster_state_dir must be a path"),
    ("/x", "secrets", "no state sub-directory 'secrets' (known: backups, facts, inventory, reports, terraform)"),
])
def test_bad_arguments(configured, sub, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sd.state_dir(["/inv"], configured, sub)


def test_inside_an_installed_collection_is_refused(tmp_path):
    root = tmp_path / "ansible_collections" / "cps" / "gpu_cluster"
    (root / "inventories" / "homelab").mkdir(parents=True)
    state = str(root / "inventories" / "homelab" / ".gpu-cluster")
    problems = sd.state_dir_problems(state, root=str(root))
    assert len(problems) == 1 and "is inside the installed collection" in problems[0]
    assert f"cp -r {root}/inventories/homelab ~/homelab" in problems[0]
    assert sd.state_dir_problems(str(root), root=str(root))
    # a checkout (it has .git) may keep the reference inventory's state in place
    (root / ".git").write_text("gitdir: elsewhere\n")
    assert sd.collection_installed(str(root)) is False
    assert sd.state_dir_problems(state, root=str(root)) == []


def test_beside_the_collection_is_fine(tmp_path):
    root = tmp_path / "gpu_cluster"
    root.mkdir()
    assert sd.state_dir_problems(str(tmp_path / "gpu_cluster_state"), root=str(root), installed=True) == []


def test_not_a_directory_or_not_writable(tmp_path):
    afile = tmp_path / "state"
    afile.write_text("")
    assert "exists and is not a directory" in sd.state_dir_problems(str(afile), root="/nonexistent")[0]
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(str(locked), os.W_OK):
        pytest.skip("running as root: every directory is writable")
    assert "is not writable" in sd.state_dir_problems(str(locked), root="/nonexistent")[0]
