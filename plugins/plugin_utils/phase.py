# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a phase does when it cannot run, and failure messages with secrets taken out.

The one rule for every phase playbook (docs/development.md): a phase, or a part of one, that cannot
run says ``SKIPPED <phase>: <reason>`` and carries on only in a lab (``gpu_cluster_lab: true``) or
when the user switched that part off; anywhere else it fails with ``FAILED <phase>: <reason>``, so
``site.yml`` stops instead of going on to hosts that do not exist. Pure functions, unit-tested.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

RUN = ""
SKIPPED = "SKIPPED"
FAIL = "FAIL"
REDACTED = "<redacted>"


def _flag(value):
    """A boolean inventory value (YAML bool, or the strings Ansible's bool filter accepts)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def cannot_run_status(reason, lab=False, switched_off=False):
    """``""`` when there is no reason not to run; ``"SKIPPED"`` in a lab or for a part the user switched
    off; ``"FAIL"`` otherwise."""
    if not reason:
        return RUN
    if _flag(switched_off) or _flag(lab):
        return SKIPPED
    return FAIL


def phase_gate(reason, phase, lab=False, switched_off=False):
    """``{"status", "msg"}`` for one phase (or ``"<phase>: <part>"``) given why it cannot run.

    ``status`` is ``""`` (run), ``"SKIPPED"`` or ``"FAIL"``; ``msg`` is the one line to print:
    ``SKIPPED <phase>: <reason>``, or ``FAILED <phase>: <reason>`` with what to do about it.
    """
    reason = " ".join(str(reason or "").split())
    status = cannot_run_status(reason, lab, switched_off)
    if status == RUN:
        return {"status": RUN, "msg": ""}
    if status == SKIPPED:
        return {"status": SKIPPED, "msg": "SKIPPED %s: %s" % (phase, reason)}
    return {"status": FAIL,
            "msg": "FAILED %s: %s (outside a lab a phase that cannot run fails; fix this, or switch the part "
                   "off, and run it again)" % (phase, reason)}


def redact(text, secrets):
    """``text`` with every non-empty secret replaced by ``<redacted>`` (longest first, so a secret
    that contains another is taken out whole)."""
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)
    for secret in sorted({str(s) for s in secrets or [] if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def command_failure(result, secrets, what="the command"):
    """One message from a failed module result (``msg``, ``stdout``, ``stderr``), secrets redacted."""
    result = result if isinstance(result, dict) else {}
    parts = []
    msg = str(result.get("msg") or "").strip()
    if msg:
        parts.append(msg)
    for stream in ("stdout", "stderr"):
        text = str(result.get(stream) or "").strip()
        if text and text not in msg:
            parts.append("%s: %s" % (stream, text))
    rc = result.get("rc")
    head = "%s failed%s" % (what, " (rc %s)" % rc if rc is not None else "")
    return redact(head + (": " + "\n".join(parts) if parts else ""), secrets)


# What a user without registry access does when terraform init cannot download the providers (issue 43).
# `terraform providers mirror` and `-plugin-dir` (gpu_cluster_terraform_plugin_paths): Terraform docs,
# "Command: providers mirror" and "Command: init" (-plugin-dir); the CLI configuration's
# provider_installation block: "CLI Configuration File", "Provider Installation".
TERRAFORM_INIT_HINT = (
    "terraform init downloads the providers terraform/proxmox/versions.tf pins (bpg/proxmox, hashicorp/local) "
    "from registry.terraform.io. Without access to it: on a connected machine run `terraform providers mirror "
    "<dir>` in the collection's terraform/proxmox, copy <dir> to this host and set "
    "gpu_cluster_terraform_plugin_paths: [<dir>] (terraform init -plugin-dir), or give Terraform a "
    "filesystem_mirror or network_mirror in the provider_installation block of its CLI configuration "
    "(~/.terraformrc). A proxy: export HTTPS_PROXY before the run.")


def terraform_step(result, check_mode=False):
    """The step a failed community.general.terraform result comes from: ``init`` (the module's
    ``terraform init``, which downloads the providers, fails with its command in ``cmd``), ``plan``
    (``Terraform plan could not be created``, and every failure in check mode) or ``apply``."""
    result = result if isinstance(result, dict) else {}
    cmd = result.get("cmd")
    words = [str(word) for word in cmd] if isinstance(cmd, (list, tuple)) else str(cmd or "").split()
    if len(words) > 1 and words[1] == "init":
        return "init"
    if check_mode or str(result.get("msg") or "").startswith("Terraform plan"):
        return "plan"
    return "apply"


def terraform_failure(result, secrets, directory, check_mode=False):
    """The message of a failed terraform run: which step failed (``terraform init``, the provider download,
    with what to do on an air-gapped host; ``terraform plan``; ``terraform apply``), where, and its own
    error with the secrets redacted."""
    step = terraform_step(result, check_mode)
    if step == "init":
        what = "terraform init (the provider download) in %s" % directory
        return command_failure(result, secrets, what) + "\n" + TERRAFORM_INIT_HINT
    return command_failure(result, secrets, "terraform %s in %s" % (step, directory))


def _state_vms(state):
    """{VM name: (vm_id, Proxmox node)} of the bpg/proxmox VMs in a Terraform state's text, or None when the
    text is not a Terraform state (terraform.tfstate: JSON with ``resources``; its ``instances`` carry
    ``attributes``, the VM's ``name``, ``vm_id`` and ``node_name`` as terraform/proxmox/main.tf sets them)."""
    try:
        data = json.loads(state)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("resources"), list):
        return None
    vms = {}
    for resource in data["resources"]:
        if not isinstance(resource, dict) or resource.get("type") != "proxmox_virtual_environment_vm" \
                or resource.get("mode", "managed") != "managed":
            continue
        for instance in resource.get("instances") or []:
            attributes = instance.get("attributes") if isinstance(instance, dict) else None
            if isinstance(attributes, dict) and attributes.get("name"):
                vms[str(attributes["name"])] = (attributes.get("vm_id"), attributes.get("node_name"))
    return vms


def unreachable_nodes(unreachable, addresses, state, state_path, provision_enabled=True, lab=False, own_dir=False):  # noqa: PLR0917 - a filter: Jinja passes by position
    """What to do about cluster nodes that do not answer: ``{stop, msg}`` (``msg`` empty when every node
    answered). For each node, whether its VM exists according to the Terraform state ``provision.yml`` keeps
    at ``state_path`` (``state``: that file's text, ``''`` when there is none): a VM that was never created
    (no state, not in it, provisioning switched off, a lab container) stops the run, told to run
    provision.yml; one whose VM exists is told to start it or fix its address, and the run goes on without
    it, as k3s.yml leaves a node that does not answer out (docs/k3s.md). ``own_dir``: the user's own Terraform
    module (gpu_cluster_terraform_dir), whose state may live in a remote backend: no local state there says
    nothing about the VMs, so the node is reported and the run goes on."""
    hosts = [str(host) for host in unreachable or []]
    if not hosts:
        return {"stop": False, "msg": ""}
    addresses = addresses if isinstance(addresses, dict) else {}
    vms = _state_vms(state) if state else None
    lines = []
    stop = False
    for host in hosts:
        where = "%s (%s)" % (host, addresses.get(host) or host)
        exists = False
        if _flag(lab):
            why = "the lab's container is not running: start the lab again (make lab)"
        elif not _flag(provision_enabled):
            why = ("gpu_cluster_provision_enabled is false, so this collection does not create the VMs: create and "
                   "start this VM yourself, or set it true and run playbooks/provision.yml")
        elif vms is None and not state and _flag(own_dir):
            exists = True  # unknown, not absent: the run goes on as k3s.yml would
            why = ("there is no local Terraform state at %s (gpu_cluster_terraform_dir is a module of your own; its state "
                   "may be in a remote backend), so whether its VM exists is unknown: check that it runs and that "
                   "ansible_host is its address; this run goes on without it" % state_path)
        elif vms is None and not state:
            why = ("there is no Terraform state at %s: the VMs have not been created from this inventory; run "
                   "playbooks/provision.yml first (site.yml runs it unless --tags or --skip-tags leave it out)" % state_path)
        elif vms is None:
            why = ("%s is not a Terraform state this collection can read, so whether the VM exists is unknown: run "
                   "playbooks/provision.yml, which creates what is missing" % state_path)
        elif host in vms:
            exists = True
            vm_id, node = vms[host]
            why = ("its VM exists (vm_id %s on Proxmox node %s, per the Terraform state at %s): start it (qm start %s) "
                   "and check that ansible_host is its address and that SSH lets ansible_user in; this run goes on "
                   "without it" % (vm_id, node, state_path, vm_id))
        else:
            why = ("no VM of that name is in the Terraform state at %s: run playbooks/provision.yml, which creates "
                   "the VMs the inventory describes" % state_path)
        stop = stop or not exists
        lines.append((where, why))
    if len(lines) == 1:
        return {"stop": stop, "msg": "%s does not answer over SSH: %s" % lines[0]}
    return {"stop": stop, "msg": "\n".join(["%d nodes do not answer over SSH:" % len(lines)]
                                           + ["- %s: %s" % line for line in lines])}
