# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run needs of the control node beyond the inventory, decided before any host is touched
(issue 43: "Inventory OK" means the run will finish): the vaulted values of the components it delivers
(``secrets_needed``), the helm CLI when it installs charts directly, terraform and its providers when it
provisions.

The phases a run goes through: a phase playbook names its own (``__preflight_phases``); ``site.yml`` and
``preflight.yml`` alone go through those ``--tags`` selects (every phase by default). In a lab
(``gpu_cluster_lab``) nothing here is needed: the phases that lack a tool say SKIPPED there.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import json
import os
import platform
import re
import subprocess

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model

# site.yml's phases, by their tags
PHASES = ("proxmox_host", "provision", "k3s", "management", "storage", "gpu", "apps", "verify")
# phase -> the component whose vaulted values it writes (secrets_needed.COMPONENTS)
SECRETS_OF = {"management": "management", "apps": "jupyterhub", "storage": "backups"}
# phases that install Helm charts through the API when delivery is direct (management: always)
HELM_PHASES = ("storage", "gpu", "apps")

# terraform/proxmox/versions.tf: required_version and required_providers (test_run_needs reads the file)
TERRAFORM_MINIMUM = (1, 5, 0)
PROVIDERS = {"registry.terraform.io/bpg/proxmox": "0.83.0", "registry.terraform.io/hashicorp/local": "2.5.3"}

HELM_INSTALL = "https://helm.sh/docs/intro/install/"
TERRAFORM_INSTALL = "https://developer.hashicorp.com/terraform/install"

_SETTINGS = ("gpu_cluster_lab", "gpu_cluster_delivery", "gpu_cluster_management_enabled", "gpu_cluster_provision_enabled",
             "gpu_cluster_terraform_binary", "gpu_cluster_terraform_plugin_paths", "gpu_cluster_terraform_dir")


def wanted(name):
    """Whether the filter reads the inventory variable ``name`` (the rest is never templated)."""
    return name in _SETTINGS


def _flag(value, default=False):
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def run_phases(playbook_phases=None, run_tags=None, skip_tags=None):
    """The phases of this run: the playbook's own (a list), else those ``--tags`` selects and
    ``--skip-tags`` leaves in."""
    if playbook_phases is not None:
        return [phase for phase in PHASES if phase in list(playbook_phases)]
    tags, skipped = set(run_tags or ["all"]), set(skip_tags or [])
    return [phase for phase in PHASES if ("all" in tags or phase in tags) and phase not in skipped]


def _settings(inv):
    """The cluster-wide settings this decision reads, from the first host that sets each."""
    return inv.values(_SETTINGS)


def target():
    """Terraform's name of this control node's platform (``linux_amd64``)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386", "i386": "386"}.get(
        machine, machine)
    return "%s_%s" % (platform.system().lower(), arch)


def plugin_path_problems(paths, providers=None, platform_target=None):
    """Terraform's ``-plugin-dir`` (``gpu_cluster_terraform_plugin_paths``) replaces the registry: every
    provider of terraform/proxmox at its pinned version must be in one of the paths, unpacked
    (HOSTNAME/NAMESPACE/TYPE/VERSION/TARGET/) or packed (HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_TARGET.zip),
    as Terraform's "Provider Installation" documents."""
    providers = PROVIDERS if providers is None else providers
    platform_target = platform_target or target()
    paths = [str(path) for path in paths or []]
    problems = []
    missing = [path for path in paths if not os.path.isdir(os.path.expanduser(path))]
    for path in missing:
        problems.append("gpu_cluster_terraform_plugin_paths: %s is not a directory on the control node" % path)
    present = [os.path.expanduser(path) for path in paths if path not in missing]
    if not present:
        return problems
    for source, version in sorted(providers.items()):
        kind = source.rsplit("/", 1)[1]
        unpacked = [os.path.join(path, source, version, platform_target) for path in present]
        packed = [os.path.join(path, source, "terraform-provider-%s_%s_%s.zip" % (kind, version, platform_target))
                  for path in present]
        if not any(os.path.isdir(p) for p in unpacked) and not any(os.path.isfile(p) for p in packed):
            problems.append("gpu_cluster_terraform_plugin_paths: no %s %s for %s in %s (Terraform looks nowhere else: "
                            "`terraform providers mirror <dir>` on a machine with internet writes it; docs/provision.md)"
                            % (source, version, platform_target, ", ".join(paths)))
    return problems


def run_needs(inventory, hostvars=None, playbook_phases=None, run_tags=None, skip_tags=None):
    """``{phases, secrets, tools, problems}`` of this run: the phases it goes through, the components
    whose secrets it needs (``secrets_needed``), the tools to look up on the control node
    (``[{name, argv, why}]``, judged by :func:`tool_problems`) and what is wrong already (plugin paths).
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    phases = run_phases(playbook_phases, run_tags, skip_tags)
    inv = cluster_model.inventory(inventory, hostvars)
    values = _settings(inv)
    secrets = [SECRETS_OF[phase] for phase in phases if phase in SECRETS_OF]
    tools, problems = [], []
    if _flag(values.get("gpu_cluster_lab")):
        return {"phases": phases, "secrets": secrets, "tools": tools, "problems": problems}
    direct = (values.get("gpu_cluster_delivery") or "direct") == "direct"
    helm_for = [phase for phase in phases if phase in HELM_PHASES and direct]
    if "management" in phases and _flag(values.get("gpu_cluster_management_enabled")):
        helm_for.append("management")
    if helm_for:
        names = helm_for[0] if len(helm_for) == 1 else "%s and %s" % (", ".join(helm_for[:-1]), helm_for[-1])
        tools.append({"name": "helm", "argv": ["helm", "version", "--short"],
                      "why": "the %s phase%s of this run install%s Helm charts with it (gpu_cluster_delivery: direct)"
                             % (names, "s" if len(helm_for) > 1 else "", "" if len(helm_for) > 1 else "s")})
    proxmox = inv.hosts("proxmox_hosts")
    if "provision" in phases and _flag(values.get("gpu_cluster_provision_enabled"), True) and proxmox:
        binary = values.get("gpu_cluster_terraform_binary") or "terraform"
        tools.append({"name": "terraform", "argv": [str(binary), "version", "-json"],
                      "why": "the provision phase of this run creates the VMs with it"})
        if not values.get("gpu_cluster_terraform_dir"):  # a module of the user's own pins its own providers
            problems.extend(plugin_path_problems(values.get("gpu_cluster_terraform_plugin_paths")))
    return {"phases": phases, "secrets": secrets, "tools": tools, "problems": problems}


def _version(text):
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", str(text or "").strip())
    return tuple(int(part) for part in match.groups()) if match else None


# how long a tool may take to say its version (a CLI that hangs is a problem, not a hung preflight)
TOOL_TIMEOUT = 60


def run_tools(tools, timeout=TOOL_TIMEOUT):
    """Run each tool's ``argv`` on this machine (the control node) and return what :func:`tool_problems`
    reads, shaped as a registered loop of ``ansible.builtin.command`` over ``tools``: ``{results: [{item,
    rc, stdout, stderr}]}``. As that module reports them: a binary that cannot be started (not on PATH,
    not executable) has the OS error's number as ``rc`` and no stderr; one that runs past ``timeout``
    seconds has ``rc`` 124 and says so. Run by the lookup ``tool_runs`` in the controller's process: no
    module payload per tool (the command loop cost preflight about 0.6 CPU-seconds for helm and terraform)."""
    results = []
    for tool in tools or []:
        argv = [str(part) for part in (tool or {}).get("argv") or []]
        result = {"item": tool, "rc": 2, "stdout": "", "stderr": ""}
        if argv:
            try:
                proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                result.update(rc=124, stderr="gave no answer within %d seconds" % timeout)
            except OSError as exc:
                result.update(rc=exc.errno or 2, msg=str(exc))
            else:
                result.update(rc=proc.returncode, stdout=proc.stdout.rstrip("\n"), stderr=proc.stderr.rstrip("\n"))
        results.append(result)
    return {"results": results}


def tool_problems(results):
    """One message per tool :func:`run_needs` asked for that is missing or too old. ``results``: the
    results of :func:`run_tools` (a registered loop of ``ansible.builtin.command`` over the tools has the same
    shape: each result has ``item``, ``rc``, ``stdout``, ``stderr``)."""
    problems = []
    for result in (results or {}).get("results") or []:
        tool = result.get("item") or {}
        name, binary = tool.get("name"), (tool.get("argv") or ["?"])[0]
        if result.get("rc") != 0:
            if name == "helm":
                fix = "install it (%s), or set gpu_cluster_delivery: fleet" % HELM_INSTALL
            else:
                fix = "install Terraform >= %s (%s), or set gpu_cluster_terraform_binary" % (
                    ".".join(map(str, TERRAFORM_MINIMUM)), TERRAFORM_INSTALL)
            stderr = str(result.get("stderr") or "").strip().splitlines()
            # a binary that cannot be started: the OS error's number as rc (ENOENT 2: not found), no stderr
            if stderr:
                reason = "%s exits %s: %s" % (binary, result.get("rc"), stderr[0])
            elif result.get("rc") == errno.ENOENT or not result.get("msg"):
                reason = "%s is not on PATH" % binary
            else:
                reason = "%s cannot be started: %s" % (binary, result.get("msg"))
            problems.append("no %s CLI on the control node (%s): %s; %s" % (name, reason, tool.get("why"), fix))
            continue
        if name == "terraform":
            try:
                version = _version(json.loads(result.get("stdout") or "{}").get("terraform_version"))
            except ValueError:
                version = None
            if version is None:
                problems.append("%s version -json gave no terraform_version; is %s Terraform? %s" % (binary, binary, tool.get("why")))
            elif version < TERRAFORM_MINIMUM:
                problems.append("%s is Terraform %s; terraform/proxmox needs >= %s (its required_version): upgrade it (%s)"
                                % (binary, ".".join(map(str, version)), ".".join(map(str, TERRAFORM_MINIMUM)), TERRAFORM_INSTALL))
    return problems
