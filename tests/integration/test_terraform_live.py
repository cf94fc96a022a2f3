"""Live tier: `terraform init` + `terraform validate` + `terraform plan` of
terraform/proxmox against a real Proxmox VE, with the variables
playbooks/provision.yml derives from an inventory. Plans only; creates nothing.

Runs when PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN ("user@realm!name=secret") are set, and
needs a terraform binary then (able to download or find the pinned providers): without one the
tier fails saying so (issue 19). GPU_CLUSTER_INVENTORY picks the inventory (default
inventories/homelab). Skipped, with the reason, only when the variables are unset."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit" / "terraform"))

from terraform_helpers import MODULE, SSH_KEY, tfvars_from_inventory  # noqa: E402

TERRAFORM = shutil.which("terraform")
MISSING = [name for name in ("PROXMOX_VE_ENDPOINT", "PROXMOX_VE_API_TOKEN") if not os.environ.get(name)]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason="live tier: set " + " and ".join(MISSING) + " to plan against a real Proxmox VE")


def terraform(workdir: Path, *args: str, check_codes=(0,)) -> subprocess.CompletedProcess:
    done = subprocess.run([TERRAFORM, *args], cwd=workdir, capture_output=True, text=True, timeout=900, check=False,
                          env=dict(os.environ, TF_IN_AUTOMATION="1", TF_INPUT="0"))
    assert done.returncode in check_codes, f"terraform {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def test_plan_against_real_proxmox(tmp_path):
    if TERRAFORM is None:
        pytest.fail("live tier: PROXMOX_VE_ENDPOINT is set but no terraform binary is on PATH "
                    "(install terraform >= 1.5 or OpenTofu, see docs/provision.md)")
    inventory = Path(os.environ.get("GPU_CLUSTER_INVENTORY", REPO / "inventories" / "homelab"))
    listed = subprocess.run([shutil.which("ansible-inventory") or str(REPO / ".venv/bin/ansible-inventory"),
                             "-i", str(inventory), "--list"], cwd=REPO, capture_output=True, text=True, check=True,
                            env=dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))).stdout
    tfvars = tfvars_from_inventory(json.loads(listed))
    tfvars["proxmox_endpoint"] = os.environ["PROXMOX_VE_ENDPOINT"]
    tfvars["proxmox_insecure"] = os.environ.get("PROXMOX_VE_INSECURE", "false").lower() in ("1", "true", "yes")
    keys = os.environ.get("GPU_CLUSTER_SSH_PUBLIC_KEY")
    tfvars["ssh_public_keys"] = [keys] if keys else [SSH_KEY]
    tfvars["inventory_path"] = str(tmp_path / "generated.yml")

    workdir = tmp_path / "module"
    shutil.copytree(MODULE, workdir, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "generated"))
    (workdir / "live.tfvars.json").write_text(json.dumps(tfvars))
    terraform(workdir, "init", "-input=false", "-no-color")
    terraform(workdir, "validate", "-no-color")
    plan = terraform(workdir, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-var-file=live.tfvars.json",
                     check_codes=(0, 2))
    for name in list(tfvars["control_planes"]) + list(tfvars["gpu_workers"]):
        assert f'["{name}"]' in plan.stdout, f"{name} is not in the plan"
    if tfvars["gpu_workers"]:
        assert "hostpci" in plan.stdout
