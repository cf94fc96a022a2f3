# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's rules for classes of input (issue 27), each applied to every variable of its class:

- text: no string anywhere in a variable (nested lists and mappings included) holds a newline or
  another control character, except the few that hold PEM text (private keys, TLS certificates);
  a secret's value is never shown;
- switches: every ``*_enabled`` variable is a YAML boolean (``"false"`` is a true string to Jinja);
- Git: repository URLs are https or ssh without credentials in them, refs are valid Git branch names
  (``git check-ref-format --branch``);
- PCI ids: the ids passed to vfio-pci belong to the GPU models the workers declare;
- node names: no two hosts become the same Kubernetes node (``gpu_cluster_node_name``);
- IP families: the pod and service networks are of the nodes' IP family.

Each function takes plain values and returns messages that name the variable and what to change.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import node_vars
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.gpu_pools import MODEL_DEVICE_IDS

# Every Unicode control character (general category Cc: the C0 and C1 controls, U+0085 NEL included), the
# line and paragraph separators (Zl, Zp: U+2028, U+2029), which a YAML or JSON reader, a shell or a log takes
# for a line break, and the invisible characters that hide what a value holds: the bidirectional controls
# (U+061C, U+200E/U+200F, U+202A-U+202E, U+2066-U+2069), the zero-width space, word joiner and BOM
# (U+200B, U+2060, U+FEFF) (issue 43). Not the joiners U+200C/U+200D, which scripts and emoji need.
# tests/unit/plugins/plugin_utils/test_input_checks.py compares the class with Python's Unicode database.
CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]")
# Variables whose value is PEM text: lines are their form (a trailing newline included).
MULTILINE_RE = re.compile(r".*(_private_key|_tls_certificate|_tls_key)\Z")
# Variables whose value is not shown in a message.
SECRET_RE = re.compile(r".*(password|passwd|token|secret|private_key|_key)\Z")
PREFIX = "gpu_cluster_"


def is_secret(name, value=None):
    """Whether a variable holds a secret: its name says so (SECRET_RE), or a mapping in its value has
    a key that does (``gpu_cluster_jupyterhub_oauth: {client_secret: ...}``)."""
    if isinstance(name, str) and SECRET_RE.match(name):
        return True
    if isinstance(value, dict):
        return any(is_secret(key, item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_secret(None, item) for item in value)
    return False


def _first_control(value, path=""):
    """(path, string) of the first string in ``value`` (keys included) with a control character."""
    if isinstance(value, str):
        return (path, value) if CONTROL_RE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and CONTROL_RE.search(key):
                return path, key
            found = _first_control(item, "%s.%s" % (path, key) if isinstance(key, str) else "%s[%r]" % (path, key))
            if found:
                return found
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_control(item, "%s[%d]" % (path, index))
            if found:
                return found
    return None


def unique(items):
    """items in order, each once (linear: a set beside the list; issue 19's benchmark)."""
    seen = set()
    result = []
    for item in items:
        if item not in seen:
            seen.add(item)
            result.append(item)
    return result


def where(hosts):
    """Where a value is set, for a message: the host, or the first host and how many others."""
    return hosts[0] if len(hosts) == 1 else "%s (and %d other host(s))" % (hosts[0], len(hosts) - 1)


def text_problems(values, names=()):
    """Strings with a newline or another control character. ``values``: ``{name: [(value, [host,
    ...])]}`` of every variable the hosts set (one entry per distinct value); checked: every
    ``gpu_cluster_*`` variable and the role variables ``names``, but the PEM ones (MULTILINE_RE)."""
    problems = []
    wanted = frozenset(names)
    for name in sorted(values):
        if not isinstance(name, str) or not (name.startswith(PREFIX) or name in wanted) or MULTILINE_RE.match(name):
            continue
        for value, on in values[name]:
            found = _first_control(value)
            if not found:
                continue
            path, text = found
            if is_secret(name, value):
                problems.append("%s: %s%s holds a newline or another control character (the value is a secret and not "
                                "shown); store it again without one (ansible-vault encrypt_string reads the newline of "
                                "echo: use printf %%s)" % (where(on), name, path))
            else:
                problems.append("%s: %s%s is %r, with a newline or another control character in it; remove it (values "
                                "are matched whole, a line end pasted with the value is not ignored)"
                                % (where(on), name, path, text))
    return problems


def switch_problems(values, checked=()):
    """``*_enabled`` variables that are not YAML booleans (``checked``: names another check already
    judges as booleans)."""
    problems = []
    for name in sorted(values):
        if not isinstance(name, str) or not name.endswith("_enabled") or name.startswith("ansible_") or name in checked:
            continue
        for value, on in values[name]:
            if not isinstance(value, bool):
                problems.append("%s: %s is %r; use true or false (a YAML boolean: a string such as \"false\" is true "
                                "to Ansible; on the command line -e '{\"%s\": false}', not -e %s=false)"
                                % (where(on), name, value, name, name))
    return problems


# git check-ref-format: no control characters, space, ~ ^ : ? * [ \, no "..", no "@{", no "//"; no
# component begins with "." or ends with ".lock"; not "@", not beginning with "-" or "/", not ending
# with "/" or "." (https://git-scm.com/docs/git-check-ref-format).
_REF_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def ref_problem(name, value):
    """Why ``value`` is not a valid Git branch name (None when it is)."""
    if not isinstance(value, str) or not value:
        return "%s is %r; use a Git branch name (like main)" % (name, value)
    components = value.split("/")
    if (_REF_BAD.search(value) or value == "@" or value.startswith(("-", "/")) or value.endswith(("/", "."))
            or any(part.startswith(".") or part.endswith(".lock") for part in components)):
        return ("%s is %r, not a valid Git branch name (git check-ref-format: no spaces, control characters, "
                "~ ^ : ? * [ \\, '..', '@{' or '//', no part beginning with '.' or ending with '.lock'); use one like "
                "main or release/2026-11" % (name, value))
    return None


_SCP_LIKE = re.compile(r"(?:([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+):(?!//)([^\s]+)\Z")


def git_url_problem(name, value):
    """Why ``value`` is not a Git URL we accept: https:// or ssh:// (or scp-like ``user@host:path``),
    with no password or token in it (None when it is fine)."""
    if not isinstance(value, str) or not value or CONTROL_RE.search(value) or " " in value:
        return "%s is %r; use an https:// or ssh:// Git URL (like https://git.example.com/team/cluster.git)" % (name, value)
    scp = _SCP_LIKE.match(value)
    if "://" not in value and scp:
        return None  # git@host:path: the ssh user, keys authenticate
    parts = urlsplit(value)
    scheme = (parts.scheme or "").lower()
    if scheme not in ("https", "ssh"):
        return ("%s is %r; use an https:// or ssh:// Git URL (%s sends the repository%s unencrypted or is not a "
                "remote)" % (name, value, scheme or "a path", " and any credentials" if scheme in ("http", "git") else ""))
    if not parts.hostname:
        return "%s is %r; the URL names no host" % (name, value)
    if parts.password is not None or (scheme == "https" and parts.username is not None):
        return ("%s carries credentials in the URL (they would be stored in the GitRepo and in logs; the URL is "
                "not shown); use the URL without them and set gpu_cluster_fleet_git_username and "
                "gpu_cluster_fleet_git_password (vaulted), or an ssh key" % name)
    return None


def node_name_problems(hosts, hostvars):
    """Hosts that would register as the same Kubernetes node (node names compare case-insensitively)."""
    seen = {}
    for host in hosts:
        name = node_vars.node_name(host, hostvars.get(host) or {})
        if isinstance(name, str):
            seen.setdefault(name.lower(), []).append(host)
    return ["%s: become the same Kubernetes node %s (gpu_cluster_node_name, else the host name); give each host its "
            "own node name" % (", ".join(on), node_vars.node_name(on[0], hostvars.get(on[0]) or {}))
            for on in seen.values() if len(on) > 1]


def gpu_hosts(proxmox_hosts, gpu_workers, hostvars):
    """{GPU worker: [Proxmox hosts that hold its GPUs]}: the hosts whose ``gpu_cluster_gpu_pci_devices``
    name a device of the worker's ``gpu_cluster_gpu_pci_mappings`` (a Proxmox PCI mapping is a
    cluster-wide object with one entry per node: the device sits on the node that declares it). With
    one Proxmox host every worker is on it; a worker whose mappings name no declared device is on none
    (its own check names the mapping)."""
    names = {}
    for host in proxmox_hosts:
        devices = (hostvars.get(host) or {}).get("gpu_cluster_gpu_pci_devices")
        for device in devices if isinstance(devices, list) else []:
            if isinstance(device, dict) and isinstance(device.get("name"), str):
                names.setdefault(device["name"], []).append(host)
    placed = {}
    for worker in gpu_workers:
        if len(proxmox_hosts) == 1:
            placed[worker] = list(proxmox_hosts)
            continue
        mappings = (hostvars.get(worker) or {}).get("gpu_cluster_gpu_pci_mappings")
        mappings = [m for m in mappings if isinstance(m, str)] if isinstance(mappings, list) else []
        placed[worker] = unique([host for mapping in mappings for host in names.get(mapping, [])])
    return placed


def provision_placement_problems(proxmox_hosts, gpu_workers, hostvars, placed=None):
    """provision.yml creates every VM on the first Proxmox host (terraform/proxmox has one
    ``proxmox_node``; placement per host is issue 46): a GPU worker whose GPUs are on another host
    would get a VM whose PCI mapping has no entry for its node, which Proxmox refuses at start. Said
    while the collection's module provisions (not in a lab, not with a module of the user's own): a
    preflight warning (several Proxmox hosts are a valid inventory), and provision.yml's refusal
    (terraform_vars) before Terraform runs. ``placed``: {VM: Proxmox host} (cluster_model.placement), to
    name also the VMs placed on another host with ``gpu_cluster_proxmox_host``."""
    proxmox_hosts = list(proxmox_hosts)
    if len(proxmox_hosts) < 2:
        return []
    settings = hostvars.get(proxmox_hosts[0]) or {}

    def flag(name, default):
        value = settings.get(name, default)
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t") if isinstance(value, str) else bool(value)

    if not flag("gpu_cluster_provision_enabled", True) or flag("gpu_cluster_lab", False) or settings.get("gpu_cluster_terraform_dir"):
        return []
    elsewhere = [(worker, hosts) for worker, hosts in sorted(gpu_hosts(proxmox_hosts, list(gpu_workers), hostvars).items())
                 if hosts and proxmox_hosts[0] not in hosts]
    gpus_elsewhere = frozenset(worker for worker, _hosts in elsewhere)
    named = [(vm, host) for vm, host in (placed or {}).items() if "gpu_cluster_proxmox_host" in (hostvars.get(vm) or {})
             and host != proxmox_hosts[0] and vm not in gpus_elsewhere]
    problems = []
    if named:
        problems.append("%s: gpu_cluster_proxmox_host places %s on %s, but provision.yml creates every VM on %s, the first "
                        "host of proxmox_hosts (placing VMs on several Proxmox hosts is not built yet), and refuses it; "
                        "create those VMs yourself (gpu_cluster_provision_enabled: false) or place them on %s"
                        % (", ".join(vm for vm, _host in named), "them" if len(named) > 1 else "it",
                           ", ".join(unique([host for _vm, host in named])), proxmox_hosts[0], proxmox_hosts[0]))
    if elsewhere:
        problems.append(
            "%s: its GPUs are on %s (gpu_cluster_gpu_pci_mappings), but provision.yml creates every VM on %s, the first "
            "host of proxmox_hosts (placing VMs on several Proxmox hosts is not built yet), and refuses it; create those "
            "VMs yourself (gpu_cluster_provision_enabled: false) or give them GPUs of %s"
            % (", ".join(worker for worker, _hosts in elsewhere),
               ", ".join(unique([host for _worker, hosts in elsewhere for host in hosts])),
               proxmox_hosts[0], proxmox_hosts[0]))
    return problems


def pci_model_problems(proxmox_hosts, gpu_workers, hostvars):
    """PCI ids for vfio-pci (``gpu_cluster_gpu_pci_ids`` of a Proxmox host) that are a known GPU model's
    id no worker on that host declares, and declared models whose id is missing on the host that holds
    the worker's GPUs (:func:`gpu_hosts`; with several Proxmox hosts each claims only its own workers'
    GPUs, issue 43). Ids of no listed model (the GPU's audio function, a model the table does not know)
    are not judged, nor are the ids when no GPU worker declares a model yet."""
    placed = gpu_hosts(list(proxmox_hosts), list(gpu_workers), hostvars)
    models, per_host = {}, dict((host, {}) for host in proxmox_hosts)
    for worker in gpu_workers:
        variables = hostvars.get(worker) or {}
        model = node_vars.gpu_model(variables)
        if model and node_vars.gpu_count(variables) > 0:
            models.setdefault(model, []).append(worker)
            for host in placed.get(worker) or []:
                per_host[host].setdefault(model, []).append(worker)
    if not models:
        return []  # no GPU worker yet: nothing to compare the ids with
    by_id = dict((device, model) for model, device in MODEL_DEVICE_IDS.items())
    problems = []
    for host in proxmox_hosts:
        ids = (hostvars.get(host) or {}).get("gpu_cluster_gpu_pci_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            continue
        listed = [i.lower() for i in ids]
        # with several hosts, a worker placed on none (its mappings name no declared device) may be on any
        unplaced = dict((model, [w for w in workers if not placed.get(w)]) for model, workers in models.items())
        mine = per_host[host]
        for device in listed:
            model = by_id.get(device)
            if model and model not in mine and not unplaced.get(model):
                on = "" if len(proxmox_hosts) == 1 else " on this host"
                problems.append(
                    "%s: gpu_cluster_gpu_pci_ids holds %s, the PCI id of %s, but no GPU worker%s declares that model "
                    "(gpu_cluster_gpu_model: %s); list the ids of the GPUs the workers get"
                    % (host, device, model, on, ", ".join(sorted(mine if len(proxmox_hosts) > 1 else models)) or "none"))
        for model in sorted(mine):
            device = MODEL_DEVICE_IDS.get(model)
            if device and device not in listed:
                problems.append(
                    "%s: gpu_cluster_gpu_pci_ids lacks %s, the PCI id of %s that %s declare (gpu_cluster_gpu_model); "
                    "vfio-pci would not claim those GPUs: add it" % (host, device, model, ", ".join(mine[model])))
    return problems


def ip_family_problems(network, cidrs):
    """Pod and service networks of another IP family than the node network (K3s single-stack)."""
    problems = []
    if network is None:
        return problems
    for name, cidr in cidrs:
        if cidr is not None and cidr.version != network.version:
            problems.append(
                "%s %s is IPv%d but the nodes are IPv%d (gpu_cluster_node_network %s): K3s gives pods and services "
                "addresses of the nodes' family; use an IPv%d CIDR (like %s)"
                % (name, cidr, cidr.version, network.version, network, network.version,
                   {"gpu_cluster_cluster_cidr": "10.42.0.0/16", "gpu_cluster_service_cidr": "10.43.0.0/16"}.get(name, "10.42.0.0/16")
                   if network.version == 4 else "fd00:42::/56"))
    return problems
