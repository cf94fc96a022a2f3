"""run_needs: what a run needs of the control node, decided by preflight before any host is touched
(issue 43). Expected values come from the consumers:
- terraform/proxmox/versions.tf (required_version, required_providers), read here, not copied;
- Terraform's provider installation ("-plugin-dir": unpacked HOSTNAME/NAMESPACE/TYPE/VERSION/TARGET/ or
  packed HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_TARGET.zip);
- roles/component_delivery/tasks/helm_check.yml (direct delivery of a chart needs helm) and
  playbooks/management.yml (Rancher and Fleet are installed directly in both delivery modes);
- ansible.builtin.command's result for a binary that is not there (rc 2, no stderr).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import run_needs

REPO = Path(__file__).resolve().parents[4]
HOSTS = ["pve1", "cp1", "wk1"]
GROUPS = {"all": HOSTS, "proxmox_hosts": ["pve1"], "k3s_servers": ["cp1"], "gpu_workers": ["wk1"]}


def hostvars(**common):
    return {host: dict(common) for host in HOSTS}


def test_the_pins_are_those_of_the_terraform_module():
    text = (REPO / "terraform" / "proxmox" / "versions.tf").read_text()
    required = re.search(r'required_version\s*=\s*">=\s*([\d.]+)"', text).group(1)
    assert run_needs.TERRAFORM_MINIMUM == tuple(int(p) for p in required.split("."))
    pinned = dict(re.findall(r'source\s*=\s*"([^"]+)"\s*\n\s*version\s*=\s*"=\s*([^"]+)"', text))
    assert {"registry.terraform.io/" + source: version for source, version in pinned.items()} == run_needs.PROVIDERS


@pytest.mark.parametrize("playbook, tags, skip, phases", [
    (None, ["all"], [], list(run_needs.PHASES)),  # preflight.yml or site.yml
    (None, ["k3s"], [], ["k3s"]),  # site.yml --tags k3s
    (None, ["preflight"], [], []),
    (None, ["all"], ["management", "apps"], ["proxmox_host", "provision", "k3s", "storage", "gpu", "verify"]),
    (["storage"], ["all"], [], ["storage"]),  # storage.yml names its own
    ([], ["all"], [], []),  # render.yml
])
def test_the_phases_of_a_run(playbook, tags, skip, phases):
    assert run_needs.run_phases(playbook, tags, skip) == phases


def test_site_needs_every_secret_helm_and_terraform():
    needs = run_needs.run_needs(GROUPS, hostvars(gpu_cluster_management_enabled=True, gpu_cluster_terraform_plugin_paths=[]))
    assert needs["secrets"] == ["management", "backups", "jupyterhub"]
    assert [tool["name"] for tool in needs["tools"]] == ["helm", "terraform"]
    assert needs["tools"][0]["why"] == ("the storage, gpu, apps and management phases of this run install Helm charts with it "
                                        "(gpu_cluster_delivery: direct)")
    assert needs["tools"][1]["argv"] == ["terraform", "version", "-json"]


def test_fleet_delivery_needs_helm_for_management_only():
    fleet = hostvars(gpu_cluster_delivery="fleet", gpu_cluster_management_enabled=True)
    assert [t["why"] for t in run_needs.run_needs(GROUPS, fleet)["tools"] if t["name"] == "helm"] == [
        "the management phase of this run installs Helm charts with it (gpu_cluster_delivery: direct)"]
    off = hostvars(gpu_cluster_delivery="fleet", gpu_cluster_management_enabled=False)
    assert [t["name"] for t in run_needs.run_needs(GROUPS, off)["tools"]] == ["terraform"]


def test_a_lab_or_no_proxmox_host_needs_no_tool():
    assert run_needs.run_needs(GROUPS, hostvars(gpu_cluster_lab=True))["tools"] == []
    no_pve = dict(GROUPS, proxmox_hosts=[])
    assert [t["name"] for t in run_needs.run_needs(no_pve, hostvars(), ["provision"])["tools"]] == []
    off = hostvars(gpu_cluster_provision_enabled=False)
    assert run_needs.run_needs(GROUPS, off, ["provision"])["tools"] == []
    binary = hostvars(gpu_cluster_terraform_binary="/opt/tofu/bin/tofu")
    assert run_needs.run_needs(GROUPS, binary, ["provision"])["tools"][0]["argv"] == ["/opt/tofu/bin/tofu", "version", "-json"]


def test_plugin_paths_must_hold_each_pinned_provider(tmp_path):
    target = "linux_amd64"
    assert run_needs.plugin_path_problems([str(tmp_path / "absent")], platform_target=target) == [
        "gpu_cluster_terraform_plugin_paths: %s is not a directory on the control node" % (tmp_path / "absent")]
    mirror = tmp_path / "mirror"
    # unpacked layout for proxmox, packed for local
    (mirror / "registry.terraform.io" / "bpg" / "proxmox" / "0.83.0" / target).mkdir(parents=True)
    problems = run_needs.plugin_path_problems([str(mirror)], platform_target=target)
    assert len(problems) == 1 and "registry.terraform.io/hashicorp/local 2.5.3 for linux_amd64" in problems[0], problems
    packed = mirror / "registry.terraform.io" / "hashicorp" / "local"
    packed.mkdir(parents=True)
    (packed / "terraform-provider-local_2.5.3_linux_amd64.zip").write_bytes(b"PK")
    assert run_needs.plugin_path_problems([str(mirror)], platform_target=target) == []
    # another version of the provider is not the pinned one
    old = tmp_path / "old"
    (old / "registry.terraform.io" / "bpg" / "proxmox" / "0.82.0" / target).mkdir(parents=True)
    assert len(run_needs.plugin_path_problems([str(old)], platform_target=target)) == 2


def results(*items):
    return {"results": list(items)}


HELM = {"name": "helm", "argv": ["helm", "version", "--short"], "why": "the gpu phase of this run installs Helm charts with it"}
TF = {"name": "terraform", "argv": ["terraform", "version", "-json"], "why": "the provision phase of this run creates the VMs with it"}


def test_tool_problems_from_the_command_results():
    missing = {"item": HELM, "rc": 2, "msg": "Error executing command.", "stdout": "", "stderr": ""}
    assert run_needs.tool_problems(results(missing)) == [
        "no helm CLI on the control node (helm is not on PATH): the gpu phase of this run installs Helm charts with it; "
        "install it (https://helm.sh/docs/intro/install/), or set gpu_cluster_delivery: fleet"]
    found = {"item": HELM, "rc": 0, "stdout": "v3.19.0+g3d8990f", "stderr": ""}
    current = {"item": TF, "rc": 0, "stdout": json.dumps({"terraform_version": "1.9.8", "platform": "linux_amd64"}), "stderr": ""}
    assert run_needs.tool_problems(results(found, current)) == []
    old = dict(current, stdout=json.dumps({"terraform_version": "1.4.6"}))
    assert run_needs.tool_problems(results(old)) == [
        "terraform is Terraform 1.4.6; terraform/proxmox needs >= 1.5.0 (its required_version): upgrade it "
        "(https://developer.hashicorp.com/terraform/install)"]
    broken = dict(current, rc=1, stderr="error while loading shared libraries: libc.so.6\n")
    assert run_needs.tool_problems(results(broken))[0].startswith(
        "no terraform CLI on the control node (terraform exits 1: error while loading shared libraries: libc.so.6)")
    assert run_needs.tool_problems({"results": []}) == [] and run_needs.tool_problems({}) == []


# The stand-ins a user's control node has in the tests (tests/fixtures/tools: each answers the version
# question as the real CLI does, citing its source)
TOOLS = REPO / "tests" / "fixtures" / "tools"


def test_run_tools_asks_each_cli_as_the_command_loop_did(tmp_path):
    """run_tools runs each argv without a shell and gives what a loop of ansible.builtin.command registered:
    the answers of the stand-in CLIs are judged sound, a binary that is not there is rc 2 with no stderr
    (ENOENT, as the command module reports it), one that cannot be executed names the OS error."""
    helm = dict(HELM, argv=[str(TOOLS / "helm-cli" / "helm"), "version", "--short"])
    terraform = dict(TF, argv=[str(TOOLS / "terraform-cli" / "terraform"), "version", "-json"])
    answers = run_needs.run_tools([helm, terraform])
    assert [r["item"] for r in answers["results"]] == [helm, terraform]
    assert all(r["rc"] == 0 for r in answers["results"]), answers
    assert re.fullmatch(r"v3\.\d+\.\d+\+g[0-9a-f]+", answers["results"][0]["stdout"])
    assert json.loads(answers["results"][1]["stdout"])["terraform_version"]
    assert run_needs.tool_problems(answers) == []
    data = tmp_path / "terraform"
    data.write_text("not a program\n")  # mode 0644: not executable
    missing = dict(TF, argv=[str(tmp_path / "absent"), "version", "-json"])
    answers = run_needs.run_tools([missing, dict(TF, argv=[str(data), "version", "-json"])])
    assert [(r["rc"], r["stderr"]) for r in answers["results"]] == [(2, ""), (13, "")]
    problems = run_needs.tool_problems(answers)
    assert problems[0].startswith(f"no terraform CLI on the control node ({tmp_path / 'absent'} is not on PATH): ")
    assert problems[1].startswith(f"no terraform CLI on the control node ({data} cannot be started: [Errno 13] Permission denied")
    assert run_needs.run_tools([]) == {"results": []}


def test_a_cli_that_gives_no_answer_is_a_problem_not_a_hung_preflight():
    slow = dict(TF, argv=["sleep", "30"])
    (answer,) = run_needs.run_tools([slow], timeout=1)["results"]
    assert answer["rc"] == 124 and answer["stderr"] == "gave no answer within 1 seconds"
    assert run_needs.tool_problems({"results": [answer]})[0].startswith(
        "no terraform CLI on the control node (sleep exits 124: gave no answer within 1 seconds)")
