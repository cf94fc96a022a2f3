# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the k3s roles (config.yaml rendering, interfaces, checksums, versions)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_token
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s


def _wrap(func):
    def wrapped(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc)) from exc
    wrapped.__name__ = func.__name__
    wrapped.__doc__ = func.__doc__
    return wrapped


def _node_config(settings):
    """Render config.yaml's dict from one dict of settings (keys as in k3s.node_config)."""
    return k3s.node_config(**settings)


def _probes(registered):
    """{server: {reachable, etcd, token, api}} from the probe loops' registered results.

    registered: {'etcd': results, 'token': results, 'api': results}, each a loop over the
    servers (item = server) of stat (etcd directory, server token) and uri (/ping on 6443).
    """
    probes = {}
    for kind, results in (registered or {}).items():
        for result in results or []:
            host = result.get("item")
            entry = probes.setdefault(host, {"reachable": True, "etcd": False, "token": False, "api": False})
            if result.get("unreachable"):
                entry["reachable"] = False
                continue
            if kind == "api":
                entry["api"] = int(result.get("status", -1) or -1) > 0
            else:
                stat = result.get("stat") or {}
                entry[kind] = bool(stat.get("exists"))
    return probes


def _bootstrap_plan(registered, servers, first_server):
    """Who gets cluster-init, which server answers day-2 operations (k3s.bootstrap_plan)."""
    return k3s.bootstrap_plan(servers, first_server, _probes(registered))


def _restore_probes(registered):
    """{server: {reachable, snapshot, restored, joined}} from the restore probe loops.

    registered: {'snapshot': stat results (the named file in the snapshot directory),
    'restored': and 'joined': slurp results of the restore markers}, each a loop over the servers.
    """
    probes = {}
    for kind, results in (registered or {}).items():
        for result in results or []:
            host = result.get("item")
            entry = probes.setdefault(host, {"reachable": True, "snapshot": False, "restored": "", "joined": ""})
            if result.get("unreachable"):
                entry["reachable"] = False
            elif kind == "snapshot":
                entry["snapshot"] = bool((result.get("stat") or {}).get("exists"))
            elif result.get("content"):
                entry[kind] = base64.b64decode(result["content"]).decode("utf-8", "replace").strip()
    return probes


def _restore_plan(registered, servers, first_server, snapshot, backups=None, s3=False):  # noqa: PLR0917 - a filter: Jinja passes by position
    """Where and how an etcd snapshot restore runs, or why it may not (k3s.restore_plan)."""
    return k3s.restore_plan(servers, first_server, _restore_probes(registered), snapshot, backups, bool(s3))


def _version_problem(current, wanted, allow_downgrade=False, allow_skip_minor=False):
    """'' when a node may go from `current` to `wanted`, else what to do (k3s.version_problem)."""
    return k3s.version_problem(current, wanted, bool(allow_downgrade), bool(allow_skip_minor))


class FilterModule(object):
    """k3s_node_config, k3s_iface_for_ip, k3s_sha256_for,
    k3s_binary_name, k3s_release_arch, k3s_token_problem, k3s_duplicate_hostnames, k3s_taints,
    k3s_version_problem, k3s_join_version_problem, k3s_current_version, k3s_bootstrap_plan, k3s_restore_plan,
    k3s_identity_plan."""

    def filters(self):
        return {
            "k3s_node_config": _wrap(_node_config),
            "k3s_iface_for_ip": _wrap(k3s.interface_for_ip),
            "k3s_sha256_for": _wrap(k3s.sha256_for),
            "k3s_binary_name": _wrap(k3s.binary_name),
            "k3s_release_arch": _wrap(k3s.release_arch),
            "k3s_token_problem": _wrap(k3s_token.token_problem),
            "k3s_duplicate_hostnames": _wrap(k3s.duplicate_hostnames),
            "k3s_taints": _wrap(k3s.taint_dicts),
            "k3s_labels": _wrap(k3s.label_dict),
            "k3s_version_problem": _wrap(_version_problem),
            "k3s_join_version_problem": _wrap(k3s.join_version_problem),
            "k3s_current_version": _wrap(k3s.current_version),
            "k3s_bootstrap_plan": _wrap(_bootstrap_plan),
            "k3s_restore_plan": _wrap(_restore_plan),
            "k3s_identity_plan": _wrap(k3s.identity_plan),
        }
