# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers for the K3s CIS profile and node names.

Follows the K3s CIS hardening guide (docs.k3s.io/security/hardening-guide):
``protect-kernel-defaults`` with the kernel parameters the kubelet insists on,
a Pod Security admission configuration whose cluster default is ``restricted``,
an API audit policy with log rotation, the kubelet streaming timeout and strong
TLS cipher suites.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import node_vars
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import (
    copy_data,
    DNS_LABEL as _DNS_LABEL, DNS_SUBDOMAIN as _DNS_SUBDOMAIN, GO_DURATION as _DURATION)

# The kernel parameters the kubelet checks with --protect-kernel-defaults (it exits when one
# differs): kubelet's setupKernelTunables (pkg/kubelet/cm/container_manager_linux.go) and
# k8s.io/component-helpers/node/util/sysctl. The K3s guide lists the first four; recent
# kernels already default the two key quotas, which are set anyway so the check never trips.
KUBELET_PROTECTED_SYSCTLS = {
    "vm.panic_on_oom": 0,
    "vm.overcommit_memory": 1,
    "kernel.panic": 10,
    "kernel.panic_on_oops": 1,
    "kernel.keys.root_maxkeys": 1000000,
    "kernel.keys.root_maxbytes": 25000000,
}

# The guide's cipher suites (CIS 1.2.x/4.2.x "strong cryptographic ciphers"), for the kubelet and
# the API server alike.
TLS_CIPHER_SUITES = (
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
)

POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
PSA_LABEL_PREFIX = "pod-security.kubernetes.io/"
PSA_MODES = ("enforce", "audit", "warn")
# k3s's own add-ons (CoreDNS, Traefik, ServiceLB, metrics-server, the local-path helper pods)
# and kube-vip run in kube-system and need host access: always exempt, as the guide does.
ALWAYS_EXEMPT_NAMESPACES = ("kube-system",)

AUDIT_LEVELS = ("None", "Metadata", "Request", "RequestResponse")
# Metadata only (who did what to which object, never a request or response body: a Secret's
# value never reaches the audit log); health probes are not logged at all.
DEFAULT_AUDIT_RULES = (
    {"level": "None", "nonResourceURLs": ["/healthz*", "/livez*", "/readyz*", "/version"]},
    {"level": "None", "users": ["system:kube-proxy"], "verbs": ["watch"]},
    {"level": "Metadata"},
)


def node_name_problem(name):
    """Why ``name`` cannot be a Kubernetes node name ('' when it can).

    Node names are DNS-1123 subdomains: lower-case letters, digits, '-' and '.', at most 253
    characters, starting and ending with a letter or digit. ``fullmatch`` so that a trailing
    newline is refused too.
    """
    if not isinstance(name, str) or not name:
        return "the node name is empty"
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return ("node name %r is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
                "at most 253 characters, starting and ending with a letter or digit)" % (name,))
    return ""


def _namespaces(namespaces, what):
    if namespaces is None:
        return []
    if isinstance(namespaces, str) or not isinstance(namespaces, (list, tuple)):
        raise ValueError("%s must be a list of namespace names, got %r" % (what, namespaces))
    for namespace in namespaces:
        if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
            raise ValueError("%s: %r is not a namespace name (a DNS label: lower-case letters, digits "
                             "and '-', at most 63 characters)" % (what, namespace))
    return list(namespaces)


def pod_security_admission_config(level="restricted", exempt_namespaces=None, version="latest", limited_resources=None):
    """The AdmissionConfiguration (apiserver.config.k8s.io/v1) for ``admission-control-config-file``.

    The PodSecurity plugin's cluster default is ``level`` for enforce, audit and warn; kube-system
    and ``exempt_namespaces`` are exempt (no checks at all). Namespaces that need a looser level
    than the default but no exemption carry their own ``pod-security.kubernetes.io/*`` labels
    (:func:`pod_security_labels`). ``limited_resources`` (resource names) adds the ResourceQuota
    plugin's configuration (:func:`resource_quota_plugin`).
    """
    if level not in POD_SECURITY_LEVELS:
        raise ValueError("the Pod Security level must be one of %s, got %r" % (", ".join(POD_SECURITY_LEVELS), level))
    if version != "latest" and not re.fullmatch(r"v1\.(0|[1-9][0-9]*)", str(version)):
        raise ValueError("the Pod Security version must be 'latest' or v1.<minor>, got %r" % (version,))
    namespaces = sorted(set(ALWAYS_EXEMPT_NAMESPACES) | set(_namespaces(exempt_namespaces, "the exempt namespaces")))
    defaults = {}
    for mode in PSA_MODES:
        defaults[mode] = level
        defaults[mode + "-version"] = version
    config = admission_config(limited_resources)
    config["plugins"].insert(0, {
        "name": "PodSecurity",
        "configuration": {
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": defaults,
            "exemptions": {"usernames": [], "runtimeClasses": [], "namespaces": namespaces},
        },
    })
    return config


# An extended resource name as the quota takes it: <domain>/<name> (k8s.io/apimachinery validation
# IsQualifiedName with a DNS subdomain prefix); the GPU pools' names are all of this form.
_RESOURCE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def resource_quota_plugin(limited_resources):
    """The ResourceQuota plugin's entry: pods that ask any of ``limited_resources`` are admitted only
    in a namespace whose ResourceQuota covers that resource (``requests.<name>`` in its ``hard``).

    The plugin's ``limitedResources`` rule (k8s.io/apiserver pkg/admission/plugin/resourcequota
    ``limitedByDefault`` and ``CheckRequest``): a usage name of the pod that *contains* a
    ``matchContains`` string is limited, and a limited name that no quota of the namespace lists is
    refused with "insufficient quota to consume". It holds for namespaces created later too."""
    names = []
    for name in limited_resources or []:
        if not isinstance(name, str) or not _RESOURCE_NAME.fullmatch(name) or len(name) > 253:
            raise ValueError("limited resources: %r is not an extended resource name like nvidia.com/gpu.shared" % (name,))
        if name not in names:
            names.append(name)
    return {
        "name": "ResourceQuota",
        "configuration": {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "ResourceQuotaConfiguration",
            "limitedResources": [{"apiGroup": "", "resource": "pods", "matchContains": sorted(names)}],
        },
    }


def admission_config(limited_resources=None):
    """An AdmissionConfiguration with the ResourceQuota plugin's entry when ``limited_resources`` is
    not empty (no plugins otherwise): what servers get when the CIS profile (and with it the
    PodSecurity entry) is off."""
    plugins = [resource_quota_plugin(limited_resources)] if limited_resources else []
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": plugins}


def pod_security_labels(level):
    """``pod-security.kubernetes.io/{enforce,audit,warn}: <level>`` for a namespace's metadata."""
    if level not in POD_SECURITY_LEVELS:
        raise ValueError("the Pod Security level must be one of %s, got %r" % (", ".join(POD_SECURITY_LEVELS), level))
    return dict((PSA_LABEL_PREFIX + mode, level) for mode in PSA_MODES)


def audit_policy(rules=None):
    """The API audit Policy (audit.k8s.io/v1); ``rules`` replace :data:`DEFAULT_AUDIT_RULES`."""
    chosen = copy_data(list(rules) if rules else list(DEFAULT_AUDIT_RULES))
    for index, rule in enumerate(chosen):
        if not isinstance(rule, dict) or rule.get("level") not in AUDIT_LEVELS:
            raise ValueError("audit rule #%d needs a level of %s, got %r" % (index, ", ".join(AUDIT_LEVELS), rule))
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        # one event per request at ResponseComplete, not a second one when it is received
        "omitStages": ["RequestReceived"],
        "rules": chosen,
    }


def cis_config(role, *, admission_config_file, audit_policy_file, audit_log_path,
               audit_log_maxage=30, audit_log_maxbackup=10, audit_log_maxsize=100,
               streaming_connection_idle_timeout="5m"):
    """The config.yaml keys of the K3s CIS profile for a server or an agent.

    Both: ``protect-kernel-defaults`` and the kubelet's streaming timeout and cipher suites.
    Servers also: the Pod Security admission configuration, the audit policy and log rotation,
    the API server's cipher suites, service-account tokens not extended past their expiry, and a
    garbage-collection threshold for terminated pods (all as in the K3s guide).
    """
    if role not in ("server", "agent"):
        raise ValueError("role must be 'server' or 'agent', got %r" % (role,))
    if not _DURATION.fullmatch(str(streaming_connection_idle_timeout)):
        raise ValueError("streaming_connection_idle_timeout must be a duration like 5m or 30s, got %r"
                         % (streaming_connection_idle_timeout,))
    numbers = {"audit_log_maxage": audit_log_maxage, "audit_log_maxbackup": audit_log_maxbackup,
               "audit_log_maxsize": audit_log_maxsize}
    for name, given in list(numbers.items()):
        # a numeric string comes from -e key=value or a quoted inventory value
        number = int(given) if isinstance(given, str) and re.fullmatch(r"[0-9]+", given) else given
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError("%s must be a positive whole number, got %r" % (name, given))
        numbers[name] = number
    audit_log_maxage, audit_log_maxbackup, audit_log_maxsize = (
        numbers["audit_log_maxage"], numbers["audit_log_maxbackup"], numbers["audit_log_maxsize"])
    ciphers = ",".join(TLS_CIPHER_SUITES)
    config = {
        "protect-kernel-defaults": True,
        "kubelet-arg": [
            "streaming-connection-idle-timeout=%s" % streaming_connection_idle_timeout,
            "tls-cipher-suites=%s" % ciphers,
        ],
    }
    if role == "server":
        for name, path in (("admission_config_file", admission_config_file), ("audit_policy_file", audit_policy_file),
                           ("audit_log_path", audit_log_path)):
            if not isinstance(path, str) or not path.startswith("/") or "\n" in path:
                raise ValueError("%s must be an absolute path, got %r" % (name, path))
        config["kube-apiserver-arg"] = [
            "admission-control-config-file=%s" % admission_config_file,
            "audit-policy-file=%s" % audit_policy_file,
            "audit-log-path=%s" % audit_log_path,
            "audit-log-maxage=%d" % audit_log_maxage,
            "audit-log-maxbackup=%d" % audit_log_maxbackup,
            "audit-log-maxsize=%d" % audit_log_maxsize,
            "tls-cipher-suites=%s" % ciphers,
            "service-account-extend-token-expiration=false",
        ]
        config["kube-controller-manager-arg"] = ["terminated-pod-gc-threshold=100"]
    return config


def merge_config(config, more):
    """``config`` updated with ``more``: keys replace, except the list-valued ``*-arg`` keys
    (``kubelet-arg``, ``kube-apiserver-arg``, ...), which are appended so that a later layer adds
    arguments without dropping earlier ones (the flag given last wins in Kubernetes)."""
    if not isinstance(more or {}, dict):
        raise ValueError("extra config.yaml keys must be a dict of key: value, got %r" % (more,))
    result = copy_data(config)
    for key, value in (more or {}).items():
        if key.endswith("-arg") and isinstance(result.get(key), list):
            added = value if isinstance(value, list) else [value]
            result[key] = result[key] + [item for item in copy_data(added) if item not in result[key]]
        else:
            result[key] = copy_data(value)
    return result


def node_names(hosts, hostvars):
    """The Kubernetes node name of each inventory host: its ``gpu_cluster_node_name``, else the
    inventory name (the name k3s registers, verify checks and the fast-scratch nodePathMap lists)."""
    names = []
    for host in hosts or []:
        variables = hostvars[host] if host in hostvars else {}
        name = node_vars.node_name(host, variables)
        names.append(str(name))
    return names
