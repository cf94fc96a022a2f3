"""execution-environment.yml: `ansible-builder create` (scripts/build-ee.sh create) builds the
context, and the context holds what the issue asks for: the collection's tarball and its
collection dependencies, the control node's Python requirements and system tools (as
ansible-builder's own introspection resolves them from the installed collection), and the helm
and terraform CLIs at the versions versions.yml pins, on the pinned base image."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VERSIONS = yaml.safe_load((REPO / "versions.yml").read_text())
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())


def _builder():
    found = os.environ.get("ANSIBLE_BUILDER") or shutil.which("ansible-builder")
    if not found and (REPO / ".venv" / "bin" / "ansible-builder").exists():
        found = str(REPO / ".venv" / "bin" / "ansible-builder")
    if not found:
        pytest.fail("ansible-builder is not installed: it is pinned in requirements-dev.txt (make dev-deps)")
    return found


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    ctx = tmp_path_factory.mktemp("ee") / "context"
    env = dict(os.environ, ANSIBLE_BUILDER=_builder(), EE_CONTEXT=str(ctx))
    done = subprocess.run(["bash", "scripts/build-ee.sh", "create"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Complete! The build context can be found at" in done.stdout
    return ctx


def test_containerfile_pins(context):
    text = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="{}"'.format(VERSIONS["ee_base_image"]) in text
    core = metadata.version("ansible-core")
    assert re.search(rf'ARG ANSIBLE_INSTALL_REFS="ansible-core=={re.escape(core)} ansible-runner==[0-9.]+"', text), \
        f"the EE's ansible-core must be the one requirements.txt's ansible package brings ({core})"
    assert "ENV HELM_VERSION={}\n".format(VERSIONS["helm_version"]) in text
    assert "ENV TERRAFORM_VERSION={}\n".format(VERSIONS["terraform_version"]) in text
    # each CLI is checked against its published checksum before it is installed
    assert 'helm-${HELM_VERSION}-linux-amd64.tar.gz.sha256sum" | sha256sum -c -' in text
    assert '_SHA256SUMS" | grep " terraform_${tf}_linux_amd64.zip$" | sha256sum -c -' in text
    assert text.index("install -m 0755 /tmp/linux-amd64/helm") < text.index("USER 1000")


def test_collection_and_its_dependencies(context):
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())["collections"]
    assert requirements[0] == {"name": "ee/cps-gpu_cluster.tar.gz", "type": "file"}
    assert {r["name"]: r["version"] for r in requirements[1:]} == GALAXY["dependencies"]
    with tarfile.open(context / "_build" / "ee" / "cps-gpu_cluster.tar.gz") as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        names = tar.getnames()
    assert (manifest["collection_info"]["namespace"], manifest["collection_info"]["name"]) == ("cps", "gpu_cluster")
    assert "meta/execution-environment.yml" in names and "bindep.txt" in names and "versions.yml" in names
    assert not [n for n in names if n.startswith(("collections/", "context/", "build/"))]


def test_introspection_of_the_installed_collection(context, tmp_path):
    """What ansible-builder's builder stage installs: the runtime requirements without what the
    image already has (ansible, PyYAML), and bindep.txt (helm/terraform only in the cli profile)."""
    collections = tmp_path / "collections"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    done = subprocess.run([shutil.which("ansible-galaxy") or str(REPO / ".venv" / "bin" / "ansible-galaxy"), "collection", "install",
                           str(context / "_build" / "ee" / "cps-gpu_cluster.tar.gz"), "-p", str(collections), "--no-deps", "--force"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect", str(collections),
                           "--write-pip", str(tmp_path / "pip.txt"), "--write-bindep", str(tmp_path / "bindep.txt")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    pip = [line.split("#")[0].strip() for line in (tmp_path / "pip.txt").read_text().splitlines() if line.strip()]
    runtime = [line for line in (REPO / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert pip == [r for r in runtime if r.split("==")[0].lower() not in ("ansible", "pyyaml")]
    assert pip and all("==" in p for p in pip)
    system = [line.split("#")[0].strip() for line in (tmp_path / "bindep.txt").read_text().splitlines() if line.strip()]
    ours = [line for line in (REPO / "bindep.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert system == ours
    assert {line.split()[0] for line in ours} >= {"git", "openssh-client", "openssh-clients", "helm", "terraform"}
    # helm and terraform are in no distribution's repositories: only the cli profile asks for them
    assert [line for line in ours if line.split()[0] in ("helm", "terraform")] == ["helm [cli]", "terraform [cli]"]
