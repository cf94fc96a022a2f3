# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS exports of the cluster's shared storage: who may mount, is the path safe, one exports(5) line.

Pure functions used by the nfs_server role (through the filters in plugins/filter/nfs.py),
unit-tested without Ansible.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import node_vars

# exports(5) separates fields by whitespace and a client from its options by "(": a client or an
# option string with either (or a newline, which starts a new export) would inject an export.
CLIENT_RE = re.compile(r"^[A-Za-z0-9_.:*?/\[\]@-]+\Z")
OPTIONS_RE = re.compile(r"^[A-Za-z0-9_=,:./@-]+\Z")


def export_path_problem(path):
    """Why ``path`` cannot be exported, or '' when it can.

    It must be an absolute path with no ``..`` or ``.`` component, no whitespace or control
    character (a newline would add a line to the exports file), and not ``/`` itself.
    """
    if not isinstance(path, str) or not path:
        return "the export path must be a non-empty string, got %r" % (path,)
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in path):
        return "the export path %r contains whitespace or a control character" % (path,)
    if not path.startswith("/"):
        return "the export path %r is not absolute" % (path,)
    parts = [part for part in path.split("/") if part]
    if not parts:
        return "the export path must not be / (that would export the whole file system)"
    if any(part in ("..", ".") for part in parts):
        return "the export path %r has a '..' or '.' component" % (path,)
    return ""


def client_problem(client):
    """Why ``client`` cannot be an exports(5) client (host, address, network, wildcard), or ''."""
    if not isinstance(client, str) or not client:
        return "an NFS client must be a non-empty string, got %r" % (client,)
    if not CLIENT_RE.match(client):
        return ("the NFS client %r is not a host name, address or network (no whitespace, parentheses "
                "or control characters)" % (client,))
    return ""


def clients_list(clients):
    """``clients`` as a list: a list is kept, a string is split on commas and whitespace."""
    if isinstance(clients, str):
        return [part for part in re.split(r"[\s,]+", clients) if part]
    if isinstance(clients, (list, tuple)):
        return list(clients)
    raise ValueError("NFS clients must be a list of addresses or a string, got %r" % (clients,))


def export_problems(export, default_options=""):
    """Problems of one export ``{path, clients, options}`` as sentences (empty when it is usable)."""
    if not isinstance(export, dict):
        return ["an NFS export must be a mapping with path, clients and options, got %r" % (export,)]
    problems = []
    path_problem = export_path_problem(export.get("path"))
    if path_problem:
        problems.append(path_problem)
    try:
        clients = clients_list(export.get("clients") if export.get("clients") is not None else [])
    except ValueError as exc:
        return [*problems, str(exc)]
    if not clients:
        problems.append("the export of %s has no clients: list the cluster nodes' addresses (nfs_server_clients; by "
                        "default every k3s_cluster host's gpu_cluster_node_ip, else ansible_host)" % export.get("path"))
    problems.extend(problem for problem in (client_problem(client) for client in clients) if problem)
    options = export.get("options") or default_options
    if not isinstance(options, str) or not OPTIONS_RE.match(options):
        problems.append("the export options %r are not a comma-separated exports(5) option list" % (options,))
    return problems


def exports_line(export, default_options=""):
    """One exports(5) line: ``path client1(options) client2(options)``; ValueError on a bad export."""
    problems = export_problems(export, default_options)
    if problems:
        raise ValueError("; ".join(problems))
    options = export.get("options") or default_options
    clients = clients_list(export["clients"])
    return " ".join([export["path"]] + ["%s(%s)" % (client, options) for client in clients])


def node_addresses(hosts, hostvars):
    """The address each host is reached at on the node network, in order, without duplicates.

    ``gpu_cluster_node_ip`` when set, else ``ansible_host``; a host with neither is an error
    (its inventory name is not necessarily an address the NFS server can match).
    """
    addresses = []
    missing = []
    for host in hosts or []:
        variables = hostvars[host]
        address = node_vars.node_address(variables)
        if not address:
            missing.append(host)
            continue
        address = str(address)
        if address not in addresses:
            addresses.append(address)
    if missing:
        raise ValueError("set gpu_cluster_node_ip (or ansible_host) for %s: the NFS export is limited to the "
                         "cluster nodes' addresses" % ", ".join(missing))
    return addresses
