"""Renovate itself on this repository: its config validator accepts renovate.json (--strict: no
migration pending), and a local dry run (--platform=local --dry-run=extract, no registry lookups)
lists every dependency it finds; every pin of versions.yml must be among them.

Renovate is installed once with npm (pinned, below) into ~/.cache/cps-gpu-cluster/renovate
(RENOVATE_CACHE overrides); Node.js comes from scripts/install-host-deps.sh. Renovate 39 needs
Node.js >= 20.15: with an older Node.js (Debian bookworm's own is 18) this tier is skipped with
that reason, and tests/unit/test_versions_file.py still applies the custom managers' regexes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import versions

REPO = Path(__file__).resolve().parents[2]
RENOVATE_VERSION = "39.264.0"  # the newest Renovate that runs on Node.js 20
CACHE = Path(os.environ.get("RENOVATE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
             / "cps-gpu-cluster" / "renovate")


def _node_ok():
    node = shutil.which("node")
    if not node or not shutil.which("npm"):
        return "no node/npm on PATH (scripts/install-host-deps.sh installs nodejs and npm)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip().lstrip("v")
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < (20, 15):
        return f"Node.js {version} is older than the 20.15 renovate {RENOVATE_VERSION} needs"
    return ""


@pytest.fixture(scope="module")
def renovate_bin():
    reason = _node_ok()
    if reason:
        pytest.skip(reason)
    binary = CACHE / "node_modules" / ".bin" / "renovate"
    stamp = CACHE / ("installed-" + RENOVATE_VERSION)
    if not stamp.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--ignore-scripts",
                               "--no-save", "renovate@" + RENOVATE_VERSION], capture_output=True, text=True, timeout=900, check=False)
        assert done.returncode == 0, f"npm install renovate@{RENOVATE_VERSION} failed:\n{done.stderr[-3000:]}"
        stamp.write_text("")
    assert binary.exists()
    return binary


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """This working tree as its own git repository (Renovate's local platform lists files with git)."""
    root = tmp_path_factory.mktemp("renovate") / "repo"
    names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in names:
        if name and (REPO / name).is_file() and not (REPO / name).is_symlink():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot"]):
        subprocess.run(git + args, cwd=root, check=True, capture_output=True)
    return root


def test_config_validator_accepts_renovate_json(renovate_bin, checkout):
    validator = renovate_bin.parent / "renovate-config-validator"
    done = subprocess.run([str(validator), "--strict", "renovate.json"], cwd=checkout, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Config validated successfully" in done.stdout


def test_dry_run_finds_every_pin(renovate_bin, checkout, tmp_path):
    report = tmp_path / "report.json"
    env = dict(os.environ, LOG_LEVEL="info", RENOVATE_CONFIG_FILE="renovate.json")
    done = subprocess.run([str(renovate_bin), "--platform=local", "--onboarding=false", "--require-config=optional",
                           "--dry-run=extract", "--report-type=file", f"--report-path={report}"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = {}
    for repository in json.loads(report.read_text())["repositories"].values():
        for manager, files in repository["packageFiles"].items():
            for package_file in files:
                for dep in package_file["deps"]:
                    found.setdefault(package_file["packageFile"], []).append((manager, dep.get("datasource"), dep.get("depName"),
                                                                             dep.get("currentValue"), tuple(dep.get("registryUrls") or ())))
    print("\n".join(f"{path}: {dep}" for path, deps in sorted(found.items()) for dep in deps))

    missing = []
    for key, entry in versions.load_versions(str(REPO / "versions.yml")).items():
        image = versions.image_parts(entry["value"]) if entry["datasource"] == "docker" else None
        value = image[1] if image else entry["value"]  # an image's tag; a driver version is the tag's prefix itself
        registries = (entry["registryUrl"],) if entry["registryUrl"] else ()
        if ("regex", entry["datasource"], entry["depName"], value, registries) not in found.get("versions.yml", []):
            missing.append(key)
    assert missing == [], "pins of versions.yml Renovate does not find"

    # the same pins where the code and Terraform carry them
    terraform = {(d[2], d[3]) for d in found["terraform/proxmox/versions.tf"]}
    assert ("proxmox", "= 0.83.0") in terraform or ("bpg/proxmox", "= 0.83.0") in terraform
    # the runtimes of both engines and the production-stack operator's controller (issue 47)
    vllm_images = {"docker.io/vllm/vllm-openai", "docker.io/lmcache/vllm-openai", "docker.io/lmcache/production-stack-operator"}
    assert {d[2] for d in found["plugins/plugin_utils/vllm.py"]} == vllm_images
    assert ("regex", "github-releases", "k3s-io/k3s") in {d[:3] for d in found["inventories/homelab/group_vars/all/main.yml"]}
    assert {d[2] for d in found["execution-environment.yml"]} == {"registry.fedoraproject.org/fedora", "helm/helm", "hashicorp/terraform"}
    assert {"requirements.txt", "requirements-dev.txt"} <= set(found)
