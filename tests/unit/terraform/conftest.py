"""Fixtures of the terraform/proxmox tests: the homelab inventory as Ansible
resolves it, and the Terraform variables playbooks/provision.yml derives from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from terraform_helpers import REPO, tfvars_from_inventory

ANSIBLE_INVENTORY = shutil.which("ansible-inventory") or str(REPO / ".venv" / "bin" / "ansible-inventory")


def ansible_env() -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
                ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1")


def inventory_list(source) -> dict:
    """`ansible-inventory --list` of an inventory file or directory."""
    out = subprocess.run([ANSIBLE_INVENTORY, "-i", str(source), "--list"], cwd=REPO, env=ansible_env(),
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


@pytest.fixture(scope="session")
def homelab_list() -> dict:
    return inventory_list(REPO / "inventories" / "homelab")


@pytest.fixture(scope="session")
def homelab_tfvars(homelab_list) -> dict:
    return tfvars_from_inventory(homelab_list)
