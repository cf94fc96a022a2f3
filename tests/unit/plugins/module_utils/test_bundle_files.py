"""bundle_files decisions: which files are written, re-moded, removed; which inputs are refused."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils.bundle_files import bundle_diff, bundle_plan, file_problems


def test_good_files_have_no_problems():
    assert file_problems([{"path": "fleet.yaml", "content": "a: 1\n"}, {"path": "00-ns.yml", "content": ""}]) == []


@pytest.mark.parametrize(("files", "message"), [
    ("fleet.yaml", "files must be a list"),
    (["fleet.yaml"], "files[0] must be a mapping"),
    ([{"path": "../x.yaml", "content": ""}], "without a directory"),
    ([{"path": "sub/x.yaml", "content": ""}], "without a directory"),
    ([{"path": ".hidden.yaml", "content": ""}], "leading dot"),
    ([{"path": "x.json", "content": ""}], "ending in .yaml or .yml"),
    ([{"path": "x.yaml\n", "content": ""}], "ending in .yaml or .yml"),
    ([{"path": None, "content": ""}], "files[0].path None"),
    ([{"path": "a.yaml", "content": ""}, {"path": "a.yaml", "content": ""}], "files[1].path 'a.yaml' is given twice"),
    ([{"path": "a.yaml", "content": 3}], "files[0].content must be text"),
])
def test_bad_files_are_named(files, message):
    problems = file_problems(files)
    assert len(problems) == 1 and message in problems[0]


def test_plan_writes_only_what_differs_and_removes_what_is_gone():
    wanted = {"fleet.yaml": "a: 1\n", "00-ns.yaml": "kind: Namespace\n", "01-new.yaml": "x: é\n"}
    existing = {"fleet.yaml": (b"a: 1\n", 0o644), "00-ns.yaml": (b"kind: Old\n", 0o644),
                "02-gone.yaml": (b"y: 2\n", 0o644)}
    assert bundle_plan(wanted, existing, 0o644) == (["00-ns.yaml", "01-new.yaml"], [], ["02-gone.yaml"])


def test_plan_same_content_other_mode_is_only_re_moded():
    assert bundle_plan({"a.yaml": "a\n"}, {"a.yaml": (b"a\n", 0o600)}, 0o644) == ([], ["a.yaml"], [])


def test_plan_unreadable_file_is_rewritten():
    assert bundle_plan({"a.yaml": "a\n"}, {"a.yaml": (None, 0o644)}, 0o644) == (["a.yaml"], [], [])


def test_plan_without_prune_keeps_other_files():
    assert bundle_plan({"a.yaml": "a\n"}, {"a.yaml": (b"a\n", 0o644), "b.yaml": (b"b\n", 0o644)}, 0o644,
                       prune=False) == ([], [], [])


def test_plan_compares_utf8_bytes():
    assert bundle_plan({"a.yaml": "ü\n"}, {"a.yaml": ("ü\n".encode(), 0o644)}, 0o644) == ([], [], [])


def test_diff_shows_old_and_new_text_and_removals():
    diffs = bundle_diff("/b", {"a.yaml": "new\n"}, {"a.yaml": (b"old\n", 0o644), "c.yaml": (b"gone\n", 0o644)},
                        ["a.yaml"], ["c.yaml"])
    assert diffs == [
        {"before_header": "/b/a.yaml", "after_header": "/b/a.yaml", "before": "old\n", "after": "new\n"},
        {"before_header": "/b/c.yaml", "after_header": "/b/c.yaml (removed)", "before": "gone\n", "after": ""},
    ]
    assert bundle_diff("/b", {"n.yaml": "x\n"}, {}, ["n.yaml"], [])[0]["before"] == ""
