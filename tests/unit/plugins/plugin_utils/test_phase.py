"""phase: SKIPPED only in a lab or when switched off, FAILED anywhere else; secrets redacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import phase

REPO = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize("reason, lab, switched_off, status", [
    ("", False, False, ""),
    ("", True, True, ""),
    (None, False, False, ""),
    ("no kubeconfig", True, False, "SKIPPED"),
    ("no kubeconfig", "true", False, "SKIPPED"),
    ("no kubeconfig", "yes", False, "SKIPPED"),
    ("gpu_cluster_provision_enabled is false", False, True, "SKIPPED"),
    ("no kubeconfig", False, False, "FAIL"),
    ("no kubeconfig", "false", "False", "FAIL"),
    ("no kubeconfig", None, None, "FAIL"),
    ("no kubeconfig", 0, "", "FAIL"),
])
def test_cannot_run_status(reason, lab, switched_off, status):
    assert phase.cannot_run_status(reason, lab, switched_off) == status


def test_gate_lines():
    assert phase.phase_gate("", "storage") == {"status": "", "msg": ""}
    assert phase.phase_gate("kubeconfig /x does not exist", "storage", lab=True) == {
        "status": "SKIPPED", "msg": "SKIPPED storage: kubeconfig /x does not exist"}
    gate = phase.phase_gate("kubeconfig /x does not exist", "storage")
    assert gate["status"] == "FAIL"
    assert gate["msg"].startswith("FAILED storage: kubeconfig /x does not exist (outside a lab")


def test_gate_reason_is_one_line():
    gate = phase.phase_gate("no Kubernetes API server answers at 10.0.0.100:6443\n  (from /k)", "gpu", lab=True)
    assert gate["msg"] == "SKIPPED gpu: no Kubernetes API server answers at 10.0.0.100:6443 (from /k)"


def test_redact_longest_first_and_empty_secrets_ignored():
    token = "terraform@pve!gpu-cluster=5ec4e7"
    text = f"token {token}; secret 5ec4e7"
    assert phase.redact(text, [token, "5ec4e7", "", None]) == "token <redacted>; secret <redacted>"
    assert phase.redact(None, ["x"]) == ""
    assert phase.redact("nothing", []) == "nothing"


def test_command_failure_keeps_the_error_and_drops_the_token():
    result = {"failed": True, "rc": 1, "msg": "Error: 401 for token t@pve!n=s3cr3t",
              "stdout": "Refreshing... s3cr3t", "stderr": "Error: 401 for token t@pve!n=s3cr3t"}
    message = phase.command_failure(result, ["t@pve!n=s3cr3t", "s3cr3t"], "terraform apply in /tf")
    assert message == ("terraform apply in /tf failed (rc 1): Error: 401 for token <redacted>\n"
                       "stdout: Refreshing... <redacted>")
    assert "s3cr3t" not in message


def test_command_failure_without_output():
    assert phase.command_failure({}, ["x"]) == "the command failed"
    assert phase.command_failure(None, ["x"], "terraform plan") == "terraform plan failed"


def test_defaults_are_outside_a_lab_and_not_switched_off():
    """Killed mutants (make mutants): a reason with the defaults fails, it is not skipped."""
    assert phase.cannot_run_status("no kubeconfig") == phase.FAIL
    assert phase.cannot_run_status("no kubeconfig", lab=True) == phase.SKIPPED
    assert phase.cannot_run_status("no kubeconfig", switched_off=True) == phase.SKIPPED
    assert phase.phase_gate("no kubeconfig", "verify")["status"] == phase.FAIL


def test_redact_turns_any_value_into_text():
    assert phase.redact(42, []) == "42"
    assert phase.redact(["s3cr3t-token"], ["s3cr3t-token"]) == "['<redacted>']"


# The failed results as community.general.terraform returns them (plugins/modules/terraform.py):
# init_plugins() runs `terraform init` with run_command(check_rc=True), whose failure is
# fail_json(cmd=<the command line>, rc, stdout, stderr, msg=<stderr>) (ansible-core AnsibleModule.run_command);
# build_plan() fails with msg "Terraform plan could not be created..."; the apply with msg=<stderr>, rc.
INIT_FAILED = {"failed": True, "rc": 1, "cmd": "/usr/bin/terraform init -input=false -no-color",
               "msg": "Error: Failed to query available provider packages", "stdout": "", "stderr": "Error: Failed to query"}
PLAN_FAILED = {"failed": True, "msg": "Terraform plan could not be created\nSTDOUT: \nSTDERR: Error: 401\nCOMMAND: terraform plan"}
APPLY_FAILED = {"failed": True, "rc": 1, "msg": "Error: creating VM", "stderr": "Error: creating VM",
                "command": "/usr/bin/terraform apply -no-color -input=false -auto-approve /tmp/x.tfplan"}


@pytest.mark.parametrize(("result", "check_mode", "step"), [
    (INIT_FAILED, False, "init"), (INIT_FAILED, True, "init"), (dict(INIT_FAILED, cmd=["terraform", "init"]), False, "init"),
    (PLAN_FAILED, False, "plan"), (PLAN_FAILED, True, "plan"), (APPLY_FAILED, False, "apply"), (None, True, "plan"),
])
def test_terraform_step(result, check_mode, step):
    assert phase.terraform_step(result, check_mode) == step


def test_terraform_failure_of_the_provider_download_says_what_to_do_offline():
    message = phase.terraform_failure(INIT_FAILED, ["s3cr3t"], "/inv/.gpu-cluster/terraform", True)
    assert message.startswith("terraform init (the provider download) in /inv/.gpu-cluster/terraform failed (rc 1): Error: Failed")
    assert "terraform providers mirror" in message and "gpu_cluster_terraform_plugin_paths" in message
    assert phase.terraform_failure(APPLY_FAILED, [], "/tf").startswith("terraform apply in /tf failed (rc 1): Error: creating VM")
    assert phase.terraform_failure(PLAN_FAILED, [], "/tf").startswith("terraform plan in /tf failed: Terraform plan could not")


# A Terraform state as terraform writes it (tests/fixtures/SOURCES.md, terraform/): cp1-cp3 and wk-gpu1 exist.
STATE = (REPO / "tests" / "fixtures" / "terraform" / "vms-state.json").read_text()
STATE_PATH = "/home/me/homelab/.gpu-cluster/terraform/terraform.tfstate"
ADDRESSES = {"cp1": "10.0.0.11", "wk-gpu1": "10.0.0.21", "wk-gpu2": "10.0.0.22"}


def test_unreachable_nodes_every_node_answered():
    assert phase.unreachable_nodes([], ADDRESSES, STATE, STATE_PATH) == {"stop": False, "msg": ""}
    assert phase.unreachable_nodes(None, ADDRESSES, "", STATE_PATH) == {"stop": False, "msg": ""}


def test_unreachable_nodes_without_a_state_stop_and_say_run_provision_first():
    result = phase.unreachable_nodes(["cp1", "wk-gpu2"], ADDRESSES, "", STATE_PATH)
    assert result["stop"] is True
    lines = result["msg"].splitlines()
    assert lines[0] == "2 nodes do not answer over SSH:"
    assert lines[1].startswith(f"- cp1 (10.0.0.11): there is no Terraform state at {STATE_PATH}")
    assert "run playbooks/provision.yml first" in lines[1] and "run playbooks/provision.yml first" in lines[2]


def test_unreachable_nodes_tell_an_existing_vm_from_a_missing_one():
    result = phase.unreachable_nodes(["wk-gpu1", "wk-gpu2"], ADDRESSES, STATE, STATE_PATH)
    existing, missing = result["msg"].splitlines()[1:]
    assert existing.startswith("- wk-gpu1 (10.0.0.21): its VM exists (vm_id 201 on Proxmox node pve1")
    assert "qm start 201" in existing and "ansible_host" in existing
    assert missing.startswith(f"- wk-gpu2 (10.0.0.22): no VM of that name is in the Terraform state at {STATE_PATH}")
    assert "run playbooks/provision.yml" in missing
    assert result["stop"] is True  # a VM that was never created: nothing later can work on it


def test_an_existing_vm_that_does_not_answer_is_reported_and_the_run_goes_on():
    # as k3s.yml does with a node that does not answer (docs/k3s.md): it leaves the node out of the run
    result = phase.unreachable_nodes(["wk-gpu1"], ADDRESSES, STATE, STATE_PATH)
    assert result["stop"] is False
    assert result["msg"].startswith("wk-gpu1 (10.0.0.21) does not answer over SSH: its VM exists (vm_id 201 ")
    assert result["msg"].endswith("this run goes on without it")


def test_unreachable_nodes_read_only_the_vms_terraform_created():
    # the data source and the inventory file are in the state but are not VMs of this module
    result = phase.unreachable_nodes(["existing", "inventory"], {}, STATE, STATE_PATH)
    assert result["msg"].count("no VM of that name") == 2 and result["stop"] is True


@pytest.mark.parametrize("state", ["not json", "[]", '{"version": 4}', '{"resources": {}}'])
def test_unreachable_nodes_with_a_state_that_cannot_be_read(state):
    result = phase.unreachable_nodes(["cp1"], ADDRESSES, state, STATE_PATH)
    assert f"{STATE_PATH} is not a Terraform state this collection can read" in result["msg"]
    assert result["stop"] is True


def test_unreachable_nodes_in_a_lab_and_without_provisioning():
    result = phase.unreachable_nodes(["cp1"], ADDRESSES, STATE, STATE_PATH, True, True)
    assert "the lab's container is not running" in result["msg"] and result["stop"] is True
    result = phase.unreachable_nodes(["cp9"], ADDRESSES, STATE, STATE_PATH, "false", False)
    assert result["msg"].startswith("cp9 (cp9) does not answer over SSH: gpu_cluster_provision_enabled is false")
    assert result["stop"] is True


def test_no_local_state_of_a_module_of_ones_own_is_unknown_not_absent():
    # gpu_cluster_terraform_dir: the user's module may keep its state in a remote backend (no terraform.tfstate
    # in its directory), so the missing file says nothing about the VM: reported, and the run goes on
    result = phase.unreachable_nodes(["wk-gpu2"], ADDRESSES, "", STATE_PATH, True, False, True)
    assert result["stop"] is False
    assert "whether its VM exists is unknown" in result["msg"] and "remote backend" in result["msg"]
    # the collection's own module keeps a local state: no file means never provisioned
    assert phase.unreachable_nodes(["wk-gpu2"], ADDRESSES, "", STATE_PATH, True, False, False)["stop"] is True
    # a local state of one's own module is read as any other
    assert phase.unreachable_nodes(["wk-gpu2"], ADDRESSES, STATE, STATE_PATH, True, False, True)["stop"] is True
