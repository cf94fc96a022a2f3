"""site.yml: a cluster node that does not answer is told whether its VM exists (issue 43).

A new user who runs ``site.yml --tags k3s`` (or turned provisioning off) before the VMs exist used to
get Ansible's bare ``UNREACHABLE!`` in the middle of K3s. site.yml now asks every node for a connection
before K3s and stops there, naming for each silent node whether its VM is in the Terraform state that
provision.yml keeps (``<inventory>/.gpu-cluster/terraform/terraform.tfstate`` by default,
docs/installing.md): run provision.yml first; a VM that exists is named, to start it, and the run goes on
without it (as k3s.yml leaves a node that does not answer out, docs/k3s.md). The servers answer through the local
connection; the GPU workers do not answer (ssh's ProxyCommand ``false`` closes the connection at once,
which Ansible's ssh connection reports as UNREACHABLE, as for a VM that does not exist)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
STATE = REPO / "tests" / "fixtures" / "terraform" / "vms-state.json"  # cp1-cp3 and wk-gpu1 exist (SOURCES.md)


@pytest.fixture()
def site(tmp_path):
    inventory = tmp_path / "homelab"
    shutil.copytree(REPO / "inventories" / "homelab", inventory)
    # the user's vault beside it (docs/getting-started.md section 4), decrypted: site.yml's preflight needs it
    shutil.copy(REPO / "tests" / "fixtures" / "homelab-vault.yml", inventory / "group_vars" / "all" / "vault.yml")
    host_vars = inventory / "host_vars"
    host_vars.mkdir()
    for server in ("cp1", "cp2", "cp3"):
        (host_vars / f"{server}.yml").write_text(f"---\nansible_connection: local\nansible_python_interpreter: {sys.executable}\n")
    for worker in ("wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"):
        (host_vars / f"{worker}.yml").write_text("---\nansible_ssh_common_args: -o ProxyCommand=false\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default")

    def run():
        done = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/site.yml", "-i", str(inventory), "--tags", "k3s"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        return done.returncode, done.stdout + done.stderr

    return inventory, run


def failures(out):
    """{host: message} of the failed tasks."""
    return dict(re.findall(r'fatal: \[([\w.-]+)\]: FAILED! => .*?"msg": "(.*?)"\s*\}', out, re.S))


def test_without_a_terraform_state_the_silent_nodes_are_told_to_run_provision_first(site):
    inventory, run = site
    rc, out = run()
    assert rc != 0, out
    found = failures(out)
    assert sorted(found) == ["wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"], out
    state = inventory / ".gpu-cluster" / "terraform" / "terraform.tfstate"
    assert found["wk-gpu2"].startswith(f"wk-gpu2 (10.0.0.22) does not answer over SSH: there is no Terraform state at {state}"), out
    assert "run playbooks/provision.yml first" in found["wk-gpu2"]
    # the run ends there: no K3s task ran on the servers that answered
    assert "k3s_install" not in out and "k3s_node" not in out, out


def test_an_existing_vm_is_told_apart_from_a_missing_one(site):
    inventory, run = site
    state = inventory / ".gpu-cluster" / "terraform" / "terraform.tfstate"
    state.parent.mkdir(parents=True)
    shutil.copy(STATE, state)
    rc, out = run()
    assert rc != 0, out
    found = failures(out)
    # wk-gpu1's VM exists: a warning, and the run would go on without it; the others were never created: stop
    assert sorted(found) == ["wk-gpu2", "wk-gpu3", "wk-gpu4"], out
    assert "WARNING wk-gpu1 (10.0.0.21) does not answer over SSH: its VM exists (vm_id 201 on Proxmox node pve1" in out
    assert found["wk-gpu3"].startswith(f"wk-gpu3 (10.0.0.23) does not answer over SSH: no VM of that name is in the "
                                       f"Terraform state at {state}"), out
    assert "k3s_install" not in out and "k3s_node" not in out, out
