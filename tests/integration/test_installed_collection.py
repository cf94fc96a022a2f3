"""The collection as users get it (issue 16, "Done when"): `ansible-galaxy collection build` of a
copy of this checkout that also holds what a working checkout accumulates (the collections/
self-link, .ansible caches, lab state, Terraform state, a user's own inventory, a virtualenv),
then the tarball installed into an empty home directory and the commands of docs/installing.md
run there, one by one, against an inventory outside the collection, with no ansible.cfg and no
path into this checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from test_provision_playbook import FAKE as FAKE_TERRAFORM
from test_provision_playbook import KEY

REPO = Path(__file__).resolve().parents[2]
BIN = Path(shutil.which("ansible-galaxy") or REPO / ".venv" / "bin" / "ansible-galaxy").parent
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
TARBALL_NAME = "{}-{}-{}.tar.gz".format(GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
DOC = REPO / "docs" / "installing.md"

# What a working checkout accumulates that must never be shipped: path -> content.
PLANTED = {
    ".ansible/facts/cp1": "{}",
    ".pytest_cache/v/cache/lastfailed": "{}",
    ".ruff_cache/0.17.6/x": "",
    ".venv/bin/python": "",
    ".tiers.log": "ruff PASS",
    # make test's molecule lane writes it while the integration tier builds the EE's tarball
    ".molecule-lane.log": "=== molecule scenario k3s_ha",
    "build/old.tar.gz": "",
    "reports/homelab-verify.md": "PASS",
    "lab/.state/inventory/hosts.yml": "all: {}",
    "terraform/proxmox/terraform.tfstate": '{"secret": "token"}',
    "terraform/proxmox/terraform.tfstate.backup": "{}",
    "terraform/proxmox/.terraform/providers/x": "",
    "terraform/proxmox/.terraform.lock.hcl": "",
    "terraform/proxmox/generated/inventory.yml": "all: {}",
    "terraform/proxmox/homelab.auto.tfvars.json": "{}",
    "inventories/homelab/.gpu-cluster/terraform/terraform.tfstate": "{}",
    "inventories/homelab/.gpu-cluster/reports/homelab-verify.md": "PASS",
    "molecule/k3s_ha/.ansible/facts/cp1": "{}",
    "inventories/mine/hosts.yml": "all: {}",
    "inventories/homelab2/hosts.yml": "all: {}",
    "inventories/home/hosts.yml": "all: {}",
    "inventories/h/hosts.yml": "all: {}",
    "plugins/module_utils/__pycache__/k3s.cpython-313.pyc": "",
    "node_modules/renovate/package.json": "{}",
    "context/Containerfile": "",
    "tests/output/junit.xml": "",
}
# Tracked files that are deliberately not part of the collection.
NOT_SHIPPED = {".gitignore", ".ci/run", "galaxy.yml"}  # galaxy.yml becomes MANIFEST.json
# Files the collection cannot work without.
ESSENTIAL = {
    "README.md", "COPYING", "meta/runtime.yml", "playbooks/site.yml", "playbooks/preflight.yml", "playbooks/render.yml",
    "inventories/homelab/hosts.yml", "inventories/homelab/group_vars/all/main.yml", "terraform/proxmox/main.tf",
    "terraform/proxmox/inventory.yml.tftpl", "roles/k3s_node/tasks/main.yml", "plugins/plugin_utils/state_dir.py",
    "plugins/filter/state_dir.py", "requirements.txt", "requirements.yml", "bindep.txt", "execution-environment.yml",
}


def _tracked():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                         capture_output=True, check=True).stdout.decode()
    return {name for name in out.split("\0") if name and (REPO / name).is_file() and not (REPO / name).is_symlink()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A checkout copy full of junk, built with ansible-galaxy: (tarball path, its file names, tracked files)."""
    root = tmp_path_factory.mktemp("packaging")
    src = root / "src"
    tracked = _tracked()
    for name in tracked:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    for name, content in PLANTED.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(content)
    (src / "collections" / "ansible_collections" / "cps").mkdir(parents=True)
    (src / "collections" / "ansible_collections" / "cps" / "gpu_cluster").symlink_to("../../..")
    dist = root / "dist"
    done = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(dist)], cwd=src,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    tarball = dist / TARBALL_NAME
    with tarfile.open(tarball) as tar:
        names = {member.name for member in tar.getmembers() if member.isfile()}
    return tarball, names, tracked


def test_tarball_holds_the_collection_and_nothing_else(built):
    names, tracked = built[1], built[2]
    shipped = names - {"MANIFEST.json", "FILES.json"}
    assert not shipped - tracked, f"files in the tarball that are not part of the checkout: {sorted(shipped - tracked)}"
    assert tracked - shipped == NOT_SHIPPED, f"tracked files missing from the tarball: {sorted(tracked - shipped - NOT_SHIPPED)}"
    assert ESSENTIAL <= shipped, sorted(ESSENTIAL - shipped)
    for name in PLANTED:
        assert name not in names
    assert not [n for n in names if n.startswith(("collections/", ".ansible/", ".venv/", "build/", "lab/.state/"))]
    assert not [n for n in names if re.search(r"\.tfstate|\.terraform|__pycache__|\.pyc$|/\.gpu-cluster/", n)]
    assert {n.split("/")[1] for n in names if n.startswith("inventories/")} == {"homelab"}


def _documented_commands():
    """The shell lines of the block docs/installing.md marks as tested."""
    text = DOC.read_text()
    block = re.search(r"<!-- tested: tests/integration/test_installed_collection\.py -->\n```sh\n(.*?)```", text, re.S)
    assert block, "docs/installing.md lost its tested command block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


GUIDE = REPO / "docs" / "getting-started.md"
# A terminal for a command that asks for the vault password (--ask-vault-pass reads it with getpass from
# the terminal): answers the prompt with TEST_VAULT_ANSWER and prints what the terminal showed.
TERMINAL = r"""
import os, pty, sys
answer = os.environ.pop("TEST_VAULT_ANSWER").encode() + b"\n"
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
shown, answered = b"", False
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
    if not answered and b"Vault password" in shown:
        os.write(fd, answer)
        answered = True
sys.stdout.buffer.write(shown)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def _guide_commands():
    """docs/getting-started.md section 5: the preflight and provision --check lines (site and verify need
    the real Proxmox host)."""
    section = GUIDE.read_text().split("## 5.", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    wanted = ("ansible-playbook cps.gpu_cluster.preflight", "ansible-playbook cps.gpu_cluster.provision")
    return [line for line in block.splitlines() if line.startswith(wanted)]


def _tree(path):
    """Every file and directory under path with its mode and content."""
    return {str(p.relative_to(path)): (p.stat().st_mode, b"" if p.is_dir() else p.read_bytes()) for p in sorted(path.rglob("*"))}


def _listing(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_documented_commands_from_the_installed_tarball(built, tmp_path):
    tarball = built[0]
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy2(tarball, home / TARBALL_NAME)
    # what a user has for provision --check (docs/installing.md): an SSH key, the API token in the
    # environment and terraform on PATH; here a stand-in that writes what terraform writes (init:
    # .terraform/ and the lock file in its working directory) and needs no registry
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "id_ed25519.pub").write_text(KEY + "\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "terraform").write_text(FAKE_TERRAFORM)
    (tools / "terraform").chmod(0o755)
    # and helm (docs/getting-started.md, section 1): preflight asks for it, the homelab delivers directly
    shutil.copy(REPO / "tests" / "fixtures" / "tools" / "helm-cli" / "helm", tools / "helm")
    # the vault (docs/installing.md): the user's password file, and an $EDITOR that types the homelab's
    # secrets into the file ansible-vault create opens (the real ansible-vault encrypts it)
    (home / ".vault-pass").write_text("vault-password-of-the-test\n")
    (home / ".vault-pass").chmod(0o600)
    vault_values = (REPO / "tests" / "fixtures" / "homelab-vault.yml").read_text()
    (tools / "editor").write_text(f"#!/bin/sh\ncat > \"$1\" <<'EOF'\n{vault_values}EOF\n")
    (tools / "editor").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "PROXMOX_"))}
    env.update(HOME=str(home), PATH="{}:{}:{}".format(BIN, tools, os.environ.get("PATH", "/usr/bin:/bin")),
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default",
               PROXMOX_VE_API_TOKEN="terraform@pve!gpu-cluster=00000000-0000-0000-0000-000000000000",
               FAKE_TF_LOG=str(tmp_path / "terraform.log"), EDITOR=str(tools / "editor"))
    installed = home / ".ansible" / "collections" / "ansible_collections" / "cps" / "gpu_cluster"
    outputs = []
    commands = _documented_commands()
    assert [c.split()[0] for c in commands] == [
        "ansible-galaxy", "cp", "ansible-vault", "ansible-playbook", "ansible-playbook", "ansible-playbook"]
    for command in commands:
        if "--check" in command:  # issue 43: check mode writes nothing under the inventory
            before = _tree(home / "homelab")
        argv = ["bash", "-euo", "pipefail", "-c", command]
        if command.startswith("ansible-vault create"):  # opens $EDITOR in the user's terminal: give it one
            argv = [sys.executable, "-c", "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)", *argv]
        done = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        outputs.append(done.stdout)
        if "--check" in command:
            assert _tree(home / "homelab") == before, sorted(set(_tree(home / "homelab")) ^ set(before))
            assert "Planned (check mode, nothing changed)" in done.stdout
            assert "plan" in (tmp_path / "terraform.log").read_text()
        if command.startswith("ansible-galaxy"):
            shipped = _listing(installed)
            assert "playbooks/site.yml" in shipped and not (installed / "collections").exists()
    # issue 43: preflight judged the vaulted values (the homelab without them is refused:
    # tests/integration/test_preflight.py), read from a really encrypted file, and printed none of them
    vault = (home / "homelab" / "group_vars" / "all" / "vault.yml").read_text()
    assert vault.startswith("$ANSIBLE_VAULT;1.1;AES256"), vault[:40]
    for line in vault_values.splitlines():
        if line.startswith("vault_"):
            secret = line.split(":", 1)[1].strip()
            assert secret not in vault and not any(secret in out for out in outputs)
    preflight, render = outputs[3], outputs[4]
    assert "Inventory OK: cluster homelab" in preflight
    assert "state in %s" % (home / "homelab" / ".gpu-cluster") in preflight
    rendered = home / "homelab-render" / "homelab"
    bundles = {p.name for p in rendered.iterdir()}
    assert {"nfs-subdir-external-provisioner", "gpu-operator", "fast-scratch"} <= bundles, bundles
    for bundle in bundles:
        assert (rendered / bundle / "fleet.yaml").is_file()
    assert "failed=0" in render
    # nothing was written into the installed collection
    assert _listing(installed) == shipped

    # docs/getting-started.md section 5, as typed: --ask-vault-pass answered in a terminal
    guide = _guide_commands()
    assert len(guide) == 2 and all("--ask-vault-pass" in line for line in guide), guide
    password = (home / ".vault-pass").read_text().strip()
    for line in guide:
        before = _tree(home / "homelab")
        done = subprocess.run([sys.executable, "-c", TERMINAL, "bash", "-euo", "pipefail", "-c", line], cwd=home,
                              env=dict(env, TEST_VAULT_ANSWER=password), capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0, f"{line}\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
        assert "Vault password" in done.stdout and password not in done.stdout
        assert "Inventory OK: cluster homelab" in done.stdout, done.stdout[-3000:]
        if "--check" in line:
            assert _tree(home / "homelab") == before
            assert "Planned (check mode, nothing changed)" in done.stdout

    # the reference inventory inside the installed collection is refused: its state would go with it
    refused = subprocess.run(["ansible-playbook", "cps.gpu_cluster.preflight", "-i", str(installed / "inventories" / "homelab")],
                             cwd=home, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert refused.returncode != 0
    assert "is inside the installed collection" in refused.stdout
    assert f"cp -r {installed}/inventories/homelab ~/homelab" in refused.stdout
