"""Cross-check of the Python mirror of locals.tf and of the inventory renderer against Terraform
itself (`terraform console`, or OpenTofu's `tofu console`). Only variables.tf, locals.tf and the
template are copied: they need no provider, so the console evaluates them offline.

Without a terraform (or tofu) binary these tests FAIL, saying how to install one: the parser-based
tests read the HCL but do not evaluate it, so nothing else proves the mirror computes what
Terraform computes. `GPU_CLUSTER_TERRAFORM_CONSOLE=skip` skips them on purpose, and the skip
reason says what then goes unchecked (issue 19)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from terraform_helpers import MODULE, SSH_KEY, render_template, resolve

TERRAFORM = shutil.which("terraform") or shutil.which("tofu")
OPT_OUT = os.environ.get("GPU_CLUSTER_TERRAFORM_CONSOLE") == "skip"
INSTALL = ("no terraform (>= 1.5) or tofu binary on PATH: the terraform console cross-check cannot run. Install one "
           "(Terraform: the HashiCorp apt repository, `apt-get install terraform`, or the release zip from "
           "releases.hashicorp.com into /usr/local/bin; OpenTofu: its apt repository or release package). No PyPI, npm "
           "or Debian package ships a current one, so scripts/install-host-deps.sh installs it only where an apt "
           "source offers it. To skip on purpose: GPU_CLUSTER_TERRAFORM_CONSOLE=skip (then the Python mirror of "
           "locals.tf is not checked against Terraform).")
pytestmark = pytest.mark.skipif(OPT_OUT, reason="GPU_CLUSTER_TERRAFORM_CONSOLE=skip: the Python mirror of locals.tf "
                                "and the inventory renderer are NOT checked against terraform console")


@pytest.fixture(autouse=True)
def _terraform_binary():
    if TERRAFORM is None:
        pytest.fail(INSTALL, pytrace=False)


BASE = {"proxmox_node": "pve9", "proxmox_host_address": "192.168.5.2", "template_vm_id": 9001,
        "scratch_storage": "fast", "cluster_name": "tiny", "node_network": "192.168.5.0/24",
        "gateway": "192.168.5.1", "dns_servers": ["192.168.5.1"], "ssh_public_keys": [SSH_KEY]}


def console(tmp_path, tfvars: dict, expression: str) -> subprocess.CompletedProcess:
    for name in ("variables.tf", "locals.tf", "inventory.yml.tftpl"):
        shutil.copy(MODULE / name, tmp_path / name)
    (tmp_path / "test.tfvars.json").write_text(json.dumps(tfvars))
    env = dict(os.environ, TF_IN_AUTOMATION="1", TF_CLI_CONFIG_FILE=os.devnull, CHECKPOINT_DISABLE="1")
    return subprocess.run([TERRAFORM, "console", "-var-file=test.tfvars.json"], input=expression + "\n", cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def evaluate(tmp_path, tfvars: dict, expression: str):
    done = console(tmp_path, tfvars, f"jsonencode({expression})")
    assert done.returncode == 0, done.stderr
    return json.loads(json.loads(done.stdout))


CASES = {
    "defaults": dict(BASE, gpu_pci_mappings=[f"g{i}" for i in range(8)]),
    "homelab": None,  # filled from the homelab fixture
    "one-each-by-address": dict(BASE, control_planes={"cp1": {"ip": "192.168.5.11", "vm_id": 150}},
                                gpu_workers={"gpu-a": {"ip": "192.168.5.40", "preset": "small", "cores": 12,
                                                       "gpu_addresses": ["0000:01:00.0"]}},
                                inventory_vars={"all": {"gpu_cluster_delivery": "direct"}, "gpu_workers": {"x": [1, "<"]}},
                                domain="lab.lan"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mirror_and_renderer_agree_with_terraform(case, tmp_path, homelab_tfvars):
    tfvars = homelab_tfvars if case == "homelab" else CASES[case]
    mirror = resolve(tfvars)
    for local in ("control_planes", "gpu_workers", "inventory_vars"):
        assert evaluate(tmp_path, tfvars, f"local.{local}") == mirror[local], local
    rendered = evaluate(tmp_path, tfvars, 'templatefile("inventory.yml.tftpl", local.inventory_vars)')
    assert rendered == render_template(mirror["inventory_vars"])


@pytest.mark.parametrize(("patch", "message"), [
    ({"control_plane_count": 2}, "control_plane_count must be odd"),
    ({"node_network": "10.0.0.0"}, "node_network must be an IPv4 network in CIDR form"),
    ({"ssh_public_keys": ["not a key"]}, "ssh_public_keys must hold at least one OpenSSH public key"),
    ({"gpu_worker_preset": "xl"}, "gpu_worker_preset must be small, medium or large"),
    ({"gpu_workers": {"w": {"ip": "192.168.5.9", "gpu_mappings": ["a"], "gpu_addresses": ["01:00.0"]}}}, "either by mapping name"),
    ({"gpu_workers": {"w": {"ip": "192.168.5.9", "gpu_addresses": ["1:0"]}}}, "must be a host PCI address"),
    ({"template_vm_id": 5}, "template_vm_id must be a Proxmox VM id"),
])
def test_validation_blocks_refuse(patch, message, tmp_path):
    done = console(tmp_path, dict(BASE, **patch), "local.prefix_length")
    output = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr).replace("│", " ").split())
    assert "Invalid value for variable" in output
    assert message in output


def test_fmt(tmp_path):
    done = subprocess.run([TERRAFORM, "fmt", "-check", "-diff", "-recursive", str(MODULE)], capture_output=True, text=True,
                          timeout=60, check=False, env=dict(os.environ, TF_CLI_CONFIG_FILE=os.devnull))
    assert done.returncode == 0, done.stdout + done.stderr
