# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Failure domains: the Proxmox host each VM runs on, and what losing one host costs (issue 46).

Each VM's host is the cluster model's (cluster_model.placement: ``gpu_cluster_proxmox_host``, else the
host that holds a GPU worker's GPUs, else the first Proxmox host). For every Proxmox host,
:func:`host_losses` says what its loss means before it happens: whether etcd keeps quorum (etcd needs a
majority of its members, floor(n/2)+1, to elect a leader and accept writes; etcd's FAQ "Why an odd
number of cluster members"), and which workloads would have no node left (the scheduling proof run on
the model without that host's nodes). Preflight warns when losing a host breaks quorum, and refuses it
when the inventory asks to survive a host's loss (``gpu_cluster_host_failure_tolerance: 1``).

Pure functions over a cluster_model.Inventory, unit-tested.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, cluster_workloads, input_checks, node_vars

TOLERANCE_VARIABLE = "gpu_cluster_host_failure_tolerance"


def quorum(members):
    """The members etcd needs to keep working: a majority of ``members`` (floor(n/2)+1)."""
    return members // 2 + 1


def tolerance(inv):
    """``gpu_cluster_host_failure_tolerance``: how many Proxmox hosts the cluster must survive losing
    (0 when unset or not a whole number: preflight names a wrong value)."""
    value = inv.value(TOLERANCE_VARIABLE)
    return value if node_vars.is_int(value) and value > 0 else 0


def host_losses(inv, operations=None, proofs=True):
    """One row per Proxmox host: ``{host, nodes, servers, servers_left, quorum, unplaced}``: the K3s
    nodes on the host, the servers among them, how many servers remain without it, whether etcd keeps
    quorum then, and the workloads that would have no node left (in the proof's order; ``proofs``
    False: not judged, []). ``operations``: cluster_workloads.operations_values when already read.
    [] without Proxmox hosts."""
    model = inv.model
    nodes = model["nodes"]
    servers = [node for node in nodes if node["role"] == "server"]
    if proofs and operations is None:
        operations = cluster_workloads.operations_values(inv)
    rows = []
    for host in inv.hosts(cluster_model.PROXMOX_HOSTS):
        lost = [node for node in nodes if node["proxmox_host"] == host]
        lost_servers = [node["name"] for node in lost if node["role"] == "server"]
        left = len(servers) - len(lost_servers)
        unplaced = []
        if lost and proofs:
            remaining = dict(model, nodes=[node for node in nodes if node["proxmox_host"] != host])
            for row in cluster_workloads.model_proof(remaining, operations)["rows"]:
                if not row["nodes"] and row["workload"] not in unplaced:
                    unplaced.append(row["workload"])
        rows.append({"host": host, "nodes": [node["name"] for node in lost], "servers": lost_servers,
                     "servers_left": left, "quorum": bool(servers) and left >= quorum(len(servers)),
                     "unplaced": unplaced})
    return rows


def _quorum_message(row):
    total = row["servers_left"] + len(row["servers"])
    if total >= 3:
        advice = "place the servers on at least three hosts, at most %d per host" % (total - quorum(total))
    else:
        advice = "run three servers (k3s_servers), each on a host of its own"
    return ("losing Proxmox host %s stops the cluster: it runs %d of the %d K3s servers (%s), and etcd needs %d of "
            "them to keep quorum; %s (gpu_cluster_proxmox_host)"
            % (row["host"], len(row["servers"]), total, ", ".join(row["servers"]), quorum(total), advice))


def tolerance_problems(inv):
    """Preflight: ``gpu_cluster_host_failure_tolerance`` is 0 or 1, and 1 only with several Proxmox hosts."""
    value = inv.value(TOLERANCE_VARIABLE)
    hosts = inv.hosts(cluster_model.PROXMOX_HOSTS)
    if value is None:
        return []
    if not (node_vars.is_int(value) and 0 <= value <= 1):
        return ["%s is %r; use 0 (report what losing a Proxmox host costs) or 1 (refuse an inventory that does not "
                "survive losing any one Proxmox host)" % (TOLERANCE_VARIABLE, value)]
    if value == 1 and len(hosts) < 2:
        return ["%s is 1, but the inventory has %d Proxmox host(s): every VM runs on %s, so losing it loses the "
                "cluster; add Proxmox hosts and place the VMs on them (gpu_cluster_proxmox_host), or set it to 0"
                % (TOLERANCE_VARIABLE, len(hosts), hosts[0] if hosts else "no host")]
    return []


def loss_problems(inv, rows=None):
    """Preflight on a sound inventory, when ``gpu_cluster_host_failure_tolerance`` asks to survive a
    Proxmox host's loss: each host whose loss breaks etcd's quorum or leaves a workload without a node."""
    if tolerance(inv) < 1 or len(inv.hosts(cluster_model.PROXMOX_HOSTS)) < 2:
        return []
    rows = host_losses(inv) if rows is None else rows
    problems = []
    for row in rows:
        if row["servers"] and not row["quorum"]:
            problems.append("%s: %s" % (TOLERANCE_VARIABLE, _quorum_message(row)))
        if row["unplaced"]:
            problems.append("%s: losing Proxmox host %s leaves no node for %s; give those workloads room on the "
                            "other hosts' nodes" % (TOLERANCE_VARIABLE, row["host"], ", ".join(row["unplaced"])))
    return problems


def loss_warnings(inv, rows=None):
    """Preflight warnings with several Proxmox hosts and no tolerance asked: each host whose loss breaks
    etcd's quorum (a host failure stops the cluster, although it is HA against a VM's)."""
    hosts = inv.hosts(cluster_model.PROXMOX_HOSTS)
    if len(hosts) < 2 or tolerance(inv) > 0:
        return []
    rows = host_losses(inv, proofs=False) if rows is None else rows
    return [_quorum_message(row) for row in rows
            if row["servers"] and not row["quorum"] and row["servers_left"] + len(row["servers"]) > 1]


def placement_problems(inv):
    """Preflight: ``gpu_cluster_proxmox_host`` names a host of proxmox_hosts; a GPU worker runs on a host
    that holds its GPUs (its gpu_cluster_gpu_pci_mappings name devices that host declares); and no host
    is asked for more GPUs than it declares (gpu_cluster_gpu_pci_devices), naming the host and its VMs."""
    proxmox = inv.hosts(cluster_model.PROXMOX_HOSTS)
    place = inv.placement
    problems = []
    for host in place:
        named = inv.vars(host).get(cluster_model.PROXMOX_HOST_VARIABLE)
        if named is not None and not (isinstance(named, str) and named in proxmox):
            problems.append("%s: %s is %r; name the Proxmox host its VM runs on, one of proxmox_hosts (%s)"
                            % (host, cluster_model.PROXMOX_HOST_VARIABLE, named, ", ".join(proxmox) or "none"))
    if len(proxmox) < 2:
        return problems
    workers = inv.hosts(cluster_model.GPU_WORKERS)
    held = input_checks.gpu_hosts(proxmox, workers, inv.hostvars)
    for worker in workers:
        on = place.get(worker)
        if held.get(worker) and on not in held[worker]:
            problems.append("%s: its VM runs on %s (%s), but its GPUs (gpu_cluster_gpu_pci_mappings) are devices of %s; "
                            "a PCI mapping only passes through a device of the VM's own host: place the VM on %s or give "
                            "it GPUs of %s" % (worker, on, cluster_model.PROXMOX_HOST_VARIABLE, ", ".join(held[worker]),
                                               " or ".join(held[worker]), on))
    for host in proxmox:
        devices = inv.vars(host).get("gpu_cluster_gpu_pci_devices")
        if not isinstance(devices, list):
            continue
        mine = [worker for worker in workers if place.get(worker) == host]
        asked = sum(node_vars.gpu_count(inv.vars(worker)) for worker in mine)
        if asked > len(devices):
            problems.append("%s: its VMs ask for %d GPU(s) (%s) but it declares %d (gpu_cluster_gpu_pci_devices); "
                            "move a GPU worker to another host (%s) or lower its gpu_cluster_gpu_count"
                            % (host, asked, ", ".join("%s %d" % (w, node_vars.gpu_count(inv.vars(w))) for w in mine),
                               len(devices), cluster_model.PROXMOX_HOST_VARIABLE))
    return problems


def table(rows):
    """The host-loss report as text lines, one per Proxmox host."""
    lines = []
    for row in rows or []:
        lines.append("%s: %d node(s)%s; etcd %s; %s" % (
            row["host"], len(row["nodes"]), " (servers %s)" % ", ".join(row["servers"]) if row["servers"] else "",
            "keeps quorum (%d server(s) left)" % row["servers_left"] if row["quorum"]
            else "LOSES QUORUM (%d server(s) left)" % row["servers_left"],
            "every workload keeps a node" if not row["unplaced"] else "NO NODE for " + ", ".join(row["unplaced"])))
    return lines
