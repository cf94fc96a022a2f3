"""Fixtures of the terraform/proxmox tests: the homelab inventory as Ansible
resolves it, and the Terraform variables playbooks/provision.yml derives from it."""

from __future__ import annotations

import pytest
from terraform_helpers import REPO, inventory_list, tfvars_from_inventory


@pytest.fixture(scope="session")
def homelab_list() -> dict:
    return inventory_list(REPO / "inventories" / "homelab")


@pytest.fixture(scope="session")
def homelab_tfvars(homelab_list) -> dict:
    return tfvars_from_inventory(homelab_list)
