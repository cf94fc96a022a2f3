"""bundle_files module: writes a bundle directory once, idempotent, check and diff mode, prunes only YAML."""

from __future__ import annotations

import os
import stat

import pytest
from ansible_collections.cps.gpu_cluster.plugins.modules import bundle_files


@pytest.fixture
def run(module_call):
    """run(check=False, diff=False, **args) -> (ok, result) of bundle_files (conftest.py)."""
    return lambda check=False, diff=False, **args: module_call(bundle_files.main, args, check, diff)


FILES = [{"path": "fleet.yaml", "content": "defaultNamespace: demo\n"},
         {"path": "00-namespace-demo.yaml", "content": "kind: Namespace\nmetadata: {name: démo}\n"}]


def test_writes_then_changes_nothing(run, tmp_path):
    bundle = tmp_path / "homelab" / "demo"
    ok, result = run(path=str(bundle), files=FILES)
    assert ok and result["changed"]
    assert result["written"] == ["00-namespace-demo.yaml", "fleet.yaml"] and result["removed"] == []
    assert (bundle / "00-namespace-demo.yaml").read_text(encoding="utf-8") == FILES[1]["content"]
    assert stat.S_IMODE(os.stat(bundle / "fleet.yaml").st_mode) == 0o644
    assert sorted(os.listdir(bundle)) == ["00-namespace-demo.yaml", "fleet.yaml"]  # no temporary file left
    ok, result = run(path=str(bundle), files=FILES)
    assert ok and not result["changed"] and result["written"] == []


def test_prunes_stale_yaml_only(run, tmp_path):
    bundle = tmp_path / "demo"
    bundle.mkdir()
    (bundle / "05-old.yml").write_text("old: true\n")
    (bundle / "README.md").write_text("mine\n")
    (bundle / ".hidden.yaml").write_text("mine\n")
    (bundle / "sub").mkdir()
    ok, result = run(path=str(bundle), files=FILES)
    assert ok and result["removed"] == ["05-old.yml"]
    assert sorted(os.listdir(bundle)) == [".hidden.yaml", "00-namespace-demo.yaml", "README.md", "fleet.yaml", "sub"]


def test_prune_false_keeps_stale_yaml(run, tmp_path):
    (tmp_path / "05-old.yaml").write_text("old: true\n")
    ok, result = run(path=str(tmp_path), files=FILES, prune=False)
    assert ok and result["removed"] == [] and (tmp_path / "05-old.yaml").exists()


def test_check_mode_touches_nothing_and_diff_shows_it(run, tmp_path):
    (tmp_path / "fleet.yaml").write_text("defaultNamespace: old\n")
    (tmp_path / "05-old.yaml").write_text("old: true\n")
    ok, result = run(check=True, diff=True, path=str(tmp_path), files=FILES)
    assert ok and result["changed"]
    assert result["written"] == ["00-namespace-demo.yaml", "fleet.yaml"] and result["removed"] == ["05-old.yaml"]
    assert (tmp_path / "fleet.yaml").read_text() == "defaultNamespace: old\n"
    assert (tmp_path / "05-old.yaml").exists() and not (tmp_path / "00-namespace-demo.yaml").exists()
    by_header = {d["before_header"]: d for d in result["diff"]}
    assert by_header[str(tmp_path / "fleet.yaml")]["before"] == "defaultNamespace: old\n"
    assert by_header[str(tmp_path / "fleet.yaml")]["after"] == "defaultNamespace: demo\n"
    assert by_header[str(tmp_path / "05-old.yaml")]["after"] == ""


def test_check_mode_on_a_missing_directory_reports_a_change(run, tmp_path):
    ok, result = run(check=True, path=str(tmp_path / "new"), files=FILES)
    assert ok and result["changed"] and not (tmp_path / "new").exists()


def test_wrong_mode_is_corrected(run, tmp_path):
    run(path=str(tmp_path), files=FILES)
    os.chmod(tmp_path / "fleet.yaml", 0o600)
    ok, result = run(path=str(tmp_path), files=FILES)
    assert ok and result["changed"] and result["written"] == []
    assert stat.S_IMODE(os.stat(tmp_path / "fleet.yaml").st_mode) == 0o644


def test_bad_file_name_fails_before_writing(run, tmp_path):
    ok, result = run(path=str(tmp_path / "b"), files=[{"path": "../escape.yaml", "content": "x\n"}])
    assert not ok and "Fix the bundle's files" in result["msg"] and "without a directory" in result["msg"]
    assert not (tmp_path / "b").exists() and not (tmp_path / "escape.yaml").exists()


def test_a_file_where_the_directory_should_be_fails_cleanly(run, tmp_path):
    (tmp_path / "demo").write_text("not a directory\n")
    ok, result = run(path=str(tmp_path / "demo"), files=FILES)
    assert not ok and "is not a directory" in result["msg"]


def test_bad_mode_fails_cleanly(run, tmp_path):
    ok, result = run(path=str(tmp_path), files=FILES, mode="rw-r--r--")
    assert not ok and "not an octal file mode" in result["msg"]
