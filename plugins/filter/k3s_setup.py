# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter k3s_setup: the steps of the K3s phase (roles k3s_install and k3s_node), over the private
Python of plugins/plugin_utils/k3s.py, k3s_hardening.py and k3s_parity.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import yaml

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

k3s_token = deferred("k3s_token", "module_utils")
gpu_pools = deferred("gpu_pools")
k3s = deferred("k3s")
k3s_hardening = deferred("k3s_hardening")
k3s_parity = deferred("k3s_parity")
node_firewall = deferred("node_firewall")


def _load(kubeconfig):
    if isinstance(kubeconfig, (str, bytes)):
        return yaml.safe_load(kubeconfig) or {}
    return kubeconfig


def _version_problem(current, wanted, allow_downgrade=False, allow_skip_minor=False, upgrading=True):
    """'' when a node may go from `current` to `wanted`, else what to do (k3s.version_problem)."""
    return k3s.version_problem(current, wanted, bool(allow_downgrade), bool(allow_skip_minor), bool(upgrading))


def _cis_config(role, settings):
    """config.yaml keys of the CIS profile for ``role`` from one dict (keys as in k3s_hardening.cis_config)."""
    return k3s_hardening.cis_config(role, **settings)


def _admission_config(exempt_namespaces, level="restricted", limited_resources=None, pod_security=True):
    """The AdmissionConfiguration: Pod Security with ``exempt_namespaces`` (kube-system always) unless
    ``pod_security`` is false, and the ResourceQuota plugin's ``limitedResources`` when
    ``limited_resources`` (the reserved GPU pools' resource names) is not empty."""
    if not pod_security:
        return k3s_hardening.admission_config(limited_resources)
    return k3s_hardening.pod_security_admission_config(level, exempt_namespaces, limited_resources=limited_resources)


def _proxy_env(settings):
    """Env lines for the k3s unit from {http_proxy, https_proxy, no_proxy (the user's list),
    cluster_cidr, service_cidr, node_ips, vip} (k3s_parity.no_proxy_list and proxy_env)."""
    no_proxy = k3s_parity.no_proxy_list(settings.get("no_proxy") or [], settings.get("cluster_cidr", ""),
                                        settings.get("service_cidr", ""), settings.get("node_ips") or [],
                                        settings.get("vip", ""))
    return k3s_parity.proxy_env(settings.get("http_proxy") or "", settings.get("https_proxy") or "", no_proxy)


def _bootstrap_plan(registered, servers, first_server):
    """Who gets cluster-init, which server answers day-2 operations (k3s.bootstrap_plan)."""
    return k3s.bootstrap_plan(servers, first_server, k3s.probes_from_results(registered))


STEPS = {
    # k3s_install
    "sha256_for": k3s.sha256_for,
    "binary_name": k3s.binary_name,
    "release_arch": k3s.release_arch,
    "version_problem": _version_problem,
    "current_version": k3s.current_version,
    # k3s_node
    "config": lambda settings: k3s.node_config(**settings),
    "iface_for_ip": k3s.interface_for_ip,
    "token_problem": k3s_token.token_problem,
    "duplicate_hostnames": k3s.duplicate_hostnames,
    "taints": k3s.taint_dicts,
    "labels": k3s.label_dict,
    "pool_labels": gpu_pools.pool_node_labels,
    "node_names": k3s_hardening.node_names,
    "node_name_problem": k3s_hardening.node_name_problem,
    "cis_config": _cis_config,
    "admission_config": _admission_config,
    "audit_policy": k3s_hardening.audit_policy,
    "proxy_env": _proxy_env,
    "registries_problems": k3s_parity.registries_problems,
    "etcd_s3_config": lambda value, role="server": k3s_parity.etcd_s3_config(value, role),
    "kubeconfig_named": lambda kubeconfig, name, server: k3s_parity.kubeconfig_named(_load(kubeconfig), name, server),
    "kubeconfig_merge": lambda existing, ours: k3s_parity.kubeconfig_merge(_load(existing), _load(ours)),
    "bootstrap_plan": _bootstrap_plan,
    "local_storage_dirs": k3s.local_storage_dirs,
    # k3s_prereq
    "firewall_ruleset": lambda model, host, settings: node_firewall.ruleset(model, host, **settings),
}


class FilterModule(object):
    """k3s_setup."""

    def filters(self):
        return {"k3s_setup": phase_filter("k3s_setup", STEPS)}
