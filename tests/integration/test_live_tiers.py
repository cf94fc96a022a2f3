"""The live tiers skip only when the user has not configured them (issue 19): once the environment
names a cluster or a Proxmox VE, a broken one fails the tier with the reason instead of being
reported as skipped. Each live test file runs in a child pytest, with the variables unset and then
pointing at something that does not answer (a closed port on this machine)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIVE_VARIABLES = ("GPU_CLUSTER_KUBECONFIG", "KUBECONFIG", "PROXMOX_VE_ENDPOINT", "PROXMOX_VE_API_TOKEN")


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {{server: "https://127.0.0.1:{closed_port()}", insecure-skip-tls-verify: true}}
users:
- name: dead
  user: {{token: not-a-secret}}
contexts:
- name: dead
  context: {{cluster: dead, user: dead}}
current-context: dead
""")
    return str(path)


def child_pytest(test_file, tmp_path, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in LIVE_VARIABLES and not k.startswith("PYTEST_")}
    env.update(env_vars)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--basetemp", str(tmp_path / "child"), f"tests/integration/{test_file}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("test_file", ["test_gpu_capacity_live.py", "test_components_live.py", "test_terraform_live.py"])
def test_unconfigured_live_tier_is_skipped_with_the_reason(test_file, tmp_path):
    rc, out = child_pytest(test_file, tmp_path)
    assert rc == 0, out[-3000:]
    assert "SKIPPED" in out and "live tier: set " in out, out[-3000:]
    assert " passed" not in out and "failed" not in out, out[-3000:]


@pytest.mark.parametrize("variable", ["GPU_CLUSTER_KUBECONFIG", "KUBECONFIG"])
def test_cluster_that_does_not_answer_fails_the_capacity_tier(variable, tmp_path):
    rc, out = child_pytest("test_gpu_capacity_live.py", tmp_path, **{variable: kubeconfig(tmp_path)})
    assert rc == 1, out[-3000:]
    assert "1 failed" in out and "live tier: no Kubernetes API answers through" in out, out[-3000:]
    assert "skipped" not in out, out[-3000:]


def test_missing_kubeconfig_fails_the_capacity_tier(tmp_path):
    rc, out = child_pytest("test_gpu_capacity_live.py", tmp_path, GPU_CLUSTER_KUBECONFIG=str(tmp_path / "absent"))
    assert rc == 1, out[-3000:]
    assert f"live tier: kubeconfig {tmp_path / 'absent'} does not exist" in out, out[-3000:]


def test_configured_components_tier_fails_instead_of_skipping(tmp_path):
    rc, out = child_pytest("test_components_live.py", tmp_path, GPU_CLUSTER_KUBECONFIG=kubeconfig(tmp_path))
    assert rc == 1, out[-3000:]
    # every test of the tier fails (none skips): as many as the module has
    tests = len(re.findall(r"^def test_", (Path(__file__).parent / "test_components_live.py").read_text(), re.M))
    assert tests >= 3 and (f"{tests} errors" in out or f"{tests} failed" in out), out[-3000:]
    assert "live tier: " in out and "skipped" not in out, out[-3000:]


def test_configured_terraform_tier_without_terraform_fails(tmp_path):
    # PATH with this Python's directory only (ansible-inventory and pytest's own), no terraform
    rc, out = child_pytest("test_terraform_live.py", tmp_path, PATH=str(Path(sys.executable).parent),
                           PROXMOX_VE_ENDPOINT=f"https://127.0.0.1:{closed_port()}/",
                           PROXMOX_VE_API_TOKEN="root@pam!ci=not-a-secret")
    assert rc == 1, out[-3000:]
    assert "no terraform binary is on PATH" in out and "skipped" not in out, out[-3000:]
