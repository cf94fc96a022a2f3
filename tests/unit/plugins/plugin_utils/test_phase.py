"""phase: SKIPPED only in a lab or when switched off, FAILED anywhere else; secrets redacted."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import phase


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
