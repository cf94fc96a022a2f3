"""k3s_token: generated once, kept, given, refused; mode 0600; never returned."""

from __future__ import annotations

import builtins
import json
import os
import stat

import pytest
from ansible_collections.cps.gpu_cluster.plugins.modules import k3s_token


@pytest.fixture
def run(module_call):
    """run(check=False, **args) -> (ok, result) of k3s_token (conftest.py), with no running server's token."""
    def call(check=False, **args):
        args.setdefault("server_token_path", "/nonexistent/k3s-server-token")
        return module_call(k3s_token.main, args, check)
    return call


def test_generates_once_and_keeps(run, tmp_path):
    path = tmp_path / "k3s" / "cluster-token"
    ok, result = run(path=str(path))
    assert ok and result["changed"] and result["generated"]
    token = path.read_text().strip()
    assert len(token) == 64 and "%" not in token
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert token not in json.dumps(result)
    ok, result = run(path=str(path))
    assert ok and not result["changed"] and not result["generated"]
    assert path.read_text().strip() == token


def test_check_mode_writes_nothing(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), check=True)
    assert ok and result["changed"]
    assert not path.exists()


def test_given_token_is_written_and_mode_is_fixed(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), token="given-token-0123456789", server_token_path=str(tmp_path / "none"))
    assert ok and result["changed"] and not result["generated"]
    assert path.read_text() == "given-token-0123456789\n"
    os.chmod(path, 0o644)
    ok, result = run(path=str(path), token="given-token-0123456789", server_token_path=str(tmp_path / "none"))
    assert ok and result["changed"]  # only the mode
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    ok, result = run(path=str(path), token="given-token-0123456789", server_token_path=str(tmp_path / "none"))
    assert ok and not result["changed"]


def test_changed_token_of_an_initialised_cluster_is_refused(run, tmp_path):
    path = tmp_path / "cluster-token"
    path.write_text("old-token-0123456789\n")
    ok, result = run(path=str(path), token="brand-value-0123456789", server_token_path=str(tmp_path / "none"))
    assert not ok and "k3s token rotate" in result["msg"] and "nothing was changed" in result["msg"]
    assert "old-token" not in result["msg"] and "brand-value" not in result["msg"]
    assert path.read_text() == "old-token-0123456789\n"


def test_changed_token_refused_against_the_running_server_token(run, tmp_path):
    server = tmp_path / "server-token"
    server.write_text("K10" + "ab" * 32 + "::server:cluster-secret-0123456789\n")
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), token="other-secret-0123456789", server_token_path=str(server))
    assert not ok and "k3s token rotate" in result["msg"]
    assert not path.exists()


def test_full_token_accepted_and_matches_its_short_form(run, tmp_path):
    server = tmp_path / "server-token"
    full = "K10" + "ab" * 32 + "::server:cluster-secret-0123456789"
    server.write_text(full + "\n")
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), token=full, server_token_path=str(server))
    assert ok and result["changed"] and path.read_text().strip() == full
    # the short form of the same secret is the same token: nothing changes
    ok, result = run(path=str(path), token="cluster-secret-0123456789", server_token_path=str(server))
    assert ok and not result["changed"]


def test_missing_file_is_recovered_from_the_running_server(run, tmp_path):
    server = tmp_path / "server-token"
    full = "K10" + "cd" * 32 + "::server:cluster-secret-0123456789"
    server.write_text(full + "\n")
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), initialised=True, server_token_path=str(server))
    assert ok and result["changed"] and not result["generated"]
    assert path.read_text().strip() == full


def test_surrounding_whitespace_is_no_change(run, tmp_path):
    path = tmp_path / "cluster-token"
    path.write_text("given-token-0123456789")
    os.chmod(path, 0o600)
    for _round in range(2):
        ok, result = run(path=str(path), token=" given-token-0123456789\n\n",
                         server_token_path=str(tmp_path / "none"))
        assert ok and not result["changed"], result
    assert path.read_text() == "given-token-0123456789"


def test_directory_or_unreadable_path_fails_cleanly(run, tmp_path):
    (tmp_path / "dir").mkdir()
    ok, result = run(path=str(tmp_path / "dir"))
    assert not ok and "is a directory" in result["msg"] and "k3s_node_token_file" in result["msg"]
    ok, result = run(path=str(tmp_path / "t"), server_token_path=str(tmp_path / "dir"))
    assert not ok and "is a directory" in result["msg"]
    unreadable = tmp_path / "unreadable"
    unreadable.write_bytes(b"\xff\xfe not utf-8")
    ok, result = run(path=str(unreadable), server_token_path=str(tmp_path / "none"))
    assert not ok and "Could not read the token file" in result["msg"]


def test_unsafe_token_is_refused(run, tmp_path):
    ok, result = run(path=str(tmp_path / "t"), token="with%percent0123456789")
    assert not ok and "%" in result["msg"] and "k3s_token" in result["msg"]
    assert "with%percent" not in result["msg"]


def test_initialised_cluster_without_token_file_is_not_regenerated(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), initialised=True, server_token_path=str(tmp_path / "none"))
    assert not ok and "already initialised" in result["msg"]
    assert not path.exists()


def test_directory_path_is_a_clean_error(run, tmp_path):
    ok, result = run(path=str(tmp_path))
    assert not ok
    assert result["msg"] == f"{tmp_path} is a directory, not a token file: set k3s_node_token_file to a file path"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_path_is_a_clean_error(run, tmp_path):
    path = tmp_path / "cluster-token"
    path.write_text("secret-token-0123456789\n")
    os.chmod(path, 0)
    ok, result = run(path=str(path))
    assert not ok and result["msg"] == (f"Could not read the token file {path} (PermissionError): fix its permissions "
                                        "or set k3s_node_token_file to a readable file")
    assert "secret-token" not in json.dumps(result)


def test_unreadable_path_through_open_failing(run, tmp_path, monkeypatch):
    """Same as above where the tests run as root: open() raising EACCES, as for a non-root user."""
    path = tmp_path / "cluster-token"
    path.write_text("secret-token-0123456789\n")
    real_open = builtins.open

    def denying_open(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", denying_open)
    ok, result = run(path=str(path))
    assert not ok and result["msg"] == (f"Could not read the token file {path} (PermissionError): fix its permissions "
                                        "or set k3s_node_token_file to a readable file")


def test_binary_token_file_is_a_clean_error(run, tmp_path):
    path = tmp_path / "cluster-token"
    path.write_bytes(b"\xff\xfe\x00garbage")
    ok, result = run(path=str(path))
    assert not ok and result["msg"] == (f"Could not read the token file {path} (UnicodeDecodeError): fix its permissions "
                                        "or set k3s_node_token_file to a readable file")


# Issue 42: a cluster whose servers were all rebuilt must start again with its original token, or
# its etcd snapshots cannot be restored (k3s pkg/cluster/storage.go: "bootstrap data already found
# and encrypted with different token"; k3s docs cli/etcd-snapshot.md, "Restoring to new hosts").
def test_rebuilt_servers_get_the_recorded_token_not_a_new_one(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), recorded_token="K10" + "ab" * 32 + "::server:recorded-0123456789",
                     identity_recorded=True)
    assert ok and result["changed"] and not result["generated"]
    assert path.read_text() == "recorded-0123456789\n"


def test_a_recorded_identity_without_a_token_is_never_given_a_new_token(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), identity_recorded=True)
    assert not ok and "recorded nowhere on the control node" in result["msg"] and "k3s_token" in result["msg"]
    assert not path.exists()


def test_a_token_other_than_the_recorded_one_is_refused(run, tmp_path):
    path = tmp_path / "cluster-token"
    ok, result = run(path=str(path), token="another-token-0123456789", recorded_token="recorded-0123456789",
                     identity_recorded=True)
    assert not ok and "differs from the token recorded" in result["msg"]
    assert "recorded-0123456789" not in result["msg"] and "another-token" not in result["msg"]
    ok, result = run(path=str(path), token="recorded-0123456789", recorded_token="recorded-0123456789")
    assert ok and path.read_text() == "recorded-0123456789\n"
