# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of a whole cps.gpu_cluster inventory, as pure functions.

``inventory_problems(groups, hostvars)`` returns one message per problem
(an empty list when the inventory is sound). Each message names the host or
group and the variable, and says what to change. ``inventory_warnings`` returns
what is allowed but probably wrong (printed, never fatal). The contract they
enforce is documented in docs/inventory.md.

Every value is checked against its full string (``re.fullmatch``: a trailing
newline is never accepted) and any type may arrive (None, numbers, nested
lists, mappings): a wrong type is a message, never an exception.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib
import ipaddress
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.components import GPU_OPERATOR_SUPPORTED_VERSIONS
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.vllm import llm_problems, llm_warnings
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.gpu_pools import MODEL_DEVICE_IDS, inventory_pool_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.jupyterhub import jupyterhub_problems, jupyterhub_warnings
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.gpu_driver import driver_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.k3s_parity import inventory_problems as k3s_parity_problems
from ansible_collections.cps.gpu_cluster.plugins.module_utils.numa import numa_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.management import INVENTORY_SETTINGS as MANAGEMENT_SETTINGS
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.management import management_inventory_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.versions import file_problems as versions_file_problems
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.versions import safe_pinned, inventory_version_warnings
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.cluster_workloads import VALUES as WORKLOAD_VALUES, idle_pools, proof
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.k3s import refused_node_labels
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import secrets_needed as secrets_needed_module
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups, cluster_logs, cluster_model, failure_domains
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_monitoring, input_checks
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import known_variables, node_vars, storage_components
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import (
    DNS_LABEL as DNS_LABEL_RE, DNS_NAME as DNS_NAME_RE, DNS_SUBDOMAIN as DNS_SUBDOMAIN_RE, EMAIL as EMAIL_RE,
    GO_DURATION as DURATION_RE, LABEL_NAME as LABEL_NAME_RE, LABEL_VALUE as LABEL_VALUE_RE)

K3S_MIN_VERSION = (1, 31, 6)
_NUM = r"(0|[1-9][0-9]*)"
K3S_VERSION_RE = re.compile(r"v%s\.%s\.%s\+k3s([1-9][0-9]*)" % (_NUM, _NUM, _NUM))
SEMVER_RE = re.compile(r"v?%s\.%s\.%s([-+][0-9A-Za-z.+-]+)?" % (_NUM, _NUM, _NUM))
UNPINNED = ("latest", "stable", "testing", "main", "master", "edge", "head")
# A host name as ansible_host may hold it (case-insensitive DNS name).
HOST_NAME_RE = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?")
PCI_ID_RE = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}")
PCI_ADDRESS_RE = re.compile(r"([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
MAPPING_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
DELIVERY_MODES = ("direct", "fleet")
NFS_STORAGE_CLASS = "nfs-client"
VM_PRESETS = ("small", "medium", "large")

# Kubernetes label syntax: an optional DNS-subdomain prefix and '/', a name of at most 63 characters.
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# A path component: no whitespace, no control characters, nothing an exports file or a shell reads.
PATH_RE = re.compile(r"(/[A-Za-z0-9._+@-]+)+")
ANY_PATH_RE = re.compile(r"[^\x00-\x1f\x7f]+")
# Directories that are never a scratch mount point or an NFS export.
SYSTEM_DIRECTORIES = (
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
    "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib",
    "/var/log", "/var/tmp", "/var/run", "/var/cache", "/export",
)
# Trees nothing may be mounted or exported under.
SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
    "/sys", "/usr", "/var/lib/rancher", "/var/lib/kubelet", "/var/lib/containerd", "/var/log",
)

SCRATCH_DEVICE_RE = re.compile(r"/dev/disk/by-(id|path)/[A-Za-z0-9:._+@-]+")
BATCH_PERCENT_RE = re.compile(r"([1-9][0-9]?|100)%")
SSH_KEY_RE = re.compile(
    r"(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r" [A-Za-z0-9+/]+={0,3}( [^\x00-\x1f\x7f]*)?")
PROXMOX_TOKEN_ID_RE = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z][A-Za-z0-9._-]*![A-Za-z][A-Za-z0-9._-]*")
PROXMOX_NODE_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?")
PROXMOX_STORAGE_RE = re.compile(r"[A-Za-z][A-Za-z0-9._-]*[A-Za-z0-9]")
BRIDGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
COMMAND_RE = re.compile(r"[A-Za-z0-9._/+@-]+")
IMAGE_RE = re.compile(r"[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*"
                      r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?")
VERIFY_IMAGE_KEYS = ("cuda", "vectoradd", "pytorch", "busybox", "tensorflow")

# K3s gives every node a /24 of the IPv4 cluster CIDR (a /64 of an IPv6 one).
NODE_CIDR_MASK = {4: 24, 6: 64}
# Smallest service CIDR accepted: room for the API service (.1), kube-dns (.10) and ~250 services.
SERVICE_CIDR_MAX_PREFIX = {4: 24, 6: 120}
# kube-apiserver refuses a service range with more than 20 host bits.
SERVICE_CIDR_MAX_HOST_BITS = 20

PROXMOX_HOSTS = "proxmox_hosts"
CLUSTER = "k3s_cluster"
SERVERS = "k3s_servers"
AGENTS = "k3s_agents"
GPU_WORKERS = "gpu_workers"
NODE_ROLE_GROUPS = ("gpu_workers", "infra_nodes", "app_nodes")
CLUSTER_GROUPS = (CLUSTER, SERVERS, AGENTS, *NODE_ROLE_GROUPS)
CONTRACT_GROUPS = (PROXMOX_HOSTS, "nfs_servers", *CLUSTER_GROUPS)
LAYOUT = ("all > proxmox_hosts, and all > k3s_cluster > (k3s_servers, k3s_agents > (gpu_workers, infra_nodes, app_nodes)); "
          "see inventories/homelab/hosts.yml and docs/inventory.md")

# Cluster-wide variables: name -> (required, kind). They are read from the
# k3s_cluster hosts and must have the same value on all of them.
CLUSTER_VARIABLES = {
    "gpu_cluster_name": (True, "dns_label"),
    "gpu_cluster_domain": (False, "dns_name"),
    "gpu_cluster_node_network": (True, "network"),
    "gpu_cluster_gateway": (True, "ip"),
    "gpu_cluster_dns_servers": (False, "ip_list"),
    # required with more than one server (k3s_parity.api_vip_problem)
    "gpu_cluster_api_vip": (False, "ip"),
    "gpu_cluster_cluster_cidr": (True, "network"),
    "gpu_cluster_service_cidr": (True, "network"),
    "gpu_cluster_routed_networks": (False, "network_list"),
    "gpu_cluster_nfs_server": (False, "host"),
    "gpu_cluster_nfs_path": (False, "nfs_path"),
    # the nfs-client class's mountOptions and the nfs_client role's mounts (storage_components.nfs_mount_options_problem)
    "gpu_cluster_nfs_mount_options": (False, "nfs_mount_options"),
    "gpu_cluster_k3s_version": (True, "k3s_version"),
    "gpu_cluster_gpu_operator_version": (False, "gpu_operator_version"),
    # the GPU Operator chart's NodeFeatureRule (components.gpu_operator_values node_feature_rules)
    "gpu_cluster_node_feature_rules": (False, "bool"),
    "gpu_cluster_delivery": (False, "delivery"),
    "gpu_cluster_lab": (False, "bool"),
    "gpu_cluster_kubeconfig": (False, "file_path"),
    "gpu_cluster_fleet_dir": (False, "any_path"),
    "gpu_cluster_scratch_mount": (False, "mount_path"),
    "gpu_cluster_k3s_agent_batch": (False, "batch"),
    "gpu_cluster_k3s_drain_timeout": (False, "duration"),
    # how many pre-upgrade-* on-demand snapshots upgrade.yml keeps (k3s etcd-snapshot prune)
    "gpu_cluster_k3s_upgrade_snapshot_retention": (False, "snapshot_count"),
    "gpu_cluster_k3s_cis_profile": (False, "bool"),
    # the node firewall (plugin_utils/node_firewall.py, role k3s_prereq)
    "gpu_cluster_firewall_enabled": (False, "bool"),
    "gpu_cluster_firewall_clients": (False, "network_list"),
    "gpu_cluster_firewall_ssh_clients": (False, "ssh_networks"),
    "gpu_cluster_firewall_nodeports": (False, "bool"),
    "gpu_cluster_backup_dir": (False, "any_path"),
    "gpu_cluster_pod_security_exempt_namespaces": (False, "dns_label_list"),
    "gpu_cluster_state_dir": (False, "any_path"),
    # the hub's database, Prometheus and Grafana (plugin_utils/cluster_model.py STATE_STORAGE_CLASS)
    "gpu_cluster_state_storage_class": (False, "state_class"),
    # the GPU node contract's taint (plugin_utils/cluster_model.py GPU_TAINT); GPU workloads tolerate it
    "gpu_cluster_gpu_taint": (False, "taint"),
    # checked by k3s_parity.inventory_problems; listed here so every host must agree
    "gpu_cluster_http_proxy": (False, "any"),
    "gpu_cluster_https_proxy": (False, "any"),
    "gpu_cluster_no_proxy": (False, "any"),
}

# Variables checked on every host that sets them: name -> kind.
HOST_VARIABLES = {
    "ansible_host": "host",
    "gpu_cluster_node_name": "dns_name",
    "gpu_cluster_node_labels": "label_list",
    "gpu_cluster_node_taints": "taint_list",
    "gpu_cluster_scratch_device": "scratch_device",
    "gpu_cluster_vm_preset": "vm_preset",
    "gpu_cluster_preflight": "switch",
    "gpu_cluster_provision_enabled": "bool",
    "gpu_cluster_provision_inventory_path": "any_path",
    "gpu_cluster_provision_ssh_public_keys": "ssh_keys",
    "gpu_cluster_provision_ssh_timeout": "positive_int",
    "gpu_cluster_terraform_binary": "command",
    "gpu_cluster_terraform_dir": "any_path",
    "gpu_cluster_terraform_plugin_paths": "path_list",
    "gpu_cluster_proxmox_api_url": "https_url",
    "gpu_cluster_proxmox_api_token_id": "proxmox_token_id",
    "gpu_cluster_proxmox_api_token_secret": "secret",
    "gpu_cluster_proxmox_node": "proxmox_node",
    "gpu_cluster_proxmox_storage": "proxmox_storage",
    "gpu_cluster_proxmox_scratch_storage": "proxmox_storage",
    "gpu_cluster_proxmox_bridge": "bridge",
    "gpu_cluster_proxmox_validate_certs": "bool",
    "gpu_cluster_verify_wait_timeout": "positive_int",
    "gpu_cluster_verify_job_timeout": "positive_int",
    "gpu_cluster_verify_namespace": "dns_label",
    "gpu_cluster_verify_images": "verify_images",
    "gpu_cluster_verify_gpu_resource": "resource_name",
    "gpu_cluster_verify_smoke_tests": "bool",
    "gpu_cluster_verify_gpu_inventory": "bool",
    "gpu_cluster_verify_report_dir": "any_path",
    "gpu_cluster_verify_render_dir": "any_path",
    "gpu_cluster_verify_expected": "resource_counts",
    "gpu_cluster_verify_fast_scratch_class": "dns_name",
    "gpu_cluster_verify_fast_scratch_node_selector": "label_map",
}

# Per-host sizes: must be positive integers when set.
POSITIVE_INT_VARIABLES = (
    "gpu_cluster_vm_cores",
    "gpu_cluster_vm_memory_mb",
    "gpu_cluster_vm_disk_gb",
    "gpu_cluster_scratch_disk_gb",
    "gpu_cluster_proxmox_template_id",
)


def _is_str(value):
    return isinstance(value, str)


def _full(regex, value):
    """True when value is a string that regex matches entirely (no trailing newline)."""
    return _is_str(value) and regex.fullmatch(value) is not None


def _net(value):
    """An ip_network from a CIDR string, or None when it is not one (host bits must be zero)."""
    if not _is_str(value) or "/" not in value or value != value.strip():
        return None
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError:
        return None


# A dotted-quad IPv4 address in the form ipaddress accepts (no leading zeros): parsed here, its
# octets handed to IPv4Address as one integer (the same object, a fifth of the time; preflight
# parses every node's address).
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")


def _ip(value):
    """An ip_address from a string, or None."""
    if not isinstance(value, str) or value != value.strip():
        return None
    if _IPV4.fullmatch(value):
        a, b, c, d = value.split(".")
        return ipaddress.IPv4Address((int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d))
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _group(groups, name):
    hosts = groups.get(name) if isinstance(groups, dict) else None
    if not isinstance(hosts, (list, tuple)):
        return []
    return [host for host in hosts if isinstance(host, str)]


def _vars(hostvars, host):
    variables = hostvars.get(host) if isinstance(hostvars, dict) else None
    return variables if isinstance(variables, dict) else {}


class _Groups(dict):
    """The groups of one preflight run, with its K3s hosts computed once (the checks ask for them
    several times; at 50,000 nodes each pass counts)."""
    cluster_hosts = None


def _cluster_hosts(groups):
    """Every host of a group of the K3s part of the contract, in order, once."""
    cached = getattr(groups, "cluster_hosts", None)
    if cached is not None:
        return list(cached)
    hosts = []
    for group in CLUSTER_GROUPS:
        hosts.extend(_group(groups, group))
    hosts = input_checks.unique(hosts)
    if isinstance(groups, _Groups):
        groups.cluster_hosts = tuple(hosts)
    return hosts


def parse_k3s_version(value):
    """(major, minor, patch, k3s_release) of a K3s release tag like v1.33.5+k3s1, or None."""
    match = K3S_VERSION_RE.fullmatch(value) if _is_str(value) else None
    return tuple(int(part) for part in match.groups()) if match else None


def node_ip(hostvars_of_host):
    """The node IP of a host: gpu_cluster_node_ip when set, else ansible_host."""
    value = hostvars_of_host.get("gpu_cluster_node_ip")
    if value is None:
        value = hostvars_of_host.get("ansible_host")
    return value


def _valid_dns_name(value):
    return _full(DNS_NAME_RE, value)


def _system_path(path):
    """True when path is / or a system directory, or lies under a system tree."""
    if path == "/" or path in SYSTEM_DIRECTORIES:
        return True
    return any(path.startswith(tree + "/") for tree in SYSTEM_TREES)


def _path_advice(value, example, system_ok=False):
    """None when value is a clean absolute path (no '.', '..', whitespace or control characters)."""
    if not _is_str(value):
        return "use an absolute path (like %s)" % example
    if value == "/":
        return "'/' is the whole file system; use a directory of its own (like %s)" % example
    if not _full(PATH_RE, value):
        return ("use an absolute path of letters, digits and . _ + @ - only, without whitespace, newlines, "
                "'//' or a trailing '/' (like %s)" % example)
    if any(part in (".", "..") for part in value.split("/")):
        return "'.' and '..' are not allowed in the path; write it out (like %s)" % example
    if not system_ok and _system_path(value):
        return "%s is a system directory; use a directory of its own (like %s)" % (value, example)
    return None


def _list_of(value, valid):
    return isinstance(value, list) and all(valid(item) for item in value)


def _label_key(value):
    if not _is_str(value) or value.count("/") > 1:
        return False
    prefix, _slash, name = value.rpartition("/")
    if prefix and not _valid_dns_name(prefix):
        return False
    return _full(LABEL_NAME_RE, name)


def _label(value):
    if not _is_str(value) or "=" not in value:
        return False
    key, _eq, label_value = value.partition("=")
    return _label_key(key) and _full(LABEL_VALUE_RE, label_value)


def _taint(value):
    if not _is_str(value) or ":" not in value:
        return False
    spec, _colon, effect = value.rpartition(":")
    if effect not in TAINT_EFFECTS:
        return False
    key, eq, taint_value = spec.partition("=")
    return _label_key(key) and (not eq or _full(LABEL_VALUE_RE, taint_value))


def _batch(value):
    if node_vars.is_int(value):
        return value > 0
    if _is_str(value):
        return (value.isdigit() and value == value.strip() and int(value) > 0 and value[0] != "0") or _full(BATCH_PERCENT_RE, value)
    return isinstance(value, list) and bool(value) and all(not isinstance(item, list) and _batch(item) for item in value)


def _duration(value):
    return _full(DURATION_RE, value) and any(ch in "123456789" for ch in value)


def _https_url_advice(value):
    example = "https://10.0.0.2:8006/api2/json"
    if not _is_str(value) or not _full(re.compile(r"[^\s\x00-\x1f\x7f]+"), value):
        return "use an https URL without whitespace (like %s)" % example
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        port = -1
        parts = None
    host = (parts.hostname if parts is not None else None) or ""
    if port is not None and not 0 < port < 65536:
        advice = "the port is not a number from 1 to 65535"
    elif parts.scheme != "https":
        advice = "the Proxmox API must be reached over https (the token travels with every request)"
    elif not (_ip(host) is not None or _full(HOST_NAME_RE, host)):
        advice = "the URL names no valid host"
    else:
        return None
    return "%s; use a URL like %s" % (advice, example)


def _image_pinned(value):
    if not _full(IMAGE_RE, value):
        return False
    if "@sha256:" in value:
        return True
    tag = value.rsplit("/", 1)[-1]
    return ":" in tag and tag.rsplit(":", 1)[1] not in UNPINNED


def _verify_images_advice(value):
    if not isinstance(value, dict):
        return "use a mapping of image name to a pinned image reference (like {cuda: registry.lan/nvidia/cuda:12.4.1-base-ubuntu22.04})"
    unknown = [key for key in value if key not in VERIFY_IMAGE_KEYS]
    if unknown:
        return "unknown image name(s) %s; the names are %s" % (", ".join(repr(key) for key in unknown), ", ".join(VERIFY_IMAGE_KEYS))
    bad = [key for key in value if not _image_pinned(value[key])]
    if bad:
        return "%s: use a pinned image reference with a tag or a digest, never latest (like registry.lan/library/busybox:1.36.1)" % (
            ", ".join(bad))
    return None


def _resource_name(value):
    """An extended resource name: a DNS-subdomain prefix, '/', a label name (nvidia.com/gpu)."""
    return _is_str(value) and "/" in value and _label_key(value)


# kind -> (is the value valid?, what to use instead) or a function value -> advice or None.
KINDS = {
    "any": (lambda v: True, ""),
    "dns_label": (lambda v: _full(DNS_LABEL_RE, v),
                  "use a DNS label: lowercase letters, digits and '-', at most 63 characters (like homelab)"),
    "dns_name": (_valid_dns_name, "use a lowercase DNS domain (like homelab.lan)"),
    "state_class": (lambda v: _valid_dns_name(v) and v != NFS_STORAGE_CLASS,
                    "use a StorageClass of local volumes (like local-path): SQLite and Prometheus' TSDB need "
                    "file locks NFS does not give"),
    "network": (lambda v: _net(v) is not None,
                "not a network in CIDR form; use an address with zero host bits and a prefix length (like 10.42.0.0/16)"),
    "network_list": (lambda v: _list_of(v, lambda item: _net(item) is not None),
                     "use a list of networks in CIDR form (like [192.168.1.0/24])"),
    "ssh_networks": (lambda v: _list_of(v, lambda item: _net(item) is not None) and bool(v),
                     "use a non-empty list of networks in CIDR form (like [192.168.1.0/24]): Ansible reaches the nodes "
                     "over SSH, so the firewall must admit it from somewhere"),
    "dns_label_list": (lambda v: _list_of(v, lambda item: _full(DNS_LABEL_RE, item)),
                       "use a list of namespace names: DNS labels, lowercase letters, digits and '-' (like [jupyterhub])"),
    "ip": (lambda v: _ip(v) is not None, "not an IP address; use a literal address (like 10.0.0.100)"),
    "ip_list": (lambda v: isinstance(v, list) and bool(v) and all(_ip(item) is not None for item in v),
                "use a list of IP addresses (like [10.0.0.1])"),
    "host": (lambda v: _full(_IPV4, v) or _ip(v) is not None or _full(HOST_NAME_RE, v), "use an IP address or a DNS name (like 10.0.0.30)"),
    "nfs_path": lambda v: _path_advice(v, "/export/k3s"),
    "nfs_mount_options": storage_components.nfs_mount_options_problem,
    "mount_path": lambda v: _path_advice(v, "/mnt/fast-scratch"),
    "file_path": (lambda v: _is_str(v) and (v.startswith("/") or v.startswith("~/")) and _full(ANY_PATH_RE, v) and not v.endswith("/"),
                  "use the absolute path of a file, without newlines (like /home/me/.kube/homelab.yaml)"),
    "any_path": (lambda v: _full(ANY_PATH_RE, v) and v.strip() == v, "use a path without newlines or other control characters"),
    "path_list": (lambda v: _list_of(v, lambda item: _full(ANY_PATH_RE, item)), "use a list of paths"),
    "delivery": (lambda v: _is_str(v) and v in DELIVERY_MODES, "use one of %s" % ", ".join(DELIVERY_MODES)),
    "vm_preset": (lambda v: _is_str(v) and v in VM_PRESETS, "use one of %s (terraform/proxmox presets)" % ", ".join(VM_PRESETS)),
    "bool": (lambda v: isinstance(v, bool), "use true or false (a YAML boolean, not a string)"),
    "switch": (lambda v: isinstance(v, bool) or v in ("true", "false"), "use true or false"),
    "positive_int": (lambda v: node_vars.is_int(v) and v > 0, "use a positive integer (seconds)"),
    "snapshot_count": (lambda v: node_vars.is_int(v) and 1 <= v <= 1000, "use a whole number of snapshots from 1 to 1000 (like 3)"),
    "batch": (_batch, "use a positive number of hosts (like 2), a percentage from 1% to 100% (like 50%), or a list of those"),
    "duration": (_duration, "use a positive duration with a unit, as kubectl reads it (like 600s or 10m)"),
    "label_list": (lambda v: _list_of(v, _label),
                   "use a list of Kubernetes labels key=value (key: optional DNS prefix and '/', then at most 63 of "
                   "letters, digits, '-', '_', '.'; like [example.com/team=ml])"),
    "taint": (_taint, "use one taint key=value:Effect (or key:Effect) with Effect one of %s (like nvidia.com/gpu=present:NoSchedule)"
              % ", ".join(TAINT_EFFECTS)),
    "taint_list": (lambda v: _list_of(v, _taint),
                   "use a list of taints key=value:Effect (or key:Effect) with Effect one of %s (like [dedicated=ml:NoSchedule])"
                   % ", ".join(TAINT_EFFECTS)),
    "label_map": (lambda v: isinstance(v, dict) and all(_label_key(k) and _full(LABEL_VALUE_RE, val) for k, val in v.items()),
                  "use a mapping of Kubernetes label keys to string values (like {gpu: \"true\"})"),
    "scratch_device": (lambda v: _full(SCRATCH_DEVICE_RE, v),
                       "name the disk by a stable id, like /dev/disk/by-id/virtio-scratch (never /dev/sdX)"),
    "ssh_keys": (lambda v: _list_of(v, lambda item: _full(SSH_KEY_RE, item)),
                 "use a list of one-line SSH public keys (like [\"ssh-ed25519 AAAA... me@laptop\"])"),
    "command": (lambda v: _full(COMMAND_RE, v), "use a command name or path without spaces (like terraform or /usr/local/bin/tofu)"),
    "https_url": _https_url_advice,
    "proxmox_token_id": (lambda v: _full(PROXMOX_TOKEN_ID_RE, v), "use user@realm!tokenname (like terraform@pve!gpu-cluster)"),
    "proxmox_node": (lambda v: _full(PROXMOX_NODE_RE, v), "use the Proxmox node name (letters, digits and '-', like pve1)"),
    "proxmox_storage": (lambda v: _full(PROXMOX_STORAGE_RE, v), "use a Proxmox storage id (like local-lvm)"),
    "bridge": (lambda v: _full(BRIDGE_RE, v), "use a Linux bridge name of at most 15 characters (like vmbr0)"),
    "verify_images": _verify_images_advice,
    "resource_name": (_resource_name, "use an extended resource name like nvidia.com/gpu"),
    "resource_counts": (lambda v: isinstance(v, dict) and all(_resource_name(k) and node_vars.is_int(n) and n >= 0 for k, n in v.items()),
                        "use a mapping of extended resource names to counts (like {nvidia.com/mig-1g.10gb: 7})"),
}


def _check_secret(where, name, value):
    if _is_str(value) and value and _full(re.compile(r"[^\s\x00-\x1f\x7f]+"), value):
        return []
    return ["%s: %s is not a one-line string (value not shown); set the token secret, or better export PROXMOX_TOKEN_SECRET" % (where, name)]


def _booleans():
    """The variables CLUSTER_VARIABLES and HOST_VARIABLES already judge as booleans."""
    names = [name for name, kind in HOST_VARIABLES.items() if kind == "bool"]
    names += [name for name, spec in CLUSTER_VARIABLES.items() if spec[1] == "bool"]
    return frozenset(names)


def _check_kind(where, name, kind, value):
    """Problems of one value against its kind (see CLUSTER_VARIABLES and HOST_VARIABLES)."""
    special = {
        "k3s_version": _check_k3s_version,
        "version": _check_pinned,
        "gpu_operator_version": _check_gpu_operator_version,
        "secret": _check_secret,
    }
    if kind in special:
        return special[kind](where, name, value)
    rule = KINDS[kind]
    if callable(rule):
        advice = rule(value)
    else:
        valid, advice = rule
        advice = None if valid(value) else advice
    if advice is None:
        return []
    separator = ", " if advice.startswith("not ") else "; "
    return ["%s: %s is %r%s%s" % (where, name, value, separator, advice)]


def _check_pinned(where, name, value):
    if _is_str(value) and value.strip().lower() in UNPINNED:
        return ["%s: %s is %r, which is not pinned; pin an exact release (like v1.2.3) so every run installs the same thing" % (where, name, value)]
    if not _full(SEMVER_RE, value):
        return ["%s: %s is %r; pin an exact release number (like v1.2.3), not a range or channel" % (where, name, value)]
    return []


def _check_gpu_operator_version(where, name, value):
    problems = _check_pinned(where, name, value)
    if problems:
        return problems
    if value not in GPU_OPERATOR_SUPPORTED_VERSIONS:
        return ["%s: %s is %r, a GPU Operator release the gpu role does not support (the chart values it writes, the "
                "driver, toolkit and CDI settings for k3s's containerd, are made for these releases only: the chart's "
                "values change between releases); choose one of %s"
                % (where, name, value, ", ".join(GPU_OPERATOR_SUPPORTED_VERSIONS))]
    return []


def _k3s_pin():
    """The k3s release versions.yml pins, for a suggestion (issue 43: the pin, not an old example)."""
    pin = safe_pinned("k3s_version")
    return pin if parse_k3s_version(pin) else "vMAJOR.MINOR.PATCH+k3sN"


def _check_k3s_version(where, name, value):
    if _is_str(value) and value.strip().lower() in UNPINNED:
        return ["%s: %s is %r, a channel, not a release; pin a K3s release like %s (the version versions.yml pins)"
                % (where, name, value, _k3s_pin())]
    parsed = parse_k3s_version(value)
    if parsed is None:
        return ["%s: %s is %r; pin a K3s release tag like %s, the version versions.yml pins (vMAJOR.MINOR.PATCH+k3sN, "
                "no leading zeros)" % (where, name, value, _k3s_pin())]
    if parsed[:3] < K3S_MIN_VERSION:
        return ["%s: %s is %s, older than the oldest supported v%d.%d.%d; pin %s (the version versions.yml pins) or "
                "at least v%d.%d.%d+k3s1" % (where, name, value, *K3S_MIN_VERSION, _k3s_pin(), *K3S_MIN_VERSION)]
    return []


def _host_values(hostvars, hosts, names=None):
    """{name: {id(value): (value, [host, ...])}} of the variables the hosts set (``names``: only
    these), in one pass over the hosts. Linear: values are grouped by identity (group_vars give every
    host the same object), so each check judges a distinct value once; :func:`_distinct` merges equal
    values of different objects."""
    wanted = frozenset(names) if names is not None else None
    index = {}
    for host in hosts:
        variables = hostvars.get(host) if isinstance(hostvars, dict) else None
        if not isinstance(variables, dict):
            continue
        for name in (wanted.intersection(variables) if wanted is not None else variables):
            value = variables[name]
            entries = index.get(name)
            if entries is None:
                entries = index[name] = {}
            entry = entries.get(id(value))
            if entry is None:
                entries[id(value)] = (value, [host])
            else:
                entry[1].append(host)
    return index


def _distinct(index, name):
    """[(value, [host, ...]), ...] of ``name`` in ``index`` (:func:`_host_values`), one entry per
    distinct value (by repr) in the order first seen."""
    merged = {}
    for value, on in index.get(name, {}).values():
        key = repr(value)
        if key in merged:
            merged[key][1].extend(on)
        else:
            merged[key] = (value, list(on))
    return list(merged.values())


def _by_value(hostvars, hosts, names):
    """{name: [(value, [host, ...]), ...]} of the ``names`` each host sets (:func:`_distinct`)."""
    index = _host_values(hostvars, hosts, names)
    return dict((name, _distinct(index, name)) for name in names)


def _cluster_values(inv):
    """Cluster-wide values read from the k3s_cluster hosts, plus disagreement problems."""
    problems = []
    hosts = _cluster_hosts(inv.groups)
    order = dict((host, index) for index, host in enumerate(hosts))
    values = {}
    grouped = _by_value(inv.hostvars, hosts, CLUSTER_VARIABLES)
    for name in CLUSTER_VARIABLES:
        seen = grouped[name]
        if len(seen) > 1:
            detail = "; ".join("%s on %s" % (repr(value), ", ".join(on)) for value, on in seen)
            problems.append("k3s_cluster: %s differs between hosts (%s); set it once for the whole cluster in group_vars/all" % (name, detail))
        if seen:
            # the value of the first host (in k3s_cluster order) that sets it
            values[name] = min(seen, key=lambda entry: order[entry[1][0]])[0]
    return values, problems


def _check_layout(groups):
    """Contract groups outside k3s_cluster, and K3s nodes in neither k3s_servers nor k3s_agents."""
    problems = []
    cluster = set(_group(groups, CLUSTER))
    for group in (SERVERS, AGENTS, *NODE_ROLE_GROUPS):
        outside = [host for host in _group(groups, group) if host not in cluster]
        if outside:
            problems.append(
                "%s: %s %s not in k3s_cluster; the groups must be nested as %s"
                % (group, ", ".join(outside), "is" if len(outside) == 1 else "are", LAYOUT))
    servers_and_agents = set(_group(groups, SERVERS)) | set(_group(groups, AGENTS))
    for host in _group(groups, CLUSTER):
        if host not in servers_and_agents:
            problems.append("%s: is in k3s_cluster but in neither k3s_servers nor k3s_agents; every K3s node is a server or an agent (%s)"
                            % (host, LAYOUT))
    return problems


def _check_misspelt_groups(groups):
    """A group whose name is close to one of the collection's groups (``gpu_worker``, ``k3s_server``):
    its hosts would silently be no part of the cluster (issue 43). Groups of other names are the
    user's own and left alone."""
    problems = []
    known = sorted(CONTRACT_GROUPS)
    for group in sorted(g for g in (groups or {}) if _is_str(g)):
        if group in CONTRACT_GROUPS or group in ("all", "ungrouped"):
            continue
        close = difflib.get_close_matches(group, known, n=1, cutoff=0.8)
        if close:
            hosts = _group(groups, group)
            problems.append("%s: is not a group of cps.gpu_cluster, so %s %s no part of the cluster; did you mean %s? "
                            "(the groups: %s)" % (group, ", ".join(hosts) or "its hosts",
                                                  "is" if len(hosts) == 1 else "are", close[0], LAYOUT))
    return problems


def _check_groups(groups):
    problems = []
    servers = _group(groups, SERVERS)
    if not servers:
        problems.append("k3s_servers: the group is empty; add 1 or 3 hosts to k3s_servers (under k3s_cluster)")
    elif len(servers) == 2:
        problems.append(
            "k3s_servers: 2 servers (%s) give no etcd quorum: etcd needs a majority, so losing either server stops the cluster; "
            "use 3 servers for HA (or 1)" % ", ".join(servers))
    elif len(servers) % 2 == 0:
        problems.append(
            "k3s_servers: %d servers (%s) is an even number; etcd quorum needs an odd count, so add or remove one server (use 3 or 5)"
            % (len(servers), ", ".join(servers)))
    agents = set(_group(groups, AGENTS))
    for host in servers:
        if host in agents:
            roles = [g for g in (AGENTS, *NODE_ROLE_GROUPS) if host in set(_group(groups, g))]
            problems.append(
                "%s: is in both k3s_servers and %s; a node is either a server or an agent, so remove it from one group "
                "(GPU workers must be agents: servers keep etcd and are never drained for GPU driver work)" % (host, " and ".join(roles)))
    cluster_hosts = set(_cluster_hosts(groups))
    for host in _group(groups, PROXMOX_HOSTS):
        if host in cluster_hosts:
            problems.append("%s: is in both proxmox_hosts and k3s_cluster; the Proxmox host runs the VMs and is not a K3s node, remove it from one" % host)
    members = dict((group, set(_group(groups, group))) for group in NODE_ROLE_GROUPS)  # each group read once
    for index, first in enumerate(NODE_ROLE_GROUPS):
        for second in NODE_ROLE_GROUPS[index + 1:]:
            for host in _group(groups, first):
                if host in members[second]:
                    problems.append("%s: is in both %s and %s; an agent has one node role, remove it from one group" % (host, first, second))
    for group in NODE_ROLE_GROUPS:
        for host in _group(groups, group):
            if host not in agents:
                problems.append("%s: is in %s but not in k3s_agents; nest %s under k3s_agents (k3s_cluster > k3s_agents > %s)" % (host, group, group, group))
    return problems


def _check_names(groups):
    problems = []
    seen = {}
    for host in _cluster_hosts(groups):
        if not _full(DNS_LABEL_RE, host):
            problems.append(
                "%s: the host name becomes the Kubernetes node name and must be a DNS label "
                "(lowercase letters, digits and '-'); rename it (like wk-gpu1)" % ascii(host)[1:-1])
        seen.setdefault(host.lower(), []).append(host)
    for hosts in seen.values():
        if len(hosts) > 1:
            problems.append("%s: host names differ only in case and would be the same node name; rename one" % ", ".join(hosts))
    return problems


def _ip_number(value):
    """(version, integer) of an IP address string, or None: dotted quads without an object (preflight
    reads every node's address), anything else through :func:`_ip`."""
    if isinstance(value, str) and _IPV4.fullmatch(value):
        a, b, c, d = value.split(".")
        return 4, (int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d)
    address = _ip(value)
    return None if address is None else (address.version, int(address))


def _address(number):
    """The ip_address of a :func:`_ip_number`."""
    return ipaddress.IPv4Address(number[1]) if number[0] == 4 else ipaddress.IPv6Address(number[1])


def _check_node_ips(inv, network, vip, gateway):
    problems = []
    cluster = set(_cluster_hosts(inv.groups))
    owners = {}
    everyone = input_checks.unique(_group(inv.groups, "all") + _cluster_hosts(inv.groups) + _group(inv.groups, PROXMOX_HOSTS)) or list(inv.hostvars)
    # addresses as (version, integer): compared without an object per node
    if network is not None:
        version, low, high = network.version, int(network.network_address), int(network.broadcast_address)
        # the network and broadcast addresses no node may have (none in a /31 or /32)
        edges = (low, high) if network.num_addresses > 2 else ()
    vip = (vip.version, int(vip)) if vip is not None else None
    gateway = (gateway.version, int(gateway)) if gateway is not None else None
    for host in everyone:
        variables = inv.vars(host)
        value = node_ip(variables)
        number = _ip_number(value)
        if host in cluster:
            if value is None:
                problems.append("%s: has no node IP; set ansible_host or gpu_cluster_node_ip to its address in gpu_cluster_node_network" % host)
                continue
            if number is None:
                source = "gpu_cluster_node_ip" if "gpu_cluster_node_ip" in variables else "ansible_host"
                problems.append("%s: node IP %r (from %s) is not an IP address; set gpu_cluster_node_ip to the node's address" % (host, value, source))
                continue
            if network is not None and number[0] == version:
                if not low <= number[1] <= high:
                    problems.append("%s: node IP %s is outside gpu_cluster_node_network %s; change the address or the network"
                                    % (host, _address(number), network))
                elif number[1] in edges:
                    problems.append("%s: node IP %s is the network or broadcast address of %s; pick a host address" % (host, _address(number), network))
            elif network is not None:
                problems.append("%s: node IP %s is not of the same IP version as gpu_cluster_node_network %s" % (host, _address(number), network))
            if number == vip:
                problems.append("%s: node IP %s equals gpu_cluster_api_vip; the VIP must be a free address, change one of them" % (host, _address(number)))
            if number == gateway:
                problems.append("%s: node IP %s equals gpu_cluster_gateway; change the node address" % (host, _address(number)))
        if number is not None:
            owners.setdefault(number, []).append(host)
    for number, hosts in owners.items():
        if len(hosts) > 1:
            problems.append("%s: share the IP %s; give every host its own address (ansible_host / gpu_cluster_node_ip)" % (", ".join(hosts), _address(number)))
    return problems


def _check_networks(values):
    problems = []
    nets = {}
    for name in ("gpu_cluster_node_network", "gpu_cluster_cluster_cidr", "gpu_cluster_service_cidr"):
        if name in values:
            nets[name] = _net(values[name])
    names = [n for n in nets if nets[n] is not None]
    for index, first in enumerate(names):
        for second in names[index + 1:]:
            if nets[first].version == nets[second].version and nets[first].overlaps(nets[second]):
                problems.append(
                    "%s %s overlaps %s %s; they must be disjoint, change one of them (the homelab uses 10.0.0.0/24, 10.42.0.0/16 and 10.43.0.0/16)"
                    % (first, nets[first], second, nets[second]))
    network = nets.get("gpu_cluster_node_network")
    problems.extend(input_checks.ip_family_problems(
        network, [(name, nets.get(name)) for name in ("gpu_cluster_cluster_cidr", "gpu_cluster_service_cidr")]))
    vip = _ip(values.get("gpu_cluster_api_vip"))
    gateway = _ip(values.get("gpu_cluster_gateway"))
    for name, address in (("gpu_cluster_api_vip", vip), ("gpu_cluster_gateway", gateway)):
        if address is None or network is None:
            continue
        if address.version != network.version or address not in network:
            problems.append("%s %s is outside gpu_cluster_node_network %s; pick an address inside the node network" % (name, address, network))
        elif network.num_addresses > 2 and address in (network.network_address, network.broadcast_address):
            problems.append("%s %s is the network or broadcast address of %s; pick a host address" % (name, address, network))
    if vip is not None and vip == gateway:
        problems.append("gpu_cluster_api_vip %s equals gpu_cluster_gateway; the VIP must be a free address in the node network" % vip)
    return problems, network, vip, gateway


def _check_cidr_sizes(groups, values):
    """The cluster CIDR holds a /24 per node; the service CIDR has room for kube-dns (.10) and the services."""
    problems = []
    nodes = len(_cluster_hosts(groups))
    cluster = _net(values.get("gpu_cluster_cluster_cidr"))
    if cluster is not None:
        mask = NODE_CIDR_MASK[cluster.version]
        holds = 2 ** (mask - cluster.prefixlen) if cluster.prefixlen <= mask else 0
        if holds < max(nodes, 1):
            needed = mask - max(nodes - 1, 0).bit_length()
            problems.append(
                "gpu_cluster_cluster_cidr %s holds %d node(s): K3s gives each node a /%d of pod addresses, and the inventory has %d node(s); "
                "use a /%d or larger (the K3s default 10.42.0.0/16 holds 256)" % (cluster, holds, mask, nodes, needed))
    service = _net(values.get("gpu_cluster_service_cidr"))
    if service is not None:
        smallest = SERVICE_CIDR_MAX_PREFIX[service.version]
        host_bits = service.max_prefixlen - service.prefixlen
        if service.prefixlen > smallest:
            problems.append(
                "gpu_cluster_service_cidr %s has %d address(es); it needs room for the API service (.1), kube-dns (.10) and every "
                "Service of the cluster: use a /%d or larger (the K3s default is 10.43.0.0/16)" % (service, service.num_addresses, smallest))
        elif host_bits > SERVICE_CIDR_MAX_HOST_BITS:
            problems.append(
                "gpu_cluster_service_cidr %s is too large: kube-apiserver refuses a service range with more than %d host bits; "
                "use a /%d or smaller (like 10.43.0.0/16)" % (service, SERVICE_CIDR_MAX_HOST_BITS, service.max_prefixlen - SERVICE_CIDR_MAX_HOST_BITS))
    return problems


def _api_url_host(value):
    """The host of a Proxmox API URL, or None when it cannot be read."""
    if not _is_str(value):
        return None
    try:
        return urlsplit(value.strip()).hostname
    except ValueError:
        return None


def _proxmox_addresses(inv):
    """[(label, ip_address)] of the Proxmox hosts (ansible_host) and their API URLs' hosts."""
    found = []
    for host in _group(inv.groups, PROXMOX_HOSTS):
        variables = inv.vars(host)
        address = _ip(variables.get("ansible_host"))
        if address is not None:
            found.append(("%s (proxmox_hosts ansible_host)" % host, "ansible_host", host, address))
        url_host = _api_url_host(variables.get("gpu_cluster_proxmox_api_url"))
        address = _ip(url_host) if url_host else None
        if address is not None:
            found.append(("%s: gpu_cluster_proxmox_api_url" % host, "gpu_cluster_proxmox_api_url", host, address))
    return found


def _check_addresses(inv, values, network, vip):
    """Every address of the inventory against the others: the VIP is free, servers sit outside the
    pod and service networks and inside a network the nodes reach (node network or gpu_cluster_routed_networks)."""
    problems = []
    routed = [_net(item) for item in values.get("gpu_cluster_routed_networks") or [] if _net(item) is not None] \
        if isinstance(values.get("gpu_cluster_routed_networks"), list) else []
    kube_nets = [(name, _net(values.get(name))) for name in ("gpu_cluster_cluster_cidr", "gpu_cluster_service_cidr")]
    kube_nets = [(name, net) for name, net in kube_nets if net is not None]

    servers = []  # (what, address) of the servers the nodes must reach
    dns = values.get("gpu_cluster_dns_servers")
    if isinstance(dns, list):
        servers.extend(("gpu_cluster_dns_servers entry %s" % address, address) for address in (_ip(item) for item in dns) if address is not None)
    nfs = _ip(values.get("gpu_cluster_nfs_server"))
    if nfs is not None:
        servers.append(("gpu_cluster_nfs_server %s" % nfs, nfs))

    # The VIP must be free: not the Proxmox host, its API, the NFS or a DNS server.
    if vip is not None:
        for label, _name, _host, address in _proxmox_addresses(inv):
            if address == vip:
                problems.append("gpu_cluster_api_vip %s equals the address of %s; the VIP must be a free address, change one of them" % (vip, label))
        for what, address in servers:
            if address == vip:
                problems.append("gpu_cluster_api_vip %s equals %s; the VIP must be a free address, change one of them" % (vip, what))

    def reachable(address):
        if network is None:  # the node network is wrong or missing: reported already, nothing to judge against
            return True
        if address.version == network.version and address in network:
            return True
        if any(address.version == net.version and address in net for net in routed):
            return True
        return address.is_global

    for what, address in servers:
        for name, net in kube_nets:
            if address.version == net.version and address in net:
                problems.append("%s is inside %s %s, the cluster's own %s network, so no node could reach it; "
                                "use the server's real address" % (what, name, net, "pod" if name.endswith("cluster_cidr") else "service"))
                break
        else:
            if not reachable(address):
                problems.append(
                    "%s is outside gpu_cluster_node_network %s and gpu_cluster_routed_networks (a value left from another network?); "
                    "use an address in the node network, or list the network the nodes reach it through in gpu_cluster_routed_networks"
                    % (what, network))
    for label, name, host, address in _proxmox_addresses(inv):
        if name != "gpu_cluster_proxmox_api_url":
            for net_name, net in kube_nets:
                if address.version == net.version and address in net:
                    problems.append("%s: ansible_host %s is inside %s %s, the cluster's own network; use the Proxmox host's real address"
                                    % (host, address, net_name, net))
            continue
        for net_name, net in kube_nets:
            if address.version == net.version and address in net:
                problems.append("%s host %s is inside %s %s; use the Proxmox host's real address" % (label, address, net_name, net))
        own = _ip(inv.vars(host).get("ansible_host"))
        if own is not None and own != address and not reachable(address):
            problems.append(
                "%s host %s is neither %s's ansible_host %s nor in gpu_cluster_node_network %s or gpu_cluster_routed_networks "
                "(a value left from another network?); point it at the Proxmox host (like https://%s:8006/api2/json)"
                % (label, address, host, own, network, own))
        elif own is None and not reachable(address):
            problems.append(
                "%s host %s is outside gpu_cluster_node_network %s and gpu_cluster_routed_networks (a value left from another network?); "
                "point it at the Proxmox host" % (label, address, network))
    return problems


def _check_cluster_variables(groups, values):
    problems = []
    for name, (required, kind) in CLUSTER_VARIABLES.items():
        if name not in values or values[name] is None:
            if required:
                problems.append("k3s_cluster: %s is not set; set it in group_vars/all (see docs/inventory.md)" % name)
            continue
        problems.extend(_check_kind("k3s_cluster", name, kind, values[name]))
    if _group(groups, GPU_WORKERS) and values.get("gpu_cluster_gpu_operator_version") is None:
        problems.append("k3s_cluster: gpu_cluster_gpu_operator_version is not set but gpu_workers has hosts; pin a GPU Operator release (one of %s)"
                        % ", ".join(GPU_OPERATOR_SUPPORTED_VERSIONS))
    if ("gpu_cluster_nfs_server" in values) != ("gpu_cluster_nfs_path" in values):
        problems.append("k3s_cluster: set both gpu_cluster_nfs_server and gpu_cluster_nfs_path, or neither")
    if values.get("gpu_cluster_delivery") == "fleet" and not values.get("gpu_cluster_fleet_dir"):
        problems.append("k3s_cluster: gpu_cluster_delivery is fleet but gpu_cluster_fleet_dir is not set; set it to the root of your Fleet repository")
    return problems


_where = input_checks.where


def _check_host_variables(index):
    """HOST_VARIABLES on every host that sets them; one message per distinct bad value (``index``:
    :func:`_host_values` of every host)."""
    problems = []
    for name, kind in HOST_VARIABLES.items():
        for value, on in _distinct(index, name):
            if name == "ansible_host" and value is None:
                continue
            problems.extend(_check_kind(_where(on), name, kind, value))
    return problems


def _check_kubelet_labels(index):
    """Labels the kubelet would register with (gpu_cluster_node_labels, k3s_node_labels, node-label in
    k3s_node_config_extra) that it may not set: it refuses to start with them (k3s.kubelet_may_set_label)."""
    by_label = {}
    sources = [(name, name, lambda value: value) for name in ("gpu_cluster_node_labels", "k3s_node_labels")]
    sources.append(("k3s_node_config_extra", "k3s_node_config_extra node-label",
                    lambda value: value.get("node-label") if isinstance(value, dict) else None))
    for variable, name, read in sources:
        for found, on in index.get(variable, {}).values():
            value = read(found)
            if value is None:
                continue
            items = value if isinstance(value, list) else [value] if _is_str(value) else []
            for label in refused_node_labels([item for item in items if _is_str(item)]):
                by_label.setdefault((name, label), []).extend(on)
    return ["%s: %s holds %s, a label under kubernetes.io or k8s.io that the kubelet may not set on its own node "
            "(it refuses to start: only kubernetes.io/hostname, os, arch, instance-type, topology zone/region and "
            "keys under node.kubernetes.io or kubelet.kubernetes.io are allowed); move it to k3s_node_api_labels, "
            "which the role sets through the API once the node has joined" % (_where(on), name, label)
            for (name, label), on in by_label.items()]


# *_version variables with a rule of their own (NVIDIA's driver versions are not semver: 595.91.07)
_OWN_VERSION_RULES = ("gpu_cluster_gpu_driver_version",)


def _check_versions_elsewhere(index, hosts):
    """Every gpu_cluster_*_version on any host is pinned (not only the known ones): one message per
    variable, naming the first host (in ``hosts`` order) with a bad value, in that host's order."""
    found = []
    position = None
    for name, entries in index.items():
        if not (_is_str(name) and name.endswith("_version") and name.startswith("gpu_cluster_")) or name in CLUSTER_VARIABLES \
                or name in _OWN_VERSION_RULES:
            continue
        bad = [(value, on) for value, on in entries.values() if _check_pinned(on[0], name, value)]
        if bad:
            position = position or dict((host, i) for i, host in enumerate(hosts))
            value, host = min(((value, on[0]) for value, on in bad), key=lambda entry: position[entry[1]])
            found.append((position[host], name, _check_pinned(host, name, value)))
    # in the order a walk over the hosts, then each host's variables, meets them
    return [problem for _first, _name, problems in sorted(found, key=lambda entry: entry[0]) for problem in problems]


def _check_sizes(index, hosts):
    """POSITIVE_INT_VARIABLES: one message per host with a bad value, host by host (``hosts`` order)."""
    bad = []
    for rank, name in enumerate(POSITIVE_INT_VARIABLES):
        for value, on in index.get(name, {}).values():
            if not node_vars.is_int(value) or value <= 0:
                bad.extend((host, rank, name, value) for host in on)
    if not bad:
        return []
    position = dict((host, i) for i, host in enumerate(hosts))
    return ["%s: %s is %r; use a positive integer" % (host, name, value)
            for host, _rank, name, value in sorted(bad, key=lambda entry: (position[entry[0]], entry[1]))]


def _check_pci_ids(host, ids):
    problems = []
    if not isinstance(ids, list):
        return ["%s: gpu_cluster_gpu_pci_ids is %r; use a list of vendor:device ids like [\"10de:20b5\"]" % (host, ids)]
    for pci_id in ids:
        if not _full(PCI_ID_RE, pci_id):
            problems.append(
                "%s: gpu_cluster_gpu_pci_ids entry %r is not in vvvv:dddd form (4 hex digits vendor, ':', 4 hex digits device, "
                "like 10de:20b5 from `lspci -nn`); fix it" % (host, pci_id))
    if len({str(i).lower() for i in ids}) != len(ids):
        problems.append("%s: gpu_cluster_gpu_pci_ids lists an id twice; list each vendor:device id once" % host)
    return problems


def _check_proxmox_hosts(inv):
    """PCI ids and PCI devices of every Proxmox host; returns (problems, {device name: address}).

    Device names are Proxmox mapping ids, unique across the whole inventory (GPU workers name them);
    addresses are unique per Proxmox host (two hosts may each have a card at 0000:17:00.0).
    """
    problems = []
    devices = {}
    for host in _group(inv.groups, PROXMOX_HOSTS):
        variables = inv.vars(host)
        ids = variables.get("gpu_cluster_gpu_pci_ids")
        if ids is not None:
            problems.extend(_check_pci_ids(host, ids))
        listed = variables.get("gpu_cluster_gpu_pci_devices")
        if listed is None:
            continue
        if not isinstance(listed, list):
            problems.append("%s: gpu_cluster_gpu_pci_devices is %r; use a list of {name: ..., address: ...}" % (host, listed))
            continue
        addresses = {}
        for device in listed:
            if not isinstance(device, dict) or "name" not in device or "address" not in device:
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices entry %r needs a name and an address (like {name: a100-0, address: \"0000:17:00.0\"})" % (host, device))
                continue
            name, address = device["name"], device["address"]
            name_ok = _full(MAPPING_NAME_RE, name)
            if not name_ok:
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices name %r is not a valid Proxmox mapping id; start with a letter, then letters, digits, '-' or '_'"
                    % (host, name))
            if not _full(PCI_ADDRESS_RE, address):
                problems.append(
                    "%s: gpu_cluster_gpu_pci_devices %s address %r is not a PCI address; use domain:bus:slot.function like 0000:17:00.0 (from `lspci -D`)"
                    % (host, name if _is_str(name) else repr(name), address))
                continue
            if not name_ok:
                continue
            if name in devices:
                problems.append("%s: PCI device name %s is declared twice in gpu_cluster_gpu_pci_devices; names must be unique" % (host, name))
            devices[name] = address
            key = address.lower()
            if len(key) == 7:
                key = "0000:" + key
            if key in addresses:
                problems.append("%s: PCI address %s is declared twice (%s and %s); each card once" % (host, address, addresses[key], name))
            addresses[key] = name
    return problems, devices


_MODELS_BY_CASE = dict((model.casefold(), model) for model in MODEL_DEVICE_IDS)


def _check_gpu_workers(inv, devices):
    problems = []
    assigned = {}
    for host in _group(inv.groups, GPU_WORKERS):
        variables = inv.vars(host)
        count = variables.get("gpu_cluster_gpu_count")
        count_ok = node_vars.is_int(count) and count > 0
        if count is None:
            problems.append("%s: gpu_cluster_gpu_count is not set; GPU workers declare how many GPUs they have (a positive integer, like 2)" % host)
        elif not count_ok:
            problems.append("%s: gpu_cluster_gpu_count is %r; use a positive integer (the number of GPUs the node must show)" % (host, count))
        model = variables.get("gpu_cluster_gpu_model")
        if model is None:
            problems.append("%s: gpu_cluster_gpu_model is not set; set the model nvidia-smi reports (like NVIDIA A100 80GB PCIe)" % host)
        elif not _full(re.compile(r"[^\x00-\x1f\x7f]+"), model) or not model.strip():
            problems.append("%s: gpu_cluster_gpu_model is %r; use the model name nvidia-smi reports (like NVIDIA A100 80GB PCIe)" % (host, model))
        elif model not in MODEL_DEVICE_IDS and model.casefold() in _MODELS_BY_CASE:
            # verify compares the name with what nvidia-smi reports, and the pools find the card's MIG
            # profiles by it: exactly as NVIDIA spells it (issue 43)
            problems.append("%s: gpu_cluster_gpu_model is %r; did you mean %r? (the model name exactly as nvidia-smi "
                            "reports it)" % (host, model, _MODELS_BY_CASE[model.casefold()]))
        mappings = variables.get("gpu_cluster_gpu_pci_mappings")
        if mappings is None:
            continue
        if not isinstance(mappings, list):
            problems.append("%s: gpu_cluster_gpu_pci_mappings is %r; use a list of PCI device names from gpu_cluster_gpu_pci_devices" % (host, mappings))
            continue
        for name in mappings:
            if not _is_str(name) or name not in devices:
                known = ", ".join(sorted(devices)) or "none declared"
                problems.append(
                    "%s: gpu_cluster_gpu_pci_mappings names %r, which no Proxmox host declares in gpu_cluster_gpu_pci_devices (%s); "
                    "fix the name or declare the device"
                    % (host, name, known))
            elif name in assigned:
                problems.append("%s: PCI device %s is already assigned to %s; a GPU can be passed through to one VM only" % (host, name, assigned[name]))
            else:
                assigned[name] = host
        if count_ok and len(mappings) != count:
            problems.append(
                "%s: gpu_cluster_gpu_pci_mappings lists %d devices but gpu_cluster_gpu_count is %d; make them agree"
                % (host, len(mappings), count))
    return problems


def _present_only(spec):
    """An option spec for values that are set: no defaults, nothing required at the top level."""
    return dict((key, value) for key, value in spec.items() if key not in ("default", "required", "description"))


def _check_role_variables(hostvars, hosts, role_specs):
    """Role variables set in the inventory against the role's meta/argument_specs.yml, as the role
    itself validates them when it starts (types, choices, elements), but before any host is touched.

    ``role_specs`` maps role name -> {option name: option spec}. One message per distinct error.
    """
    problems = []
    roles = [role for role in sorted(role_specs or {}) if isinstance(role_specs[role], dict)]
    # each host's variables read once: {role: [(host, params)]} of the hosts that set that role's options
    owner = {}
    for role in roles:
        for name in role_specs[role]:
            owner.setdefault(name, []).append(role)
    setting = dict((role, []) for role in roles)
    for host in hosts:
        params = {}
        for name in owner.keys() & _vars(hostvars, host).keys():
            for role in owner[name]:
                params.setdefault(role, {})[name] = _vars(hostvars, host)[name]
        for role, values in params.items():
            setting[role].append((host, values))
    for role in roles:
        options = role_specs[role]
        errors = {}
        judged = {}  # the same params (by object: equal values are one object after plain_inventory) judged once
        for host, params in setting[role]:
            key = tuple(sorted((name, id(value)) for name, value in params.items()))
            if key not in judged:
                spec = dict((name, _present_only(options[name])) for name in params if isinstance(options[name], dict))
                result = ArgumentSpecValidator(spec).validate(params)
                secrets = [str(params[name]) for name in spec if spec[name].get("no_log") and str(params[name])]
                masked_errors = []
                for error in result.error_messages:
                    masked = error
                    for secret in secrets:
                        masked = masked.replace(secret, "********")
                    masked_errors.append(masked)
                judged[key] = masked_errors
            for masked in judged[key]:
                errors.setdefault(masked, []).append(host)
        for message, on in errors.items():
            problems.append("%s: role %s: %s; fix the value in the inventory (roles/%s/README.md lists the variables)"
                            % (_where(on), role, message, role))
    return problems


# Cluster-wide settings the features read from the first host that sets them (backups, cluster_logs,
# gpu_driver, cluster_workloads, management, jupyterhub, vllm): every host that sets one must set the same
# value, or the other hosts' values (bad ones included) would never be judged (issue 43). CLUSTER_VARIABLES
# are compared over k3s_cluster by _cluster_values.
CLUSTER_WIDE_SETTINGS = frozenset((*backups.VARIABLES, *cluster_logs.VARIABLES, *WORKLOAD_VALUES,
                                   *MANAGEMENT_SETTINGS.values()))
CLUSTER_WIDE_PREFIXES = ("gpu_cluster_backup_", "gpu_cluster_logs_", "gpu_cluster_gpu_driver_", "gpu_cluster_jupyterhub_",
                         "gpu_cluster_llm_", "gpu_cluster_monitoring_", "gpu_cluster_management_", "gpu_cluster_rancher_",
                         "gpu_cluster_fleet_")


def _check_cluster_wide_agree(distinct):
    """A cluster-wide setting (CLUSTER_WIDE_SETTINGS, CLUSTER_WIDE_PREFIXES) with different values on
    different hosts, naming the hosts of each value; a secret's values are not shown. ``distinct``:
    {name: [(value, [host, ...]), ...]}, one entry per distinct value (:func:`_distinct`)."""
    problems = []
    for name in sorted(n for n in distinct if _is_str(n)):
        if name in CLUSTER_VARIABLES or not (name in CLUSTER_WIDE_SETTINGS or name.startswith(CLUSTER_WIDE_PREFIXES)):
            continue
        seen = distinct[name]
        if len(seen) < 2:
            continue
        secret = any(input_checks.is_secret(name, value) for value, _on in seen)
        detail = "; ".join(("one value on %s" if secret else repr(value) + " on %s") % _where(on) for value, on in seen)
        problems.append("%s differs between hosts (%s)%s; it is one setting for the whole cluster: set it once, in "
                        "group_vars/all" % (name, detail, " (a secret: the values are not shown)" if secret else ""))
    return problems


def _check_setting_forms(distinct):
    """Settings the cluster-wide checks of their feature read from one host only, judged on every
    distinct value any host sets (issue 43): the management ingress class (an IngressClass name, a
    DNS-1123 subdomain), the Let's Encrypt e-mail (EMAIL), the monitoring retention and volume
    (gpu_monitoring.settings_problems)."""
    problems = []
    for value, on in distinct.get("gpu_cluster_ingress_class", []):
        if not (_is_str(value) and DNS_SUBDOMAIN_RE.match(value)):
            problems.append("%s: gpu_cluster_ingress_class is %r; name an IngressClass (a DNS-1123 subdomain: lower-case "
                            "letters, digits, '-' and '.'), like traefik" % (_where(on), value))
    for value, on in distinct.get("gpu_cluster_rancher_letsencrypt_email", []):
        if value not in (None, "") and not (_is_str(value) and EMAIL_RE.match(value)):
            problems.append("%s: gpu_cluster_rancher_letsencrypt_email is %r; use an e-mail address (name@domain), the "
                            "contact Let's Encrypt writes to about the certificate" % (_where(on), value))
    for name in ("nfs_client_mount_options", "storage_components_nfs_mount_options"):
        for value, on in distinct.get(name, []):
            advice = storage_components.nfs_mount_options_problem(value)
            if advice:
                problems.append("%s: %s: %s" % (_where(on), name, advice))
    for value, on in distinct.get("nfs_client_mounts", []):
        problems.extend("%s: nfs_client_mounts: %s" % (_where(on), text) for text in _nfs_client_mount_problems(value))
    for value, on in distinct.get("gpu_cluster_monitoring_retention", []):
        problems.extend("%s: %s" % (_where(on), text) for text in gpu_monitoring.settings_problems(retention=value))
    for value, on in distinct.get("gpu_cluster_monitoring_storage_size", []):
        problems.extend("%s: %s" % (_where(on), text) for text in gpu_monitoring.settings_problems(storage_size=value))
    return problems


NFS_SOURCE_RE = re.compile(r"(?P<host>[^:/\s]+):(?P<path>/.*)", re.DOTALL)


def _nfs_client_mount_problems(mounts):
    """Problems of the nfs_client role's mounts ({src: 'server:/export', path: /mnt/point} each): the
    source a server (an IP address or a DNS name) and an absolute export path, the mount point a
    directory of its own (not a system directory), no mount point twice. Their types are the role
    spec's (_check_role_variables)."""
    problems = []
    seen = set()
    for mount in mounts if isinstance(mounts, list) else []:
        if not isinstance(mount, dict):
            continue
        src, path = mount.get("src"), mount.get("path")
        match = NFS_SOURCE_RE.fullmatch(src) if _is_str(src) else None
        if match is None or not KINDS["host"][0](match.group("host")) or not _full(PATH_RE, match.group("path")):
            problems.append("src %r is not server:/export; name the NFS server (an IP address or a DNS name) and the "
                            "exported path (like 10.0.0.30:/export/datasets)" % (src,))
        advice = _path_advice(path, "/mnt/datasets")
        if advice:
            problems.append("path %r: %s" % (path, advice))
        elif path in seen:
            problems.append("path %s is the mount point of two mounts; give each its own" % path)
        seen.add(path)
    return problems


def _check_unknown_variables(index, role_specs):
    """Variables of the collection's prefixes that it does not read (known_variables): a misspelt or
    renamed setting is refused, naming the closest known one, instead of being silently ignored."""
    roles = role_specs if isinstance(role_specs, dict) else {}
    names = {}
    for name, entries in index.items():
        if known_variables.owner(name, roles) is None:
            continue
        names[name] = [host for _value, hosts in entries.values() for host in hosts]
    return known_variables.unknown_variable_problems(names, roles, _where)


def _guarded(check, *args):
    """Run one check; an unexpected exception becomes a message (preflight never shows a traceback)."""
    try:
        return check(*args)
    except Exception as exc:  # pylint: disable=broad-except
        return ["preflight: the check %s could not read this inventory (%s: %s); fix the value it names or report this"
                % (check.__name__.lstrip("_"), type(exc).__name__, exc)]


def _inventory(inventory, hostvars):
    """The cluster_model.Inventory of one preflight run (made once per filter call), its groups as
    :class:`_Groups` (the K3s hosts computed once)."""
    inv = cluster_model.inventory(inventory, hostvars)
    if not isinstance(inv.groups, _Groups):
        inv.groups = _Groups(inv.groups)
    return inv


def _schedule_problems(inv):
    """The workloads that fit no node, one message each (the scheduling proof, cluster_workloads.proof)."""
    return proof(inv)["problems"]


def operations_problems(inventory, hostvars=None):
    """The backup (Velero) and log aggregation settings (docs/disaster-recovery.md, docs/gpu-pools.md).
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    return (backups.problems(backups.inventory_values(inv)) +
            cluster_logs.problems(cluster_logs.inventory_values(inv)))


def inventory_problems(inventory, hostvars=None, role_specs=None, schedule=True, secrets_needed=False):
    """Every problem of an inventory, one message each (empty list: the inventory is sound).

    ``inventory``: the cluster_model.Inventory the filter made (the checks read it, and the model built
    from it once), or Ansible's ``groups`` (group name -> list of host names) with ``hostvars`` (host
    name -> dict of that host's variables);
    ``role_specs`` (optional) maps role name -> its argument spec options, to check the role
    variables the inventory sets (the filter reads them from roles/*/meta/argument_specs.yml);
    ``schedule``: also run the scheduling proof (cluster_workloads), as preflight does;
    ``secrets_needed``: the components whose vaulted values the run needs (``secrets_needed``
    module: True all, False none, or a list of names), judged as their phases read them.
    """
    inv = _inventory(inventory, hostvars)
    groups, hostvars = inv.groups, inv.hostvars
    problems = []
    problems.extend(_guarded(_check_layout, groups))
    problems.extend(_guarded(_check_groups, groups))
    problems.extend(_guarded(_check_misspelt_groups, groups))
    problems.extend(_guarded(_check_names, groups))
    values, differ = _cluster_values(inv)
    problems.extend(differ)
    problems.extend(_guarded(_check_cluster_variables, groups, values))
    try:
        network_problems, network, vip, gateway = _check_networks(values)
    except Exception as exc:  # pylint: disable=broad-except
        network_problems, network, vip, gateway = ["preflight: the network checks failed (%s: %s)" % (type(exc).__name__, exc)], None, None, None
    problems.extend(network_problems)
    problems.extend(_guarded(_check_cidr_sizes, groups, values))
    problems.extend(_guarded(_check_node_ips, inv, network, vip, gateway))
    problems.extend(_guarded(_check_addresses, inv, values, network, vip))
    everyone = input_checks.unique(_group(groups, "all") + _cluster_hosts(groups) + _group(groups, PROXMOX_HOSTS)) or [h for h in hostvars if _is_str(h)]
    index = _host_values(hostvars, everyone)  # every variable of every host, by value (one pass)
    problems.extend(_guarded(_check_host_variables, index))
    problems.extend(_guarded(_check_kubelet_labels, index))
    problems.extend(_guarded(_check_sizes, index, everyone))
    problems.extend(_guarded(_check_versions_elsewhere, index, everyone))
    # the classes of input (input_checks): every variable of a class, one rule
    role_names = [name for options in (role_specs or {}).values() if isinstance(options, dict) for name in options]
    # by repr for the text check (Ansible templates a value per host: equal values, other objects)
    values = dict((name, _distinct(index, name) if name.startswith("gpu_cluster_") or name in role_names
                   else list(entries.values())) for name, entries in index.items())
    problems.extend(_guarded(input_checks.text_problems, values, role_names))
    problems.extend(_guarded(_check_cluster_wide_agree, values))
    problems.extend(_guarded(_check_setting_forms, values))
    problems.extend(_guarded(input_checks.switch_problems, values, _BOOLEANS))
    problems.extend(_guarded(input_checks.node_name_problems, _cluster_hosts(groups), hostvars))
    problems.extend(_guarded(input_checks.pci_model_problems, _group(groups, PROXMOX_HOSTS), _group(groups, "gpu_workers"), hostvars))
    problems.extend(_guarded(_check_role_variables, hostvars, everyone, role_specs))
    problems.extend(_guarded(_check_unknown_variables, index, role_specs))
    try:
        proxmox_problems, devices = _check_proxmox_hosts(inv)
    except Exception as exc:  # pylint: disable=broad-except
        proxmox_problems, devices = ["preflight: the PCI checks failed (%s: %s)" % (type(exc).__name__, exc)], {}
    problems.extend(proxmox_problems)
    problems.extend(_guarded(_check_gpu_workers, inv, devices))
    problems.extend(_guarded(llm_problems, inv))
    problems.extend(_guarded(inventory_pool_problems, inv))
    problems.extend(_guarded(jupyterhub_problems, inv))
    problems.extend(_guarded(driver_problems, inv))
    problems.extend(_guarded(numa_problems, groups, hostvars))  # module_utils: shipped to targets, reads the raw shape
    problems.extend(_guarded(management_inventory_problems, inv))
    problems.extend(_guarded(k3s_parity_problems, inv))
    problems.extend(_guarded(operations_problems, inv))
    problems.extend(_guarded(failure_domains.placement_problems, inv))
    problems.extend(_guarded(failure_domains.tolerance_problems, inv))
    problems.extend(_guarded(versions_file_problems))
    if schedule and not problems:
        # the scheduling proof judges a sound inventory (its workloads are built from the values
        # checked above): every workload must fit a node of the cluster model
        problems.extend(_guarded(_schedule_problems, inv))
        # and, when the inventory asks to survive a Proxmox host's loss, the proof without each host's nodes
        problems.extend(_guarded(failure_domains.loss_problems, inv))
    # after the proof (a missing vault must not hide what the proof would say)
    problems.extend(_guarded(secrets_needed_module.secret_problems, inv, None, secrets_needed))
    return problems


_BOOLEANS = _booleans()

# ansible_connection values under which ansible_host is a network name of the machine.
NETWORK_CONNECTIONS = (None, "ssh", "ansible.builtin.ssh", "paramiko", "paramiko_ssh", "ansible.builtin.paramiko_ssh", "smart")


def inventory_warnings(inventory, hostvars=None):
    """What is allowed but probably wrong, one message each: printed by preflight, never fatal.

    - a K3s node whose ``ansible_host`` is a DNS name whose first label is not the inventory name
      (k3s registers the node under its inventory name; the name suggests another machine);
    - a host in no group of the contract (no phase touches it);
    - a GPU pool no application would run on (cluster_workloads.idle_pools).

    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``).
    """
    inv = _inventory(inventory, hostvars)
    groups, hostvars = inv.groups, inv.hostvars
    warnings = []
    for host in _cluster_hosts(groups):
        variables = _vars(hostvars, host)
        if variables.get("ansible_connection") not in NETWORK_CONNECTIONS:
            continue
        name = variables.get("ansible_host")
        if not _is_str(name) or _ip(name) is not None or not _full(HOST_NAME_RE, name):
            continue
        first = name.rstrip(".").split(".")[0].lower()
        if first != host.lower():
            warnings.append(
                "%s: ansible_host %s names a machine called %s, but the Kubernetes node is registered as %s (the inventory name); "
                "check that ansible_host points at the VM you mean, or rename the host to %s" % (host, name, first, host, first))
    contract = set()
    for group in CONTRACT_GROUPS:
        contract.update(_group(groups, group))
    for host in _group(groups, "all"):
        if host not in contract and host != "localhost":
            warnings.append("%s: is in no group of the contract (%s), so no phase uses it; %s" % (host, ", ".join(CONTRACT_GROUPS), LAYOUT))
    warnings.extend(_guarded(jupyterhub_warnings, inv))
    warnings.extend(_guarded(llm_warnings, inv))
    warnings.extend(_guarded(pool_warnings, inv))
    warnings.extend(inventory_version_warnings(inv))
    # several Proxmox hosts are valid; provision.yml places every VM on the first (it refuses the rest)
    warnings.extend(_guarded(input_checks.provision_placement_problems, _group(groups, PROXMOX_HOSTS),
                             _group(groups, "gpu_workers"), hostvars, inv.placement))
    # what losing a Proxmox host costs (several hosts, no tolerance asked: a warning)
    warnings.extend(_guarded(failure_domains.loss_warnings, inv))
    return warnings


def pool_warnings(inventory, hostvars=None):
    """A GPU pool that serves nothing: no vLLM model and no JupyterHub profile would run on it (issue 43);
    only the verify Jobs would use its GPUs. ``inventory``: a cluster_model.Inventory (or Ansible's
    groups, with ``hostvars``)."""
    model = cluster_model.inventory(inventory, hostvars).model
    return ["gpu_cluster_gpu_pools: pool %s (%s on %s) serves no workload: no vLLM model and no JupyterHub profile "
            "asks for %s on its nodes, so only the verify Jobs would use its GPUs; give a model or a profile "
            "pool: %s (docs/gpu-pools.md), or remove the pool" % (pool["name"], resource, ", ".join(pool.get("nodes") or []),
                                                                  resource, pool["name"])
            for pool, resource in idle_pools(model)]
