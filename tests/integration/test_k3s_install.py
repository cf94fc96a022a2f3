"""k3s_install for real (ansible-playbook on localhost): the binary is downloaded from a local
HTTP server that serves a stand-in release with its own sha256 file, verified, installed
idempotently; a wrong checksum fails clearly and installs nothing; the air-gap directory is
verified and copied (binary + images tarball); the version gate refuses a downgrade and a skipped
minor version before anything is downloaded; a replaced binary leaves the restart marker. A real
k3s release tier runs only when K3S_AIRGAP_DIR points at real artifacts (binary,
sha256sum-amd64.txt, images tarball)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
VERSION = "v1.33.5+k3s1"

PLAYBOOK = """
- hosts: localhost
  gather_facts: true
  gather_subset: [min]
  roles:
    - role: cps.gpu_cluster.k3s_install
  tasks:
    - name: Show what changed
      ansible.builtin.debug:
        msg: "k3s_install_changed={{ k3s_install_changed }}"
"""


@pytest.fixture()
def release(tmp_path):
    """A stand-in release directory served on 127.0.0.1 (random port)."""
    root = tmp_path / "release"
    (root / VERSION).mkdir(parents=True)
    binary = root / VERSION / "k3s"
    binary.write_text(f"#!/bin/sh\necho 'k3s version {VERSION} (stand-in)'\n")
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()
    (root / VERSION / "sha256sum-amd64.txt").write_text(
        "{}  k3s\n{}  k3s-airgap-images-amd64.tar.zst\n".format(digest, "0" * 64))
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"root": root, "url": f"http://127.0.0.1:{server.server_address[1]}", "digest": digest}
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


def run(tmp_path, **extra):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    extra.setdefault("ansible_python_interpreter", sys.executable)
    extra.setdefault("k3s_install_version", VERSION)
    extra.setdefault("k3s_install_bin_dir", str(tmp_path / "bin"))
    extra.setdefault("k3s_install_images_dir", str(tmp_path / "images"))
    # the marker's real place is /var/lib/rancher/k3s; keep it in the test's directory
    extra.setdefault("__k3s_install_restart_marker", str(tmp_path / "k3s" / "restart-pending"))
    (tmp_path / "bin").mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_BECOME="false")
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"), "-e", json.dumps(extra)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def needs_amd64():
    if os.uname().machine not in ("x86_64", "amd64"):
        pytest.skip(f"SKIPPED k3s_install test: the stand-in release is amd64 and this machine is {os.uname().machine}")


def test_download_is_verified_and_idempotent(tmp_path, release):
    needs_amd64()
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc == 0, out
    installed = tmp_path / "bin" / "k3s"
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == release["digest"]
    assert oct(installed.stat().st_mode & 0o777) == "0o755"
    assert "k3s_install_changed=True" in out
    marker = tmp_path / "k3s" / "restart-pending"
    assert marker.read_text() == f"k3s {VERSION} installed; restart pending\n"
    marker.unlink()  # what k3s_node does after the restart
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc == 0, out
    assert "changed=0" in out, out
    assert "k3s_install_changed=False" in out
    assert not marker.exists()


def test_wrong_checksum_fails_clearly(tmp_path, release):
    needs_amd64()
    sums = release["root"] / VERSION / "sha256sum-amd64.txt"
    sums.write_text("%s  k3s\n" % ("f" * 64))
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc != 0
    assert f"Could not install a verified k3s {VERSION}" in out
    assert "sha256sum-amd64.txt" in out
    assert "did not match" in out or "checksum" in out.lower()
    assert not (tmp_path / "bin" / "k3s").exists()


def test_unreachable_release_fails_clearly(tmp_path):
    needs_amd64()
    rc, out = run(tmp_path, k3s_install_release_url="http://127.0.0.1:9")
    assert rc != 0
    assert "Could not install a verified k3s" in out


def test_airgap_dir_is_verified_and_copied(tmp_path, release):
    needs_amd64()
    airgap = tmp_path / "airgap"
    shutil.copytree(release["root"] / VERSION, airgap)
    (airgap / "k3s-airgap-images-amd64.tar.zst").write_bytes(b"images")
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap))
    assert rc == 0, out
    assert (tmp_path / "images" / "k3s-airgap-images-amd64.tar.zst").read_bytes() == b"images"
    assert hashlib.sha256((tmp_path / "bin" / "k3s").read_bytes()).hexdigest() == release["digest"]
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap))
    assert rc == 0 and "changed=0" in out, out


def test_airgap_binary_with_wrong_checksum_is_refused(tmp_path, release):
    needs_amd64()
    airgap = tmp_path / "airgap"
    shutil.copytree(release["root"] / VERSION, airgap)
    (airgap / "k3s").write_text("#!/bin/sh\necho tampered\n")
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap))
    assert rc != 0
    assert "does not match its sha256" in out
    assert not (tmp_path / "bin" / "k3s").exists()


def test_real_release_from_airgap_dir(tmp_path):
    """Real artifacts: K3S_AIRGAP_DIR with the release's k3s, sha256sum-amd64.txt (and images)."""
    airgap = os.environ.get("K3S_AIRGAP_DIR", "")
    if not airgap or not (Path(airgap) / "k3s").exists():
        pytest.skip("SKIPPED k3s real release: set K3S_AIRGAP_DIR to a directory with the real "
                    "k3s binary and sha256sum-amd64.txt (no downloads from GitHub here)")
    needs_amd64()
    version = os.environ.get("K3S_VERSION", VERSION)
    rc, out = run(tmp_path, k3s_airgap_dir=airgap, k3s_install_version=version)
    assert rc == 0, out
    proc = subprocess.run([str(tmp_path / "bin" / "k3s"), "--version"], capture_output=True, text=True,
                          check=False)
    assert version in proc.stdout


def test_airgap_dir_without_sha256_file_is_refused(tmp_path, release):
    needs_amd64()
    airgap = tmp_path / "airgap"
    shutil.copytree(release["root"] / VERSION, airgap)
    (airgap / "sha256sum-amd64.txt").unlink()
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap))
    assert rc != 0, out
    assert "has no sha256sum-amd64.txt" in out, out
    assert "k3s_install_airgap_allow_unverified: true" in out
    assert f"same k3s release ({VERSION})" in out
    assert not (tmp_path / "bin" / "k3s").exists()


def test_airgap_dir_with_empty_sha256_file_is_refused(tmp_path, release):
    needs_amd64()
    airgap = tmp_path / "airgap"
    shutil.copytree(release["root"] / VERSION, airgap)
    (airgap / "sha256sum-amd64.txt").write_text("")
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap))
    assert rc != 0, out
    assert "no sha256 for 'k3s'" in out, out
    assert not (tmp_path / "bin" / "k3s").exists()


def test_airgap_dir_without_sha256_file_installs_when_allowed(tmp_path, release):
    needs_amd64()
    airgap = tmp_path / "airgap"
    shutil.copytree(release["root"] / VERSION, airgap)
    (airgap / "sha256sum-amd64.txt").unlink()
    rc, out = run(tmp_path, k3s_airgap_dir=str(airgap), k3s_install_airgap_allow_unverified=True)
    assert rc == 0, out
    assert "UNVERIFIED k3s" in out
    assert hashlib.sha256((tmp_path / "bin" / "k3s").read_bytes()).hexdigest() == release["digest"]


def installed(tmp_path, version):
    """A k3s binary already on the node that reports `version`."""
    binary = tmp_path / "bin" / "k3s"
    binary.parent.mkdir(exist_ok=True)
    binary.write_text(f"#!/bin/sh\necho 'k3s version {version} (installed)'\n")
    binary.chmod(0o755)
    return binary


def test_version_gate_refuses_a_downgrade_before_downloading(tmp_path, release):
    needs_amd64()
    binary = installed(tmp_path, "v1.34.1+k3s1")
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc != 0
    assert "k3s v1.34.1+k3s1 runs here and gpu_cluster_k3s_version is v1.33.5+k3s1" in out
    assert "does not support downgrades" in out and "Set gpu_cluster_k3s_version to v1.34.1+k3s1 or newer" in out
    assert "(installed)" in binary.read_text()
    rc, out = run(tmp_path, k3s_install_release_url=release["url"], k3s_install_allow_downgrade=True)
    assert rc == 0, out
    assert "(stand-in)" in binary.read_text()


def test_version_gate_refuses_a_skipped_minor(tmp_path, release):
    needs_amd64()
    binary = installed(tmp_path, "v1.31.6+k3s1")
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc != 0
    assert "skips minor versions" in out and "latest v1.32.x release" in out
    assert "k3s_install_allow_skip_minor=true" in out
    assert "(installed)" in binary.read_text()
    installed(tmp_path, "v1.32.9+k3s1")
    rc, out = run(tmp_path, k3s_install_release_url=release["url"])
    assert rc == 0, out  # one minor up is an upgrade
