# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's versions file (versions.yml at its root): every pin in one place.

``parse_versions(text)`` reads the file into ``{key: {value, datasource, depName, ...}}`` (the
``# renovate:`` comment above each entry gives its datasource); ``versions_problems(entries)``
says what is wrong with it (unpinned, malformed, unannotated, unsupported), one message each;
``pinned(key)`` is what the roles read. Pure functions except ``load_versions``, which reads the file.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.components import GPU_OPERATOR_SUPPORTED_VERSIONS
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, gpu_driver

COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VERSIONS_FILE = os.path.join(COLLECTION_ROOT, "versions.yml")

DATASOURCES = ("github-releases", "helm", "docker", "terraform-provider", "pypi")
# The comment above an entry; the same regex renovate.json's custom manager uses.
RENOVATE_COMMENT_RE = re.compile(r"#\s*renovate:\s*datasource=(?P<datasource>\S+)\s+depName=(?P<depName>\S+)"
                                 r"(?:\s+registryUrl=(?P<registryUrl>\S+))?(?:\s+versioning=(?P<versioning>\S+))?\s*")
ENTRY_RE = re.compile(r"(?P<key>[a-z][a-z0-9_]*):\s*\"?(?P<value>[A-Za-z0-9][^\"\s#]*)\"?\s*(#.*)?")

_NUM = r"(0|[1-9][0-9]*)"
K3S_RE = re.compile(r"v%s\.%s\.%s\+k3s([1-9][0-9]*)" % (_NUM, _NUM, _NUM))
SEMVER_RE = re.compile(r"v?%s\.%s\.%s([-+][0-9A-Za-z.+-]+)?" % (_NUM, _NUM, _NUM))
PLAIN_SEMVER_RE = re.compile(r"%s\.%s\.%s" % (_NUM, _NUM, _NUM))
IMAGE_RE = re.compile(r"(?P<repository>[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)+)"
                      r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})")
UNPINNED = ("latest", "stable", "testing", "main", "master", "edge", "head", "nightly")

# K3s minors the roles support for the default pin: the upstream-maintained minors when v1.36.4+k3s1
# was the stable channel (August 2026; v1.33 left upstream support in June 2026), each with API
# schemas in the kubernetes-validate of requirements-dev.txt (1.37.0 ships 1.25 .. 1.37) for the render tier.
K3S_SUPPORTED_MINORS = ((1, 34), (1, 35), (1, 36))
# Entries whose value the roles, Terraform and the EE need; preflight says which is missing.
REQUIRED_KEYS = (
    "k3s_version", "kube_vip_image", "gpu_operator_chart", "nfs_subdir_external_provisioner_chart",
    "local_path_provisioner_image", "local_path_provisioner_helper_image", "vllm_image", "vllm_operator_image",
    "production_stack_operator_image",
    "verify_cuda_image", "verify_vectoradd_image", "verify_pytorch_image", "verify_busybox_image", "cuda_smoke_image",
    "terraform_provider_proxmox_version", "terraform_provider_local_version", "terraform_version", "helm_version",
    "kube_prometheus_stack_chart", "jupyterhub_chart", "jupyterhub_notebook_cpu_image",
    "jupyterhub_notebook_pytorch_image", "jupyterhub_notebook_tensorflow_image", "cert_manager_chart",
    "rancher_chart", "fleet_chart", "jupyterhub_singleuser_version", "jupyterhub_puller_pause_image",
    "gpu_driver_version", "gpu_driver_legacy_version",
)


def parse_versions(text):
    """``{key: {value, datasource, depName, registryUrl, versioning, line}}`` from the file's text.

    An entry without a ``# renovate:`` comment on the line above has datasource None (a problem
    for ``versions_problems``). Lines that are neither comments nor entries raise ValueError.
    """
    entries = {}
    comment = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line == "---":
            comment = None
            continue
        if line.startswith("#"):
            match = RENOVATE_COMMENT_RE.fullmatch(line)
            # only a renovate comment directly above an entry counts (as for Renovate's regex)
            comment = match.groupdict() if match else ({"bad": line} if re.match(r"#\s*renovate", line, re.I) else None)
            continue
        match = ENTRY_RE.fullmatch(line)
        if not match or raw[0].isspace():
            raise ValueError("versions.yml line %d is not `key: value` at the top level: %r" % (number, raw))
        key = match.group("key")
        if key in entries:
            raise ValueError("versions.yml line %d: %s is pinned twice" % (number, key))
        entry = {"value": match.group("value"), "line": number, "datasource": None, "depName": None,
                 "registryUrl": None, "versioning": None}
        if comment and "bad" not in comment:
            entry.update(comment)
        elif comment:
            entry["bad_comment"] = comment["bad"]
        entries[key] = entry
        comment = None
    return entries


def load_versions(path=VERSIONS_FILE):
    """The parsed versions file (``parse_versions``); IOError/ValueError when unreadable or malformed."""
    with open(path) as handle:
        return parse_versions(handle.read())


def pinned(key, entries=None):
    """The value of one entry; ValueError naming the known keys when there is none."""
    entries = load_versions() if entries is None else entries
    if key not in entries:
        raise ValueError("versions.yml pins no %r (pinned: %s)" % (key, ", ".join(sorted(entries))))
    return entries[key]["value"]


def image_parts(value):
    """``registry/repo:tag`` -> (``registry/repo``, ``tag``); None when not a pinned image reference."""
    match = IMAGE_RE.fullmatch(value or "")
    return (match.group("repository"), match.group("tag")) if match else None


def k3s_minor(value):
    match = K3S_RE.fullmatch(value or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _image_problem(key, entry):
    value = entry["value"]
    parts = image_parts(value)
    if parts is None:
        return "%s is %r; pin a full image reference registry/repository:tag (like docker.io/library/busybox:1.37.0)" % (key, value)
    if entry["datasource"] == "docker" and entry["depName"] != parts[0]:
        return "%s: the renovate comment's depName %s is not the image's repository %s; make them equal" % (
            key, entry["depName"], parts[0])
    return ""


def _k3s_problem(value):
    minor = k3s_minor(value)
    if minor is None:
        return "k3s_version is %r; pin a K3s release tag like v1.36.4+k3s1" % (value,)
    if minor not in K3S_SUPPORTED_MINORS:
        return "k3s_version is %s, a minor the roles do not support; pin a release of %s" % (
            value, ", ".join("v%d.%d" % m for m in K3S_SUPPORTED_MINORS))
    return ""


def _value_problem(key, entry):
    value, datasource = entry["value"], entry["datasource"]
    if value.lower() in UNPINNED or value.rsplit(":", 1)[-1].lower() in UNPINNED:
        return "%s is %r, a moving tag; pin a release" % (key, value)
    if key.endswith("_image"):
        return _image_problem(key, entry)
    if key == "k3s_version":
        return _k3s_problem(value)
    if key.startswith("gpu_driver_"):  # NVIDIA's driver versions are not semver (595.91.07)
        return "" if gpu_driver.DRIVER_VERSION.match(value) else "%s is %r; pin an NVIDIA driver version like 595.91.07" % (key, value)
    if datasource == "terraform-provider":
        return "" if PLAIN_SEMVER_RE.fullmatch(value) else "%s is %r; pin an exact provider version like 0.83.0" % (key, value)
    return "" if SEMVER_RE.fullmatch(value) else "%s is %r; pin a release version like v1.2.3 or 1.2.3" % (key, value)


def versions_problems(entries, supported=None):
    """One message per problem of the parsed versions file, each saying what to change.

    ``supported``: {key: [versions the roles support]} for entries with a closed list
    (the GPU Operator chart: GPU_OPERATOR_SUPPORTED_VERSIONS).
    """
    problems = []
    for key in REQUIRED_KEYS:
        if key not in entries:
            problems.append("versions.yml: %s is not pinned; add it with its `# renovate:` comment (docs/versions.md)" % key)
    for key, entry in sorted(entries.items()):
        where = "versions.yml line %d" % entry["line"]
        if entry.get("bad_comment"):
            problems.append("%s: %s has a malformed renovate comment %r; write `# renovate: datasource=<%s> depName=<name> "
                            "[registryUrl=<url>]`" % (where, key, entry["bad_comment"], "|".join(DATASOURCES)))
            continue
        if entry["datasource"] is None:
            problems.append("%s: %s has no `# renovate: datasource=... depName=...` comment on the line above; add one so "
                            "Renovate keeps it fresh" % (where, key))
            continue
        if entry["datasource"] not in DATASOURCES:
            problems.append("%s: %s has datasource %s; use one of %s" % (where, key, entry["datasource"], ", ".join(DATASOURCES)))
            continue
        if entry["datasource"] == "helm" and not (entry["registryUrl"] or "").startswith("https://"):
            problems.append("%s: %s is a Helm chart without an https registryUrl in its renovate comment" % (where, key))
            continue
        problem = _value_problem(key, entry)
        if problem:
            problems.append("%s: %s" % (where, problem))
            continue
        allowed = (supported or {}).get(key)
        if allowed is not None and entry["value"] not in allowed:
            problems.append("%s: %s is %s, which the roles do not support; pin one of %s" % (
                where, key, entry["value"], ", ".join(allowed)))
    return problems


def file_problems(path=VERSIONS_FILE):
    """``versions_problems`` of the collection's versions file, or the one message saying why it cannot be read."""
    try:
        entries = load_versions(path)
    except (IOError, OSError, ValueError) as exc:
        return ["%s cannot be read: %s; restore it from the collection (ansible-galaxy collection install --force)" % (path, exc)]
    return versions_problems(entries, {"gpu_operator_chart": list(GPU_OPERATOR_SUPPORTED_VERSIONS)})


def inventory_version_warnings(inventory, hostvars=None):
    """A warning when the inventory pins a K3s minor the roles' default does not support (older clusters
    still work: preflight refuses only what is below K3S_MIN_VERSION of inventory_checks).
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    servers = inv.hosts("k3s_servers")
    first = servers[0] if servers else None
    value = inv.vars(first).get("gpu_cluster_k3s_version") if isinstance(first, str) else None
    minor = k3s_minor(value) if isinstance(value, str) else None
    if minor is None or minor in K3S_SUPPORTED_MINORS:
        return []
    return ["gpu_cluster_k3s_version is %s; the roles are made for %s (versions.yml pins %s; the suite runs a "
            "stand-in k3s, no real one): plan an upgrade (docs/k3s.md, Upgrade) or expect untried behaviour" % (
                value, ", ".join("v%d.%d" % m for m in K3S_SUPPORTED_MINORS), safe_pinned("k3s_version"))]


def safe_pinned(key):
    try:
        return pinned(key)
    except (IOError, OSError, ValueError):
        return "(unreadable)"
