"""playbooks/provision.yml end to end against a stand-in terraform binary that
records its argv (no Proxmox, no provider): --check runs `terraform plan` and
never `apply`; a normal run applies, refreshes the inventory and waits on every
VM of k3s_cluster; the -var arguments carry the inventory's IPs, sizes and GPU
mappings. Where a real terraform exists, those -var arguments are also fed to
`terraform console` on the module's variables and locals, which must resolve
them to the same VMs the Python mirror computes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit" / "terraform"))

from terraform_helpers import MODULE, resolve  # noqa: E402

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook") or str(REPO / ".venv" / "bin" / "ansible-playbook")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBvBmS0ZtZQwZ7u0Xo0N9c0Gk2j3pNwqKp8Y3mJ1bQ9x ci@test"

FAKE = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_TF_LOG"], "a") as log:
    log.write(json.dumps({"argv": args, "token": bool(os.environ.get("PROXMOX_VE_API_TOKEN")), "cwd": os.getcwd(),
                          "state": os.path.exists("terraform.tfstate")}) + "\n")
# what terraform writes into its working directory: init the providers (.terraform/) and the dependency
# lock file (Terraform docs, "Initialize a working directory": "terraform init" creates .terraform and
# .terraform.lock.hcl), apply the local backend's state (terraform.tfstate)
if args[:1] == ["init"]:
    os.makedirs(".terraform/providers", exist_ok=True)
    with open(".terraform.lock.hcl", "w") as lock:
        lock.write("# This file is maintained automatically by terraform init.\n")
if os.environ.get("FAKE_TF_FAIL") == "init" and args[:1] == ["init"]:
    # terraform init without access to the registry (its message, internal/getproviders)
    sys.stderr.write("Error: Failed to query available provider packages\n\nCould not retrieve the list of available "
                     "versions for provider bpg/proxmox: could not connect to registry.terraform.io: failed to request "
                     "discovery document: Get \"https://registry.terraform.io/.well-known/terraform.json\": dial tcp: "
                     "lookup registry.terraform.io: no such host\n")
    sys.exit(1)
failing = {"1": (["plan"], ["apply"]), "apply": (["apply"],)}.get(os.environ.get("FAKE_TF_FAIL", ""), ())
if args[:1] in failing:
    token = os.environ.get("PROXMOX_VE_API_TOKEN", "")
    print("proxmox_virtual_environment_vm.control_plane: Refreshing state... token " + token)
    # as terraform does for a variable it cannot use: the value in the error
    for value in [args[i + 1] for i, a in enumerate(args) if a == "-var"]:
        sys.stderr.write("Error: Invalid value for input variable: " + value + "\n")
    sys.stderr.write("Error: error creating VM wk-gpu1: received an HTTP 401 response - "
                     "Reason: authentication failure for token " + token + "\n")
    sys.exit(1)
if args[:2] == ["version", "-json"]:
    print(json.dumps({"terraform_version": "1.9.8"}))
elif args[:2] == ["workspace", "list"]:
    print("* default")
elif args[:1] == ["plan"]:
    open(args[args.index("-out") + 1], "w").close()
    sys.exit(2)
elif args[:1] == ["show"]:
    print(json.dumps({"resource_changes": [{"address": "proxmox_virtual_environment_vm.gpu_worker[\"wk-gpu1\"]",
                                            "change": {"actions": ["create"], "before": None, "after": {}}}]}))
elif args[:1] == ["apply"]:
    with open("terraform.tfstate", "w") as state:
        state.write('{"version": 4, "serial": 1}\n')
    print("Apply complete! Resources: 8 added, 0 changed, 0 destroyed.")
elif args[:1] == ["output"]:
    print(json.dumps({"inventory_path": {"value": "/tmp/generated.yml"}}))
"""


@pytest.fixture()
def setup(tmp_path):
    fake = tmp_path / "terraform"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories" / "homelab", inventory)
    # the VMs "answer" through the local connection, so the wait play really runs
    (inventory / "group_vars" / "k3s_cluster.yml").write_text("---\nansible_connection: local\nansible_python_interpreter: "
                                                              + sys.executable + "\n")
    log = tmp_path / "terraform.log"
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default",
               FAKE_TF_LOG=str(log), PROXMOX_VE_API_TOKEN="terraform@pve!gpu-cluster=00000000")
    extra = json.dumps({"gpu_cluster_terraform_binary": str(fake), "gpu_cluster_provision_ssh_public_keys": [KEY],
                        "gpu_cluster_provision_ssh_timeout": 30})

    def run(*args, environment=None):
        done = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/provision.yml", "-i", str(inventory), "-e", extra, *args],
                              cwd=REPO, env=dict(env, **(environment or {})), capture_output=True, text=True,
                              timeout=300, check=False)
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        return done, calls

    return run


def test_check_mode_with_terraform_on_path_and_every_setting_at_its_default(setup, tmp_path):
    # as a user has it: terraform found on PATH, gpu_cluster_terraform_binary not set. The module
    # got the bare name 'terraform' and refused it ("Path for Terraform binary 'terraform' doesn't
    # exist on this host": it checks os.path.exists relative to its working directory).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "terraform").rename(bin_dir / "terraform")
    done, calls = setup("--check", "-e", "gpu_cluster_terraform_binary=terraform",
                        environment={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "plan" in [c["argv"][0] for c in calls]
    assert "Planned (check mode, nothing changed)" in done.stdout


def var_args(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-var"]


def test_check_mode_plans_only(setup):
    done, calls = setup("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    verbs = [c["argv"][0] for c in calls]
    assert "plan" in verbs and "apply" not in verbs, verbs
    assert all(c["token"] for c in calls), "the API token reaches terraform through the environment"
    assert "SKIPPED provision" not in done.stdout
    assert "Planned (check mode, nothing changed)" in done.stdout
    assert "Wait until the VM answers over SSH" not in done.stdout


def tree(path: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and directory under path: its mode and content (directories: b'')."""
    return {str(p.relative_to(path)): (p.stat().st_mode, b"" if p.is_dir() else p.read_bytes())
            for p in sorted(path.rglob("*"))}


def test_check_mode_writes_nothing_under_the_inventory(setup, tmp_path):
    """Issue 43: provision.yml --check changes nothing. It wrote the Terraform working directory
    (.gpu-cluster/terraform/*.tf) beside the inventory, and terraform init wrote .terraform/ and the
    lock file there. Before the first apply and after it: the inventory's tree is the same after --check,
    and the plan still reads the state the apply left (it runs in a copy outside the inventory)."""
    inventory = tmp_path / "inventory"
    before = tree(inventory)
    done, calls = setup("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "plan" in [c["argv"][0] for c in calls]
    assert tree(inventory) == before, sorted(set(tree(inventory)) ^ set(before))
    plans = [c for c in calls if c["argv"][0] in ("init", "plan")]
    assert all(not c["cwd"].startswith(str(inventory)) for c in plans), plans
    assert not any(Path(c["cwd"]).exists() for c in plans), "the scratch copy is removed"
    done, calls = setup()  # apply: the state directory gets the module, the providers and the state
    assert done.returncode == 0, done.stdout + done.stderr
    state = inventory / ".gpu-cluster" / "terraform"
    assert (state / "terraform.tfstate").exists() and (state / "main.tf").exists()
    before = tree(inventory)
    done, calls = setup("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(inventory) == before, sorted(set(tree(inventory)) ^ set(before))
    plans = [c for c in calls if c["argv"][0] == "plan"]
    assert plans and all(c["state"] for c in plans), "the plan reads the state the apply left"


def test_apply_refreshes_and_waits_for_every_vm(setup):
    done, calls = setup()
    assert done.returncode == 0, done.stdout + done.stderr
    verbs = [c["argv"][0] for c in calls]
    assert verbs.index("plan") < verbs.index("apply"), verbs
    # terraform apply changed the VMs (the first run in a new state directory also creates it and
    # copies the module there: more changed tasks than the apply alone)
    assert re.search(r"localhost\s+: ok=\d+\s+changed=[1-9]", done.stdout), done.stdout
    assert "changed=True" in done.stdout, done.stdout
    waited = set(re.findall(r"ok: \[([^\]]+)\]", done.stdout.split("TASK [Wait until the VM answers over SSH]")[1]))
    assert waited == {"cp1", "cp2", "cp3", "wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"}


def test_var_arguments_carry_the_inventory(setup, tmp_path):
    done, calls = setup("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    plan = next(c["argv"] for c in calls if c["argv"][0] == "plan")
    variables = dict(arg.split("=", 1) for arg in var_args(plan))
    assert variables["template_vm_id"] == "9000"
    assert variables["proxmox_node"] == "pve1"
    assert variables["scratch_storage"] == "nvme-scratch"
    assert 'wk-gpu3={ip="10.0.0.23"' in variables["gpu_workers"]
    assert 'gpu_mappings=["a100-4","a100-5"]' in variables["gpu_workers"]
    assert KEY in variables["ssh_public_keys"]
    assert "gpu_cluster_k3s_version" in variables["inventory_vars"]


@pytest.mark.skipif(shutil.which("terraform") is None, reason="no terraform binary to parse the -var values")
def test_var_arguments_parse_in_terraform(setup, tmp_path):
    done, calls = setup("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    plan = next(c["argv"] for c in calls if c["argv"][0] == "plan")
    variables = dict(arg.split("=", 1) for arg in var_args(plan))
    terraform = shutil.which("terraform")
    for name in ("variables.tf", "locals.tf", "inventory.yml.tftpl"):
        shutil.copy(MODULE / name, tmp_path / name)
    console = subprocess.run([terraform, "console", *[x for a in var_args(plan) for x in ("-var", a)]],
                             input="jsonencode(local.gpu_workers)\n", cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, check=False, env=dict(os.environ, TF_CLI_CONFIG_FILE=os.devnull))
    assert console.returncode == 0 and console.stdout.strip(), console.stderr
    assert json.loads(json.loads(console.stdout)) == resolve(parsed_vars(variables))["gpu_workers"]


def parsed_vars(variables: dict[str, str]) -> dict:
    """The -var values of the homelab, as the Python mirror needs them (only the fields it reads)."""
    workers = {}
    for name, ip, preset, cores, mem, disk, scratch, gpus, model, maps in re.findall(
            r'([\w-]+)=\{ip="([\d.]+)",preset="(\w+)",cores=(\d+),memory_mb=(\d+),disk_gb=(\d+),scratch_disk_gb=(\d+),'
            r'gpus=(\d+),gpu_model="([^"]*)",gpu_mappings=\[([^\]]*)\]\}', variables["gpu_workers"]):
        workers[name] = {"ip": ip, "preset": preset, "cores": int(cores), "memory_mb": int(mem), "disk_gb": int(disk),
                         "scratch_disk_gb": int(scratch), "gpus": int(gpus), "gpu_model": model,
                         "gpu_mappings": json.loads(f"[{maps}]")}
    assert len(workers) == 4, variables["gpu_workers"]
    return {"proxmox_node": "pve1", "proxmox_host_address": "10.0.0.2", "template_vm_id": 9000, "scratch_storage": "x",
            "cluster_name": "homelab", "node_network": "10.0.0.0/24", "gateway": "10.0.0.1", "dns_servers": [],
            "gpu_workers": workers}


SECRET = "00000000"
TOKEN = "terraform@pve!gpu-cluster=" + SECRET


# -vvv too: an exported PROXMOX_VE_API_TOKEN is inherited, never put in the task's environment
# (which ansible-core prints in its EXEC line at -vvv).
@pytest.mark.parametrize("args", [(), ("-v",), ("--check",), ("--check", "-v", "--diff"), ("-vv", "--diff"),
                                  ("-vvv",), ("--check", "-vvv", "--diff")])
def test_terraform_failure_shows_its_error_without_the_token(setup, args):
    done, calls = setup(*args, environment={"FAKE_TF_FAIL": "1",
                                            "PROXMOX_VE_API_TOKEN": TOKEN})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert any(c["argv"][0] == "plan" for c in calls), calls
    assert "received an HTTP 401 response - Reason: authentication failure for token <redacted>" in out, out[-3000:]
    assert "Refreshing state... token <redacted>" in out
    # the stand-in fails at the plan, which community.general.terraform runs before an apply too
    assert "terraform plan in " in out and "terraform apply in " not in out
    assert SECRET not in out, "the Proxmox API token secret leaked"
    assert "SKIPPED provision" not in out


@pytest.mark.parametrize(("fail", "args", "step"), [("init", ("--check",), "terraform init (the provider download) in "),
                                                    ("init", (), "terraform init (the provider download) in "),
                                                    ("apply", (), "terraform apply in ")])
def test_terraform_failure_names_the_step_that_failed(setup, fail, args, step):
    """Issue 43: a failed provider download says it is terraform init and what to do without registry
    access (a provider mirror, gpu_cluster_terraform_plugin_paths); a failed apply says apply."""
    done, calls = setup(*args, environment={"FAKE_TF_FAIL": fail})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert step in out, out[-3000:]
    if fail == "init":
        assert "could not connect to registry.terraform.io" in out
        assert "terraform providers mirror" in out and "gpu_cluster_terraform_plugin_paths" in out
        assert "plan" not in [c["argv"][0] for c in calls]
    else:
        assert [c["argv"][0] for c in calls if c["argv"][0] in ("plan", "apply")] == ["plan", "apply"]


def test_terraform_failure_redacts_a_secret_given_alone(setup):
    """PROXMOX_TOKEN_SECRET with gpu_cluster_proxmox_api_token_id: the secret part is redacted too."""
    secret = "5ec4e7-5ec4e7-5ec4e7"
    done, _calls = setup("-v", "-e", "gpu_cluster_proxmox_api_token_id=terraform@pve!gpu-cluster",
                         environment={"FAKE_TF_FAIL": "1", "PROXMOX_VE_API_TOKEN": "", "PROXMOX_TOKEN_SECRET": secret})
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "authentication failure for token <redacted>" in out, out[-3000:]
    assert secret not in out


def test_missing_token_fails_outside_the_lab(setup):
    done, calls = setup(environment={"PROXMOX_VE_API_TOKEN": "", "PROXMOX_TOKEN_SECRET": ""})
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "FAILED provision: no Proxmox API token in the environment" in out
    assert "SKIPPED provision" not in out
    assert not [c for c in calls if c["argv"][0] in ("plan", "apply")]


def test_missing_terraform_fails_outside_the_lab(setup):
    done, _calls = setup("-e", "gpu_cluster_terraform_binary=/nonexistent/terraform")
    assert done.returncode != 0
    # preflight says it before anything is touched (issue 43: terraform for provision.yml, run_needs)
    assert "no terraform CLI on the control node (/nonexistent/terraform is not on PATH)" in done.stdout, done.stdout
    assert "PLAY [Phase provision]" not in done.stdout


def test_lab_and_switched_off_skip(setup):
    for extra, line in (('{"gpu_cluster_lab": true}', "SKIPPED provision: lab inventory (gpu_cluster_lab)"),
                        ('{"gpu_cluster_provision_enabled": false}', "SKIPPED provision: gpu_cluster_provision_enabled is false")):
        done, calls = setup("-e", extra, environment={"PROXMOX_VE_API_TOKEN": ""})
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count(line) == 1, done.stdout
        assert "FAILED provision" not in done.stdout and not calls


VAULTED = {"vault_gpu_cluster_rancher_bootstrap_password": "rancher-bootstrap-v4ult",
           "vault_gpu_cluster_fleet_git_password": "fleet-git-v4ult",
           "gpu_cluster_jupyterhub_oauth": {"client_id": "hub", "client_secret": "oauth-client-v4ult"},
           "gpu_cluster_proxmox_api_token_secret": "pve-token-v4ult"}


@pytest.mark.parametrize("args", [(), ("--check", "-vvv", "--diff")])
def test_terraform_failure_prints_no_vaulted_value(setup, args):
    """Issue 27: every gpu_cluster_* value reached Terraform as -var, so a failed plan printed the
    Rancher bootstrap password, the Fleet token and the OAuth secret (the stand-in prints every -var
    value, as terraform does for a value it refuses). No vaulted value reaches Terraform now: not in
    its arguments (nor its plan and state), not in the output."""
    done, calls = setup(*args, "-e", json.dumps(VAULTED), environment={"FAKE_TF_FAIL": "1"})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert any(c["argv"][0] == "plan" for c in calls), calls
    assert "Invalid value for input variable" in out, out[-3000:]  # the stand-in did print the -var values
    arguments = json.dumps([c["argv"] for c in calls])
    for secret in ("rancher-bootstrap-v4ult", "fleet-git-v4ult", "oauth-client-v4ult", "pve-token-v4ult"):
        assert secret not in out, f"{secret} printed"
        assert secret not in arguments, f"{secret} passed to terraform"
    assert "vault_gpu_cluster_rancher_bootstrap_password" in arguments  # the generated inventory refers to it
