# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster model: every node of the inventory, derived once from ``groups`` and ``hostvars``.

Each node has its name (``gpu_cluster_node_name`` or the inventory name), address, role and
groups, vCPUs and memory, GPU count, model and PCI mappings, GPU pool, labels, taints and
**allocatable** resources (cpu, memory, pods and the GPU resources its pool makes it advertise).
The GPU node contract (label, taint, the toleration that matches it) is defined here once; every
consumer reads nodes from :func:`build` instead of reading the GPU and node variables itself
(``grep -n "cluster_model" plugins`` lists them; docs/development.md).

Building the model is linear in the number of hosts.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_pools, input_checks, node_vars

SERVERS = "k3s_servers"
AGENTS = "k3s_agents"
GPU_WORKERS = "gpu_workers"
INFRA_NODES = "infra_nodes"
APP_NODES = "app_nodes"
PROXMOX_HOSTS = "proxmox_hosts"
# The Proxmox host a VM runs on (the inventory name of a host of proxmox_hosts; issue 46).
PROXMOX_HOST_VARIABLE = "gpu_cluster_proxmox_host"

# The GPU node contract: what a GPU worker carries unless the inventory says otherwise
# (k3s_node_labels / k3s_node_taints replace it, gpu_cluster_node_labels / _taints add to it).
GPU_LABELS = ("gpu=true",)
# gpu_cluster_gpu_taint sets the contract's taint (NVIDIA and GKE spell it nvidia.com/gpu=present:NoSchedule);
# GPU workloads tolerate what the GPU workers carry (:func:`gpu_tolerations`), never a spelling of their own.
GPU_TAINT = "nvidia.com/gpu=true:NoSchedule"
GPU_TAINTS = (GPU_TAINT,)
# A GPU worker with gpu_cluster_gpu_driver_on_host: true: the GPU Operator's per-node switch for its
# containerised driver (GPU Operator docs, "Disabling an operand on a node"; plugin_utils/gpu_driver.py).
HOST_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver=false"
# Role labels the kubelet may not set itself: applied through the API after join (k3s_node_api_labels).
GPU_API_LABELS = ("node-role.kubernetes.io/gpu=true",)
INFRA_API_LABELS = ("node-role.kubernetes.io/infra=true",)
INFRA_TAINTS = ("node-role.kubernetes.io/infra=true:NoSchedule",)
GPU_RESOURCE = gpu_pools.GPU_RESOURCE
# What a workload on a GPU worker selects when it has no pool (the contract's label).
GPU_NODE_SELECTOR = {"gpu": "true"}

# Where the cluster keeps state on local volumes (the hub's database, Prometheus, Alertmanager,
# Grafana: SQLite and the TSDB do not lock on NFS): the infra nodes when there are any, else the
# servers. k3s labels every server node-role.kubernetes.io/control-plane=true.
INFRA_LABEL = "node-role.kubernetes.io/infra"
INFRA_TOLERATION = {"key": INFRA_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
# A GPU node taken out for maintenance (playbooks/gpu_node_maintenance.yml): its pool's capacity alert
# holds back and GPUNodeInMaintenance says so instead.
MAINTENANCE_LABEL = "gpu-cluster.cps/maintenance"
STATE_STORAGE_CLASS = "local-path"


# How many distinct values of one variable :func:`shared_copies` compares a host's value with: a group
# variable has one value per group that sets it; a variable set per host (a worker's PCI mappings) is
# compared with this many and kept as it is.
SEEN_VALUES = 4


def same_value(value, earlier):
    """The value of ``earlier`` equal to ``value`` (a list or dict), or None. Ansible templates a host's
    variables for that host, so every host gets its own copy of a group variable's list or dict (equal
    content, another object; ansible/vars/hostvars.py, HostVarsVars.__getitem__). Compared in C, the
    copies find the one object that stands for all of them, so a check judges a group variable once,
    not once per host, and groups hosts by that object (issue 45). A value holding a Jinja Undefined is
    never equal to one met before (those hold none, and the strict Undefined refuses the comparison)."""
    if not earlier or type(value) not in (dict, list):
        return None
    for other in earlier:
        try:
            if other is value or (type(other) is type(value) and other == value):
                return other
        except Exception:  # pylint: disable=broad-except
            return None
    return None


def shared_copies(hostvars):
    """``hostvars`` (host -> variables) with each host's copy of a list or dict that an earlier host
    holds too replaced by that host's object (:func:`same_value`); the input is left as it is. One pass,
    at most :data:`SEEN_VALUES` comparisons per value."""
    if not isinstance(hostvars, dict):
        return hostvars
    seen = {}
    result = {}
    for host, variables in hostvars.items():
        if not isinstance(variables, dict):
            result[host] = variables
            continue
        shared = {}
        for name, value in variables.items():
            kept = value
            if type(value) in (dict, list):
                earlier = seen.get(name)
                same = same_value(value, earlier)
                if same is not None:
                    kept = same
                elif earlier is None:
                    seen[name] = [value]
                elif len(earlier) < SEEN_VALUES:
                    earlier.append(value)
            shared[name] = kept
        result[host] = shared
    return result


def node_tolerations(nodes):
    """Tolerations of every hard taint any node of the model carries: a pod that must run on every
    node (Velero's node agent, the log collector) tolerates each, whatever the inventory set."""
    return tolerations([taint for node in nodes or [] for taint in node.get("taints") or []])


# The cluster-wide settings the workloads are built from (cluster_workloads; the first host that sets
# each, cluster_model.first_values): the model's ``settings``. None of them is a secret: the
# cluster_model filter hands the model to playbooks.
WORKLOAD_SETTINGS = (
    "gpu_cluster_llm_models", "gpu_cluster_gpu_pools", "gpu_cluster_llm_namespace", "gpu_cluster_llm_engine",
    "gpu_cluster_llm_operator_install",
    "gpu_cluster_jupyterhub_enabled", "gpu_cluster_jupyterhub_namespace", "gpu_cluster_jupyterhub_profiles",
    "gpu_cluster_jupyterhub_prepull",
    "gpu_cluster_verify_smoke_tests", "gpu_cluster_verify_gpu_probe", "gpu_cluster_verify_tensorflow",
    "gpu_cluster_verify_network", "gpu_cluster_verify_namespace")


def has_infra_nodes(model):
    """Whether the model has infra nodes (where state and the cluster's own services go)."""
    return any(INFRA_NODES in (node.get("groups") or []) for node in (model or {}).get("nodes") or [])


def switched_on(values, model, problems, settings, infra=None):
    """What an optional feature (backups, logs) builds from, or None when its settings switch it off:
    ``(chosen settings, the model's nodes, whether to place on infra nodes)``. ``problems`` and
    ``settings`` are the feature's own functions; ValueError naming every problem of ``values``.
    ``infra`` None: the model decides (:func:`has_infra_nodes`)."""
    found = problems(values)
    if found:
        raise ValueError("; ".join(found))
    chosen = settings(values)
    if not chosen["enabled"]:
        return None
    return chosen, (model or {}).get("nodes") or [], has_infra_nodes(model) if infra is None else infra


def state_placement(infra):
    """The nodeSelector (and toleration) of a pod that keeps state on a local volume: the infra nodes
    when ``infra`` (the inventory has some), else the k3s servers."""
    if infra:
        return {"nodeSelector": {INFRA_LABEL: "true"}, "tolerations": [dict(INFRA_TOLERATION)]}
    return {"nodeSelector": {CONTROL_PLANE_LABEL: "true"}}


# The labels the kubelet and k3s put on every node themselves.
HOSTNAME_LABEL = "kubernetes.io/hostname"
SERVER_ROLE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/etcd",
                      "node-role.kubernetes.io/master")
# The kubelet's default hard eviction threshold (memory.available<100Mi) is kept from allocatable.
EVICTION_MEMORY = 100 * 1024 * 1024
DEFAULT_PODS = 110
HARD_EFFECTS = ("NoSchedule", "NoExecute")


# The readers of a host's variables (plugin_utils/node_vars.py), part of the model's interface.
as_int = node_vars.as_int
is_int = node_vars.is_int
node_name = node_vars.node_name
node_address = node_vars.node_address


def label_dict(labels):
    """``key=value`` strings (or a mapping) as a dict; a bare key gets ''."""
    if isinstance(labels, dict):
        return dict((str(k), str(v)) for k, v in labels.items())
    result = {}
    for item in labels if isinstance(labels, (list, tuple)) else []:
        key, _sep, value = str(item).partition("=")
        result[key] = value
    return result


def parse_taint(text):
    """``key[=value]:Effect`` as ``{key, value, effect}`` (None when it is not that form)."""
    if not isinstance(text, str) or ":" not in text:
        return None
    head, _sep, effect = text.rpartition(":")
    key, _sep, value = head.partition("=")
    if not key or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        return None
    return {"key": key, "value": value, "effect": effect}


def toleration(taint):
    """The toleration of one taint: its key and effect, whatever its value (``Exists``)."""
    return {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}


def tolerations(taints):
    """The tolerations a pod needs for every hard taint (NoSchedule, NoExecute) of ``taints``."""
    result = []
    for taint in taints or []:
        if taint["effect"] in HARD_EFFECTS:
            entry = toleration(taint)
            if entry not in result:
                result.append(entry)
    return result


def gpu_taint_texts(variables):
    """The GPU taint(s) of one GPU worker: what replaces the contract's taint on it. ``k3s_node_taints``
    (which replaces the contract) less the infra contract's taint, else ``gpu_cluster_gpu_taint`` (or
    :data:`GPU_TAINT`). Taints added with ``gpu_cluster_node_taints`` are not among them: they keep the
    collection's workloads off the node, and the scheduling proof says so."""
    if "k3s_node_taints" in (variables or {}):
        return [str(x) for x in _list(variables.get("k3s_node_taints")) if str(x) not in INFRA_TAINTS]
    return [gpu_taint_text(variables)]


def gpu_tolerations(worker_taints):
    """The tolerations every pod bound for GPU workers carries (our Jobs, pods and DaemonSets, and the
    charts' GPU DaemonSets through their values): one for each hard GPU taint (:func:`gpu_taint_texts`,
    parsed) that every GPU worker carries, by key and effect whatever its value (``Exists``). So the taint
    the inventory configures (``gpu_cluster_gpu_taint``, or ``k3s_node_taints`` on the workers) is
    followed, key and value. ``worker_taints``: one list of taints per GPU worker; none: the contract's
    default taint's."""
    lists = list(worker_taints or [])
    if not lists:
        return tolerations([parse_taint(GPU_TAINT)])
    shared = tolerations(lists[0])
    for taints in lists[1:]:
        own = tolerations(taints)
        shared = [entry for entry in shared if entry in own]
    return shared


# The toleration of the contract's default taint: what a renderer uses when it is not given the model's.
GPU_TOLERATION = toleration(parse_taint(GPU_TAINT))


def given_gpu_tolerations(value):
    """The GPU tolerations a renderer was given (the model's ``gpu_tolerations``), as new plain dicts;
    None: the contract's default (:data:`GPU_TOLERATION`). ValueError for anything but a list of dicts."""
    if value is None:
        return [dict(GPU_TOLERATION)]
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, dict) for t in value):
        raise ValueError("gpu_tolerations must be a list of tolerations (the cluster model's gpu_tolerations)")
    return [dict(t) for t in value]


def _list(value):
    return list(value) if isinstance(value, (list, tuple)) else []


def _groups_of(inv):
    """{host: [group, ...]} for the contract's groups, in the order of the inventory's groups."""
    membership = {}
    for group in (SERVERS, AGENTS, GPU_WORKERS, INFRA_NODES, APP_NODES):
        for host in inv.hosts(group):
            membership.setdefault(host, []).append(group)
    return membership


def _default_labels(variables, member, pool):
    labels = []
    if GPU_WORKERS in member:
        labels += list(GPU_LABELS)
    labels += [str(x) for x in _list(variables.get("gpu_cluster_node_labels"))]
    if GPU_WORKERS in member and pool is not None:
        labels += ["%s=%s" % item for item in sorted(gpu_pools.member_labels(pool).items())]
    if GPU_WORKERS in member and variables.get("gpu_cluster_gpu_driver_on_host") is True:
        labels.append(HOST_DRIVER_LABEL)  # the host's own driver stays
    return labels


def _default_api_labels(member):
    labels = []
    if GPU_WORKERS in member:
        labels += list(GPU_API_LABELS)
    if INFRA_NODES in member:
        labels += list(INFRA_API_LABELS)
    return labels


def gpu_taint_text(variables):
    """The GPU node contract's taint for a host: ``gpu_cluster_gpu_taint`` when set, else :data:`GPU_TAINT`."""
    value = (variables or {}).get("gpu_cluster_gpu_taint")
    return str(value) if value is not None else GPU_TAINT


def _default_taints(variables, member):
    taints = []
    if GPU_WORKERS in member:
        taints.append(gpu_taint_text(variables))
    if INFRA_NODES in member:
        taints += list(INFRA_TAINTS)
    return taints + [str(x) for x in _list(variables.get("gpu_cluster_node_taints"))]


class Inventory:
    """The inventory as every feature reads it: Ansible's ``groups`` and ``hostvars`` read once, at the
    boundary (:func:`inventory`; the filters make one per call), and the cluster model built from it at
    most once (:attr:`model`). Features below the boundary take an Inventory, never ``groups`` and
    ``hostvars`` (issue 45).

    - :meth:`hosts` (a group's hosts), :meth:`vars` (a host's variables: each host's copy of a group
      variable's list or dict is one object here, :func:`shared_copies`);
    - :meth:`value` / :meth:`values`: a cluster-wide setting, the value of the first host that sets it,
      looked up once per name;
    - :attr:`workers` (the GPU workers as the pools see them), :attr:`pools` (the sound
      ``gpu_cluster_gpu_pools``, validated once) and :attr:`model` (:func:`build`), each made once.
    """

    def __init__(self, groups, hostvars, shared=False):
        self.groups = groups if isinstance(groups, Mapping) else {}
        # each host's copy of a group variable's list or dict is one object from here on (``shared``:
        # the filter's plain_inventory made them so already; Ansible's own HostVars, which a filter may
        # be handed as it is, is read through as it is)
        if isinstance(hostvars, dict):
            self.hostvars = hostvars if shared else shared_copies(hostvars)
        else:
            self.hostvars = hostvars if isinstance(hostvars, Mapping) else {}
        self._values = {}
        self._made = {}

    def hosts(self, group):
        """The hosts of ``group``, host names only (a list; [] when the inventory has no such group;
        preflight names anything else a group lists)."""
        return [host for host in _list(self.groups.get(group)) if isinstance(host, str)]

    def vars(self, host):
        """The variables of ``host`` ({} for a host without any)."""
        variables = self.hostvars.get(host)
        return variables if isinstance(variables, Mapping) else {}

    def value(self, name):
        """The value of ``name`` on the first host that sets it: in ``groups['all']`` order, then the
        hosts outside ``all`` in sorted order; else None. Looked up once per name."""
        if name not in self._values:
            self._values[name] = self._lookup(name)
        return self._values[name]

    def _lookup(self, name):
        listed = _list(self.groups.get("all"))
        for host in listed:
            variables = self.hostvars.get(host) or {}
            if name in variables:
                return variables[name]
        known = set(listed)
        for host in sorted(host for host in self.hostvars if host not in known):
            variables = self.hostvars.get(host) or {}
            if name in variables:
                return variables[name]
        return None

    def values(self, names):
        """{name: value} of each of ``names`` some host sets (the first host in ``groups['all']`` order,
        or in sorted host order when there is no ``all``), in one pass over the hosts."""
        wanted = frozenset(names)
        found = {}
        for host in _list(self.groups.get("all")) or sorted(self.hostvars):
            variables = self.hostvars.get(host)
            if variables:
                for name in wanted.intersection(variables):
                    if name not in found:
                        found[name] = variables[name]
                if len(found) == len(wanted):
                    break
        return found

    def _once(self, key, make):
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    @property
    def workers(self):
        """gpu_pools.workers_view of the GPU workers (``{host: view}``, sorted by host)."""
        return self._once("workers", lambda: gpu_pools.workers_view(
            dict((h, self.vars(h)) for h in self.hosts(GPU_WORKERS))))

    @property
    def pool_problems(self):
        """gpu_pools.pool_problems of ``gpu_cluster_gpu_pools`` against the GPU workers, judged once
        (preflight reports them; :attr:`pools` reads them)."""
        return self._once("pool_problems", lambda: gpu_pools.pool_problems(
            gpu_pools.plain(self.value("gpu_cluster_gpu_pools")), self.workers))

    @property
    def pools(self):
        """``gpu_cluster_gpu_pools`` when it is sound (a list without problems), else ``[]`` (preflight
        reports the problems; the model then treats every GPU worker as unpooled)."""
        return self._once("pools", self._sound_pools)

    def _sound_pools(self):
        pools = self.value("gpu_cluster_gpu_pools")
        if not isinstance(pools, list) or not pools:
            return []
        try:
            if self.pool_problems:
                return []
        except (TypeError, ValueError, KeyError, AttributeError):
            return []
        return gpu_pools.plain(pools)

    @property
    def placement(self):
        """{K3s host: the Proxmox host its VM runs on} (:func:`placement`), made once."""
        return self._once("placement", lambda: placement(self))

    @property
    def model(self):
        """The cluster model (:func:`build`), built once."""
        return self._once("model", lambda: build(self))


def inventory(groups, hostvars=None, shared=False):
    """The boundary: Ansible's ``groups`` and ``hostvars`` as an :class:`Inventory` (an Inventory
    passed as ``groups`` without ``hostvars`` is returned as it is, so a feature called with either
    reads the same one). ``shared``: ``hostvars`` come from the filters' plain_inventory, which already
    made each host's copy of a group variable's list or dict one object (:func:`same_value`)."""
    if isinstance(groups, Inventory) and hostvars is None:
        return groups
    return Inventory(groups, hostvars, shared)


def placement(inv):
    """{K3s host: the Proxmox host its VM runs on} of an :class:`Inventory`, '' for every host when the
    inventory has no Proxmox host (VMs made elsewhere). A VM's host is ``gpu_cluster_proxmox_host`` when
    it names a host of proxmox_hosts (preflight refuses any other value); else, for a GPU worker, the one
    host that holds its GPUs (input_checks.gpu_hosts: the host whose gpu_cluster_gpu_pci_devices name its
    mappings); else the first host of proxmox_hosts, where provision.yml creates VMs."""
    proxmox = inv.hosts(PROXMOX_HOSTS)
    hosts = input_checks.unique(inv.hosts(SERVERS) + inv.hosts(AGENTS) + inv.hosts(GPU_WORKERS) +
                                inv.hosts(INFRA_NODES) + inv.hosts(APP_NODES))
    if not proxmox:
        return dict((host, "") for host in hosts)
    known = frozenset(proxmox)
    gpus = input_checks.gpu_hosts(proxmox, inv.hosts(GPU_WORKERS), inv.hostvars) if len(proxmox) > 1 else {}
    result = {}
    for host in hosts:
        named = inv.vars(host).get(PROXMOX_HOST_VARIABLE)
        if isinstance(named, str) and named in known:
            result[host] = named
        elif len(gpus.get(host) or []) == 1:
            result[host] = gpus[host][0]
        else:
            result[host] = proxmox[0]
    return result


def _pool_of(host, variables, pools):
    """The first pool (of :func:`_with_members`'s list) that holds the host, or None."""
    view = None
    for pool, members in pools:
        # members: the pool's nodes as a set (made once per build: linear, issue 25's benchmark),
        # None for a pool that selects its nodes by label
        if members is not None:
            if host in members:
                return pool
            continue
        view = view or gpu_pools.worker_view(host, variables)
        if host in gpu_pools.pool_hosts(pool, {host: view}):
            return pool
    return None


def _gpu_resources(host, variables, pool, count):
    """{resource: count} the node advertises (its pool's, or whole GPUs)."""
    if count <= 0:
        return {}
    if pool is None:
        return {GPU_RESOURCE: count}
    view = gpu_pools.worker_view(host, variables)
    view["gpu_count"] = count
    return gpu_pools.node_resources(pool, view)


def _with_members(pools):
    """[(pool, frozenset of its nodes or None)] for :func:`_gpu_resources`."""
    return [(pool, frozenset(h for h in pool["nodes"] if isinstance(h, str)) if pool.get("nodes") is not None else None)
            for pool in pools]


def _taints(texts, parsed):
    """The taints of ``texts``, each text parsed once per build (``parsed``: text -> taint; every
    node carries the same few texts)."""
    taints = []
    for text in texts:
        if text not in parsed:
            parsed[text] = parse_taint(text)
        if parsed[text] is not None:
            taints.append(dict(parsed[text]))
    return taints


def _node(host, variables, member, pools, parsed, *, proxmox_host=""):
    name = node_name(host, variables)
    role = "server" if SERVERS in member else "agent"
    gpu_worker = GPU_WORKERS in member
    count = node_vars.gpu_count(variables) if gpu_worker else 0
    pool = _pool_of(host, variables, pools) if gpu_worker else None
    if "k3s_node_labels" in variables:
        labels = [str(x) for x in _list(variables.get("k3s_node_labels"))]
    else:
        labels = _default_labels(variables, member, pool)
    if "k3s_node_api_labels" in variables:
        labels += [str(x) for x in _list(variables.get("k3s_node_api_labels"))]
    else:
        labels += _default_api_labels(member)
    if "k3s_node_taints" in variables:
        taint_texts = [str(x) for x in _list(variables.get("k3s_node_taints"))]
    else:
        taint_texts = _default_taints(variables, member)
    label_map = {HOSTNAME_LABEL: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    if role == "server":
        label_map.update((key, "true") for key in SERVER_ROLE_LABELS)
    label_map.update(label_dict(labels))
    cores = as_int(variables.get("gpu_cluster_vm_cores"))
    memory_mb = as_int(variables.get("gpu_cluster_vm_memory_mb"))
    gpu = _gpu_resources(host, variables, pool, count) if count > 0 else {}
    # a unit of these is a time-slice or a MIG instance: a container gets at most one (the device
    # plugin refuses more than one shared GPU with failRequestsGreaterThanOne; CUDA uses one MIG
    # instance per process)
    shared = sorted(name for name, units in gpu.items() if name != GPU_RESOURCE or units > count) if gpu else []
    allocatable = {"pods": DEFAULT_PODS}
    if cores > 0:
        allocatable["cpu"] = cores * 1000  # millicores
    if memory_mb > 0:
        allocatable["memory"] = max(memory_mb * 1024 * 1024 - EVICTION_MEMORY, 0)  # bytes
    allocatable.update(gpu)
    return {
        "name": name,
        "host": host,
        "address": node_address(variables),
        "proxmox_host": proxmox_host,
        "role": role,
        "groups": list(member),
        "vcpus": cores,
        "memory_mb": memory_mb,
        "gpu_count": count,
        "gpu_model": node_vars.gpu_model(variables) if count > 0 else "",
        "gpu_pci_mappings": [str(x) for x in _list(variables.get("gpu_cluster_gpu_pci_mappings"))],
        "pool": pool["name"] if pool is not None and count > 0 else "",
        "labels": label_map,
        "taints": _taints(taint_texts, parsed),
        "allocatable": allocatable,
        "shared": shared,
    }


def build(groups, hostvars=None):
    """The model of the cluster: ``{nodes: [node, ...], pools: [...], limited: [resource, ...],
    gpu_tolerations: [...]}`` (``limited``: :func:`limited_resources`; ``gpu_tolerations``:
    :func:`gpu_tolerations`), one node per host of
    ``k3s_servers`` and ``k3s_agents`` (servers first, inventory order), each as :func:`_node` makes
    it. ``groups`` and ``hostvars``: Ansible's (``hostvars`` maps host -> its variables, inventory
    values; role defaults are not there), or an :class:`Inventory` alone (its :attr:`Inventory.model`
    is the one to read: it builds once)."""
    inv = groups if isinstance(groups, Inventory) and hostvars is None else Inventory(groups, hostvars)
    member = _groups_of(inv)
    workers = inv.workers
    pools = inv.pools
    order = []
    seen = set()
    for group in (SERVERS, AGENTS, GPU_WORKERS, INFRA_NODES, APP_NODES):
        for host in inv.hosts(group):
            if host not in seen:
                seen.add(host)
                order.append(host)
    members = _with_members(pools)
    parsed = {}
    place = inv.placement
    nodes = [_node(host, inv.vars(host), member.get(host, []), members, parsed, proxmox_host=place.get(host, "")) for host in order]
    worker_taints = [_taints(gpu_taint_texts(inv.vars(host)), parsed)
                     for host in order if GPU_WORKERS in member.get(host, [])]
    worker_gpus = dict((host, node_vars.gpu_count(inv.vars(host))) for host in inv.hosts(GPU_WORKERS))
    return {"nodes": nodes, "pools": pools, "limited": limited_resources(nodes, pools),
            "gpu_tolerations": gpu_tolerations(worker_taints),
            # what the workload builders read (plugin_utils/cluster_workloads.py): the cluster-wide
            # settings, the GPU workers as the pools see them, and each worker's GPU count
            "settings": inv.values(WORKLOAD_SETTINGS), "workers": workers, "worker_gpus": worker_gpus}


def worker_gpu_counts(model):
    """{GPU worker (inventory host): gpu_cluster_gpu_count}, in the gpu_workers group's order (0 when unset)."""
    return dict(model.get("worker_gpus") or {})


def limited_resources(nodes, pools):
    """The GPU resource names of the pools reserved for some namespaces (``namespaces``), sorted:
    the API server's ResourceQuota admission limits them (``limitedResources``) to the namespaces
    whose quota grants them, so a namespace created later cannot take them either."""
    reserved = set(pool["name"] for pool in pools or [] if pool.get("namespaces"))
    names = set()
    for node in nodes or []:
        if node["pool"] in reserved:
            names.update(name for name in node["allocatable"] if name.startswith("nvidia.com/"))
    return sorted(names)


def by_name(model):
    """{node name: node} of a model."""
    return dict((node["name"], node) for node in (model or {}).get("nodes") or [])


def gpu_nodes(model):
    """The nodes with GPUs (gpu_count > 0), in model order."""
    return [node for node in (model or {}).get("nodes") or [] if node["gpu_count"] > 0]


def gpu_resource_of(node):
    """The GPU resource a node advertises and how many units (``('', 0)`` for none): the pool's
    resource (MIG: the first profile), else ``nvidia.com/gpu``."""
    names = sorted(k for k in node["allocatable"] if k.startswith("nvidia.com/"))
    if not names:
        return "", 0
    name = GPU_RESOURCE if GPU_RESOURCE in names else names[0]
    return name, node["allocatable"][name]


def shares_gpus(node):
    """Whether a unit of the node's GPU resource is less than a whole GPU (time-sliced or MIG)."""
    return bool(node.get("shared"))
