# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the k3s_node role's registries, proxy, etcd S3, kubeconfig and node-removal logic
(pure functions in plugins/plugin_utils/k3s_parity.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import yaml

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s_parity
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap


def _load(kubeconfig):
    if isinstance(kubeconfig, (str, bytes)):
        return yaml.safe_load(kubeconfig) or {}
    return kubeconfig


def _proxy_env(settings):
    """Env lines for the k3s unit from {http_proxy, https_proxy, no_proxy (the user's list),
    cluster_cidr, service_cidr, node_ips, vip} (k3s_parity.no_proxy_list and proxy_env)."""
    no_proxy = k3s_parity.no_proxy_list(settings.get("no_proxy") or [], settings.get("cluster_cidr", ""),
                                        settings.get("service_cidr", ""), settings.get("node_ips") or [],
                                        settings.get("vip", ""))
    return k3s_parity.proxy_env(settings.get("http_proxy") or "", settings.get("https_proxy") or "", no_proxy)


def _kubeconfig_named(kubeconfig, name, server):
    """k3s's admin kubeconfig (text or dict) with cluster, user and context named `name` and the server set."""
    return k3s_parity.kubeconfig_named(_load(kubeconfig), name, server)


def _kubeconfig_merge(existing, ours):
    """Merge our kubeconfig (dict or text) into an existing one (dict, text, or '' when there is none)."""
    return k3s_parity.kubeconfig_merge(_load(existing), _load(ours))


def _registries_problems(value):
    """Problems of k3s_node_registries (k3s_parity.registries_problems)."""
    return k3s_parity.registries_problems(value)


def _etcd_s3_config(value, role="server"):
    """config.yaml keys for k3s_node_etcd_s3 (servers only)."""
    return k3s_parity.etcd_s3_config(value, role)


def _remove_node_problem(node, cluster_hosts, servers, allow_small_quorum=False):
    """'' when playbooks/remove_node.yml may remove `node`, else why not."""
    return k3s_parity.remove_node_problem(node, cluster_hosts, servers, bool(allow_small_quorum))


class FilterModule(object):
    """k3s_proxy_env, k3s_kubeconfig_named, k3s_kubeconfig_merge, k3s_registries_problems,
    k3s_etcd_s3_config, k3s_remove_node_problem."""

    def filters(self):
        return {
            "k3s_proxy_env": wrap(_proxy_env, "k3s_proxy_env"),
            "k3s_kubeconfig_named": wrap(_kubeconfig_named, "k3s_kubeconfig_named"),
            "k3s_kubeconfig_merge": wrap(_kubeconfig_merge, "k3s_kubeconfig_merge"),
            "k3s_registries_problems": wrap(_registries_problems, "k3s_registries_problems"),
            "k3s_etcd_s3_config": wrap(_etcd_s3_config, "k3s_etcd_s3_config"),
            "k3s_remove_node_problem": wrap(_remove_node_problem, "k3s_remove_node_problem"),
        }
