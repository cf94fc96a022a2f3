"""k3s_server_probe: the questions k3s_node's probe and the etcd restore ask each server, in one module run.
Paths as ansible.builtin.stat (follow false) answers them, files as slurp reads them, and an API that
answers over HTTPS with a self-signed certificate (as k3s's does on 6443: any status is an answer)."""

from __future__ import annotations

import http.server
import os
import socket
import ssl
import subprocess
import threading

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_server_probe as probe_utils
from ansible_collections.cps.gpu_cluster.plugins.modules import k3s_server_probe


@pytest.fixture
def run(module_call):
    return lambda check=False, **args: module_call(k3s_server_probe.main, args, check)


class _Status(http.server.BaseHTTPRequestHandler):
    status = 401  # k3s answers /ping unauthenticated with 401 when anonymous auth is off

    def do_GET(self):
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def https_api(tmp_path):
    """An HTTPS server with a self-signed certificate (openssl), answering 401; its URL."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=k3s"], check=True, capture_output=True)
    server = http.server.HTTPServer(("127.0.0.1", 0), _Status)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/ping"
    server.shutdown()


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_paths_files_and_the_api_in_one_run(run, tmp_path, https_api):
    db = tmp_path / "db"
    (db / "etcd").mkdir(parents=True)
    (db / "restore-done").write_text("snap-1\n")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    ok, result = run(exists={"etcd": str(db / "etcd"), "token": str(tmp_path / "token"), "link": str(tmp_path / "dangling")},
                     read={"restored": str(db / "restore-done"), "joined": str(db / "restore-joined"), "dir": str(db)},
                     api_url=https_api)
    assert ok and result["changed"] is False
    # stat without follow: a directory exists, a missing file does not, a dangling link does
    assert result["exists"] == {"etcd": True, "token": False, "link": True}
    assert result["content"] == {"restored": "snap-1\n", "joined": "", "dir": ""}
    assert result["api_status"] == 401  # self-signed, not checked; 401 is an answer


def test_check_mode_answers_the_same_and_no_api_url_asks_nothing(run, tmp_path):
    (tmp_path / "token").write_text("K10abc::server:secret\n")
    ok, result = run(check=True, exists={"token": str(tmp_path / "token")}, read={"token": str(tmp_path / "token")})
    assert ok and result["exists"] == {"token": True} and result["content"] == {"token": "K10abc::server:secret\n"}
    assert "api_status" not in result


def test_nothing_listening_is_no_answer_and_a_plain_http_answer_is_an_answer(tmp_path):
    assert probe_utils.api_status(f"https://127.0.0.1:{_closed_port()}/ping", 2) == probe_utils.NO_ANSWER
    server = http.server.HTTPServer(("127.0.0.1", 0), _Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert probe_utils.api_status(f"http://127.0.0.1:{server.server_address[1]}/ping", 2) == 401
    finally:
        server.shutdown()


def test_a_proxy_in_the_environment_is_not_used(monkeypatch, https_api):
    """The URL is the server's own: a node's proxy settings (gpu_cluster_https_proxy) must not take it."""
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert probe_utils.api_status(https_api, 5) == 401


def test_a_large_or_unreadable_file_reads_as_empty(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * (probe_utils.READ_LIMIT + 1))
    assert probe_utils.read_text(str(big)) == ""
    (tmp_path / "bytes").write_bytes(b"snap\xff\n")
    assert probe_utils.read_text(str(tmp_path / "bytes")) == "snap\ufffd\n"


@pytest.mark.parametrize("args, message", [
    ({"api_timeout": 0}, "api_timeout must be at least 1 second"),
    ({"exists": {"etcd": ""}}, "exists: give each of etcd a path"),
    ({"read": {"token": ""}}, "read: give each of token a path"),
])
def test_bad_arguments_fail_with_their_reason(run, args, message):
    ok, result = run(**args)
    assert not ok and message in result["msg"]
