"""nfs_exports: safe export paths, clients limited to the nodes' addresses, one exports(5) line."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import nfs_exports

OPTIONS = "rw,sync,no_subtree_check,root_squash,all_squash,anonuid=2049,anongid=2049"


@pytest.mark.parametrize("path", ["/export/k3s", "/srv/nfs", "/a/b.c/d-e_f", "/export/k3s/"])
def test_good_paths(path):
    assert nfs_exports.export_path_problem(path) == ""


@pytest.mark.parametrize("path, words", [
    ("/", "must not be /"),
    ("//", "must not be /"),
    ("/export/../etc", "'..'"),
    ("/export/./k3s", "'..' or '.'"),
    ("export/k3s", "not absolute"),
    ("/export/k3s\n/ *(rw,no_root_squash,insecure)", "whitespace or a control character"),
    ("/export/k3s\n", "whitespace"),
    ("/export/k 3s", "whitespace"),
    ("/export/k3s\t", "whitespace"),
    ("", "non-empty string"),
    (None, "non-empty string"),
    (["/export"], "non-empty string"),
])
def test_bad_paths(path, words):
    assert words in nfs_exports.export_path_problem(path)


def test_node_addresses_prefer_node_ip_then_ansible_host_dedup_in_order():
    hostvars = {
        "cp1": {"gpu_cluster_node_ip": "10.0.0.11", "ansible_host": "cp1.lan"},
        "cp2": {"ansible_host": "10.0.0.12"},
        "wk1": {"gpu_cluster_node_ip": "10.0.0.21"},
        "wk1-alias": {"gpu_cluster_node_ip": "10.0.0.21"},
    }
    assert nfs_exports.node_addresses(["cp1", "cp2", "wk1", "wk1-alias"], hostvars) == [
        "10.0.0.11", "10.0.0.12", "10.0.0.21"]
    assert nfs_exports.node_addresses([], hostvars) == []


def test_node_without_address_is_named():
    with pytest.raises(ValueError, match=r"gpu_cluster_node_ip.*for wk9"):
        nfs_exports.node_addresses(["wk9"], {"wk9": {}})


def test_exports_line_one_entry_per_client():
    export = {"path": "/export/k3s", "clients": ["10.0.0.11", "10.0.0.12"], "options": OPTIONS}
    assert nfs_exports.exports_line(export) == (
        f"/export/k3s 10.0.0.11({OPTIONS}) 10.0.0.12({OPTIONS})")


def test_exports_line_default_options_and_string_clients():
    export = {"path": "/export/k3s", "clients": "10.0.0.11, 10.0.0.12"}
    assert nfs_exports.exports_line(export, "rw,sync") == "/export/k3s 10.0.0.11(rw,sync) 10.0.0.12(rw,sync)"


@pytest.mark.parametrize("export, words", [
    ({"path": "/export/k3s", "clients": [], "options": OPTIONS}, "no clients"),
    ({"path": "/export/k3s", "options": OPTIONS}, "no clients"),
    ({"path": "/", "clients": ["10.0.0.11"], "options": OPTIONS}, "must not be /"),
    ({"path": "/export/k3s", "clients": ["10.0.0.11(rw)"], "options": OPTIONS}, "not a host name"),
    ({"path": "/export/k3s", "clients": ["10.0.0.11\n/ *"], "options": OPTIONS}, "not a host name"),
    ({"path": "/export/k3s", "clients": [["10.0.0.11"]], "options": OPTIONS}, "non-empty string"),
    ({"path": "/export/k3s", "clients": {"a": 1}, "options": OPTIONS}, "list of addresses"),
    ({"path": "/export/k3s", "clients": ["10.0.0.11"], "options": "rw) * (rw"}, "option list"),
    ({"path": "/export/k3s", "clients": ["10.0.0.11"]}, "option list"),
    ("/export/k3s", "must be a mapping"),
])
def test_export_problems(export, words):
    problems = nfs_exports.export_problems(export)
    assert any(words in problem for problem in problems), problems
    with pytest.raises(ValueError):
        nfs_exports.exports_line(export)


def test_good_export_has_no_problems():
    assert nfs_exports.export_problems(
        {"path": "/export/k3s", "clients": ["10.0.0.11", "cp2.lab.lan", "10.0.0.0/24", "*"], "options": OPTIONS}) == []
