# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NUMA layout of a Proxmox VE host and the placement of the cluster's VMs on it (pure functions).

* ``read_numa_topology(sysfs_path)`` reads ``/sys/devices/system/{node,cpu}`` (or a captured
  tree): nodes, their CPUs grouped into physical cores (SMT siblings together), memory per node
  and the 1 GiB / 2 MiB huge pages reserved and free on each node. ``parse_lscpu_p`` reads
  ``lscpu -p`` output, so a captured layout can be checked against the kernel's own view.
* ``plan_placement(...)`` puts every GPU worker on the NUMA node of its GPUs with whole physical
  cores of that node, memory bound to the node and huge pages when asked, then the control-plane
  VMs on what is left, keeping the host's own cores apart. It returns the plan and the problems
  that refuse it (one message each, saying what to change).
* ``placement_table``, ``placement_tfvars`` and ``hugepage_kernel_args`` turn a plan into what the
  user reads, what terraform/proxmox takes and what the vfio_passthrough role reserves on the host.

docs/performance.md explains the plan.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

HUGEPAGE_SIZES = {"1G": 1048576, "2M": 2048}  # size name -> kB, as sysfs names the pools
HUGEPAGE_MB = {"1G": 1024, "2M": 2}
HUGEPAGE_CHOICES = ("none", "1G", "2M")
# terraform/proxmox (bpg/proxmox memory.hugepages): page size in MiB as a string.
HUGEPAGE_TERRAFORM = {"1G": "1024", "2M": "2"}
HUGEPAGE_KERNEL_KEYS = ("hugepagesz", "hugepages", "default_hugepagesz")
CPULIST_RE = re.compile(r"^\s*(\d+(-\d+)?)(\s*,\s*\d+(-\d+)?)*\s*$")
MEMINFO_RE = re.compile(r"^Node\s+\d+\s+(\w+):\s+(\d+)(\s+kB)?\s*$")

DEFAULT_HOST_CORES = 2
DEFAULT_HOST_MEMORY_MB = 16384
# terraform/proxmox's presets and control-plane size (variables.tf defaults): vCPUs, memory (MiB).
PRESETS = {"small": (8, 65536), "medium": (16, 131072), "large": (16, 131072)}
DEFAULT_PRESET = "large"
CONTROL_PLANE_SIZE = (4, 16384)


class TopologyError(ValueError):
    """A topology (sysfs tree, lscpu output or captured file) that cannot be read as one."""


# ------------------------------------------------------------------ CPU lists
def parse_cpulist(text):
    """Kernel list format (``0-3,8,10-11``) -> sorted CPU numbers; '' -> []."""
    text = (text or "").strip()
    if not text:
        return []
    if not CPULIST_RE.match(text):
        raise TopologyError("not a CPU list: %r (expected the kernel's list format, like 0-23,48-71)" % text)
    cpus = set()
    for part in text.split(","):
        first, _sep, last = part.strip().partition("-")
        low, high = int(first), int(last or first)
        if high < low:
            raise TopologyError("not a CPU list: %r (range %s runs backwards)" % (text, part.strip()))
        cpus.update(range(low, high + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """Sorted CPU numbers -> the kernel's list format (``[0, 1, 2, 5]`` -> ``0-2,5``)."""
    ranges = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join("%d" % low if low == high else "%d-%d" % (low, high) for low, high in ranges)


# ---------------------------------------------------------------- sysfs reader
def _read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return default


def _int(text, default=None):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def _node_numbers(node_root):
    online = _read(os.path.join(node_root, "online"))
    if online is not None:
        return parse_cpulist(online)
    if not os.path.isdir(node_root):
        return []
    return sorted(int(name[4:]) for name in os.listdir(node_root) if re.match(r"^node\d+$", name))


def _meminfo(text):
    values = {}
    for line in (text or "").splitlines():
        match = MEMINFO_RE.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


def _hugepages(node_dir):
    pools = {}
    for name, kb in HUGEPAGE_SIZES.items():
        pool = os.path.join(node_dir, "hugepages", "hugepages-%dkB" % kb)
        pools[name] = {
            "total": _int(_read(os.path.join(pool, "nr_hugepages")), 0),
            "free": _int(_read(os.path.join(pool, "free_hugepages")), 0),
        }
    return pools


def _cores_of(cpus, siblings):
    """Group CPUs into physical cores (each a sorted list of SMT siblings), sorted by first CPU."""
    seen = set()
    cores = []
    for cpu in sorted(cpus):
        if cpu in seen:
            continue
        group = sorted(set(siblings.get(cpu, [cpu])) & set(cpus)) or [cpu]
        if cpu not in group:
            group = sorted([*group, cpu])
        seen.update(group)
        cores.append(group)
    return sorted(cores)


def read_numa_topology(sysfs_path):
    """The host's NUMA layout from a sysfs tree (``/sys`` or a capture).

    Returns ``{nodes: [{node, cpus, cores, memory_mb, memory_free_mb, hugepages: {1G: {total, free},
    2M: {...}}}], sockets, threads_per_core, smt_active, cpus_online}``. ``cores`` lists every
    physical core of the node as its SMT siblings (``[[0, 48], [1, 49], ...]``); with SMT off each
    core is one CPU. A kernel without NUMA support (no ``devices/system/node``) reads as one node 0
    holding every online CPU, memory unknown (None).
    """
    cpu_root = os.path.join(sysfs_path, "devices", "system", "cpu")
    node_root = os.path.join(sysfs_path, "devices", "system", "node")
    online_text = _read(os.path.join(cpu_root, "online"))
    if online_text is None:
        if not os.path.isdir(cpu_root):
            raise TopologyError("%s does not exist: not a sysfs tree with CPU topology" % cpu_root)
        online = sorted(int(name[3:]) for name in os.listdir(cpu_root) if re.match(r"^cpu\d+$", name))
    else:
        online = parse_cpulist(online_text)
    siblings = {}
    packages = set()
    for cpu in online:
        topology = os.path.join(cpu_root, "cpu%d" % cpu, "topology")
        listed = _read(os.path.join(topology, "thread_siblings_list")) or _read(os.path.join(topology, "core_cpus_list"))
        siblings[cpu] = parse_cpulist(listed) if listed else [cpu]
        package = _read(os.path.join(topology, "physical_package_id"))
        if package is not None:
            packages.add(package)
    nodes = []
    numbers = _node_numbers(node_root)
    for number in numbers:
        node_dir = os.path.join(node_root, "node%d" % number)
        cpus = [cpu for cpu in parse_cpulist(_read(os.path.join(node_dir, "cpulist"), "")) if cpu in online]
        memory = _meminfo(_read(os.path.join(node_dir, "meminfo"), ""))
        nodes.append({
            "node": number,
            "cpus": cpus,
            "cores": _cores_of(cpus, siblings),
            "memory_mb": memory["MemTotal"] // 1024 if "MemTotal" in memory else None,
            "memory_free_mb": memory["MemFree"] // 1024 if "MemFree" in memory else None,
            "hugepages": _hugepages(node_dir),
        })
    if not nodes:
        nodes.append({"node": 0, "cpus": online, "cores": _cores_of(online, siblings), "memory_mb": None,
                      "memory_free_mb": None, "hugepages": _hugepages(os.path.join(node_root, "node0"))})
    return _summarise(nodes, len(packages) or None, _read(os.path.join(cpu_root, "smt", "active")))


def numa_facts(sysfs_path):
    """read_numa_topology, or None when the tree has no CPU topology (a PCI-only capture)."""
    if not os.path.isdir(os.path.join(sysfs_path, "devices", "system", "cpu")):
        return None
    return read_numa_topology(sysfs_path)


def _summarise(nodes, sockets, smt_active_text=None):
    widths = [len(core) for node in nodes for core in node["cores"]]
    threads = max(widths) if widths else 1
    smt = smt_active_text == "1" if smt_active_text in ("0", "1") else threads > 1
    return {
        "nodes": nodes,
        "sockets": sockets,
        "threads_per_core": threads,
        "smt_active": smt,
        "cpus_online": sum(len(node["cpus"]) for node in nodes),
    }


# ------------------------------------------------------------------ lscpu -p
def parse_lscpu_p(text):
    """``lscpu -p`` (``# CPU,Core,Socket,Node,...``) -> [{cpu, core, socket, node}], by CPU.

    Offline CPUs (lscpu leaves their columns empty) are left out.
    """
    columns = ["CPU", "Core", "Socket", "Node"]
    rows = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            header = line.lstrip("#").strip().split(",")
            if "CPU" in header:
                columns = header
            continue
        values = dict(zip(columns, line.split(",")))
        try:
            rows.append({"cpu": int(values["CPU"]), "core": int(values["Core"]), "socket": int(values["Socket"]),
                         "node": int(values.get("Node") or 0)})
        except (KeyError, ValueError):
            continue
    return sorted(rows, key=lambda row: row["cpu"])


def lscpu_layout(rows):
    """``{node: [[siblings], ...]}`` from parse_lscpu_p rows: the cores of each node, as sysfs groups them."""
    cores = {}
    for row in rows:
        cores.setdefault((row["node"], row["socket"], row["core"]), []).append(row["cpu"])
    layout = {}
    for (node, _socket, _core), cpus in cores.items():
        layout.setdefault(node, []).append(sorted(cpus))
    return dict((node, sorted(groups)) for node, groups in layout.items())


# ------------------------------------------------------------ captured files
def topology_from_capture(data):
    """``(host_numa, {gpu address: numa node})`` from a captured topology.

    Accepts what ``ansible <host> -m cps.gpu_cluster.pci_gpu_facts --tree <dir>`` writes (the module
    result, facts under ``ansible_facts``) or the facts themselves (``host_numa`` and ``pci_gpus``).
    Raises TopologyError saying what is missing.
    """
    if not isinstance(data, dict):
        raise TopologyError("a captured topology is a mapping with host_numa and pci_gpus (the facts of cps.gpu_cluster.pci_gpu_facts)")
    facts = data.get("ansible_facts", data)
    if not isinstance(facts, dict) or not isinstance(facts.get("host_numa"), dict):
        raise TopologyError("the captured topology has no host_numa: capture it with "
                            "`ansible <proxmox host> -m cps.gpu_cluster.pci_gpu_facts --tree <dir>` (collection >= this release)")
    numa = facts["host_numa"]
    nodes = numa.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise TopologyError("host_numa.nodes must list at least one NUMA node")
    for node in nodes:
        if not isinstance(node, dict) or not isinstance(node.get("node"), int) or not isinstance(node.get("cores"), list):
            raise TopologyError("every host_numa node needs an integer node and a list of cores, got %r" % (node,))
    gpus = facts.get("pci_gpus") or []
    if not isinstance(gpus, list):
        raise TopologyError("pci_gpus must be a list of GPUs with address and numa_node")
    gpu_nodes = dict((gpu["address"], gpu.get("numa_node")) for gpu in gpus if isinstance(gpu, dict) and "address" in gpu)
    return numa, gpu_nodes


# ------------------------------------------------------------------ planner
def _normal_address(address):
    address = str(address).strip().lower()
    return "0000:" + address if address.count(":") == 1 else address


def _threads(cores):
    return sum(len(core) for core in cores)


def _cores_for(free, vcpus):
    """The fewest leading cores of ``free`` holding ``vcpus`` threads, or None when they do not."""
    taken, threads = [], 0
    for core in free:
        if threads >= vcpus:
            break
        taken.append(core)
        threads += len(core)
    return taken if threads >= vcpus else None


def _gib(mb):
    return ("%d GiB" % (mb // 1024)) if mb % 1024 == 0 else "%.1f GiB" % (mb / 1024.0)


def plan_placement(topology, gpu_nodes, workers, control_planes, *, host_cores=DEFAULT_HOST_CORES,
                   host_memory_mb=DEFAULT_HOST_MEMORY_MB, hugepages="none", allow_span=False):
    """Place every VM on the host's NUMA nodes; returns ``(plan, problems)``.

    topology: ``host_numa`` (read_numa_topology). gpu_nodes: ``{gpu address: numa node or None}``.
    workers: ``[{name, vcpus, memory_mb, gpus: [{name, address}]}]``; control_planes: ``[{name, vcpus,
    memory_mb}]``. host_cores: physical cores of every node kept for the host (its lowest-numbered
    ones); host_memory_mb: memory of every node kept for the host. hugepages: ``none``, ``1G`` or
    ``2M`` for the GPU workers' memory. allow_span: accept a worker whose GPUs sit on several nodes
    (placed on the node holding most of them).

    Workers are placed in the order given, each on its GPUs' node, taking the lowest free whole
    cores there; then each control plane goes to the node with the most free cores left. Problems
    (the plan is refused when there is any): GPUs spanning nodes, a node without the cores or the
    memory its VMs need, memory that is not a whole number of huge pages.
    """
    problems = []
    nodes = dict((node["node"], node) for node in topology["nodes"])
    order = sorted(nodes)
    free = {}
    host = {}
    for number in order:
        cores = sorted(nodes[number]["cores"])
        keep = min(host_cores, len(cores))
        host[number] = cores[:keep]
        free[number] = cores[keep:]
    memory_left = dict(
        (number, None if nodes[number].get("memory_mb") is None else nodes[number]["memory_mb"] - host_memory_mb)
        for number in order)
    vms = {}
    demand = dict((number, []) for number in order)

    for worker in workers:
        name = worker["name"]
        on = []
        unknown = []
        for gpu in worker.get("gpus", []):
            address = _normal_address(gpu["address"])
            node = gpu_nodes.get(address)
            if address not in gpu_nodes:
                problems.append("%s: GPU %s (%s) is not in the host's topology (no NVIDIA GPU at that address); "
                                "fix its address in gpu_cluster_gpu_pci_devices or capture the topology again"
                                % (name, gpu.get("name", address), address))
            elif node is None or node not in nodes:
                unknown.append(gpu)
            else:
                on.append((gpu, node))
        gpu_node_set = sorted(set(node for _gpu, node in on))
        spans = len(gpu_node_set) > 1
        if spans and not allow_span:
            problems.append(
                "%s: its GPUs sit on different NUMA nodes (%s), so some of them would reach the VM's memory across the "
                "socket link; give each worker GPUs of one node in gpu_cluster_gpu_pci_mappings, or set "
                "gpu_cluster_numa_allow_span: true to accept it"
                % (name, ", ".join("%s on node %d" % (gpu.get("name", gpu["address"]), node) for gpu, node in on)))
        if gpu_node_set:
            counts = dict((node, sum(1 for _gpu, n in on if n == node)) for node in gpu_node_set)
            node = sorted(gpu_node_set, key=lambda n: (-counts[n], n))[0]
        elif len(order) == 1:
            node = order[0]
        else:
            node = sorted(order, key=lambda n: (-_threads(free[n]), n))[0]
        vms[name] = {
            "role": "gpu_worker", "node": node, "vcpus": worker["vcpus"], "memory_mb": worker["memory_mb"],
            "gpus": [gpu.get("name", gpu["address"]) for gpu in worker.get("gpus", [])],
            "gpu_nodes": [n for _gpu, n in on], "spans": spans,
            "gpu_node_unknown": bool(unknown) and len(order) > 1,
            "hugepages": hugepages if hugepages in HUGEPAGE_MB else None,
        }
        if hugepages in HUGEPAGE_MB and worker["memory_mb"] % HUGEPAGE_MB[hugepages]:
            problems.append("%s: gpu_cluster_vm_memory_mb %d is not a whole number of %s huge pages; use a multiple of %d"
                            % (name, worker["memory_mb"], hugepages, HUGEPAGE_MB[hugepages]))
        demand[node].append(name)
        taken = _cores_for(free[node], worker["vcpus"])
        if taken is None:
            vms[name]["cores"] = []
        else:
            vms[name]["cores"] = taken
            free[node] = free[node][len(taken):]
        if memory_left[node] is not None:
            memory_left[node] -= worker["memory_mb"]

    for vm in control_planes:
        name = vm["name"]
        node = sorted(order, key=lambda n: (-_threads(free[n]), n))[0]
        taken = _cores_for(free[node], vm["vcpus"])
        vms[name] = {"role": "control_plane", "node": node, "vcpus": vm["vcpus"], "memory_mb": vm["memory_mb"],
                     "gpus": [], "gpu_nodes": [], "spans": False, "gpu_node_unknown": False, "hugepages": None,
                     "cores": taken or []}
        demand[node].append(name)
        if taken is not None:
            free[node] = free[node][len(taken):]
        if memory_left[node] is not None:
            memory_left[node] -= vm["memory_mb"]

    threads_per_core = topology.get("threads_per_core") or 1
    for number in order:
        short = [name for name in demand[number] if not vms[name]["cores"]]
        if short:
            need = sum(vms[name]["vcpus"] for name in demand[number])
            available = _threads(nodes[number]["cores"]) - _threads(host[number])
            problems.append(
                "NUMA node %d has %d physical cores (%d threads) for VMs once %d are kept for the host, but %s need %d vCPUs "
                "(%d thread(s) per core; %s left without cores); lower gpu_cluster_vm_cores, give those workers GPUs of another "
                "node, or lower gpu_cluster_numa_host_cores"
                % (number, len(nodes[number]["cores"]) - len(host[number]), available, len(host[number]),
                   ", ".join("%s (%d)" % (name, vms[name]["vcpus"]) for name in demand[number]), need,
                   threads_per_core, ", ".join(short)))
        if memory_left[number] is not None and memory_left[number] < 0:
            total = nodes[number]["memory_mb"]
            problems.append(
                "NUMA node %d has %s of memory, %s of it kept for the host, but %s need %s; lower gpu_cluster_vm_memory_mb, "
                "move a worker to GPUs of another node, or lower gpu_cluster_numa_host_memory_mb"
                % (number, _gib(total), _gib(host_memory_mb),
                   ", ".join("%s (%s)" % (name, _gib(vms[name]["memory_mb"])) for name in demand[number]),
                   _gib(sum(vms[name]["memory_mb"] for name in demand[number]))))

    reservation = {}
    for vm in vms.values():
        cpus = sorted(cpu for core in vm["cores"] for cpu in core)
        vm["cpus"] = cpus
        vm["affinity"] = format_cpulist(cpus)
        if vm["hugepages"]:
            pool = reservation.setdefault(vm["hugepages"], {})
            pool[str(vm["node"])] = pool.get(str(vm["node"]), 0) + vm["memory_mb"] // HUGEPAGE_MB[vm["hugepages"]]
    plan = {
        "nodes": [{
            "node": number,
            "host_cpus": format_cpulist(cpu for core in host[number] for cpu in core),
            "free_cpus": format_cpulist(cpu for core in free[number] for cpu in core),
            "free_cores": len(free[number]),
            "memory_mb": nodes[number].get("memory_mb"),
            "memory_free_for_vms_mb": memory_left[number],
            "vms": demand[number],
        } for number in order],
        "vms": vms,
        "hugepages": reservation,
        "threads_per_core": threads_per_core,
        "smt_active": bool(topology.get("smt_active")),
    }
    return plan, problems


def placement_table(plan, host_name="the Proxmox host"):
    """The plan as lines of text: one row per VM, then one line per NUMA node."""
    vms = plan["vms"]
    lines = ["NUMA placement on %s (%d node(s), SMT %s, %d thread(s) per core):"
             % (host_name, len(plan["nodes"]), "on" if plan["smt_active"] else "off", plan["threads_per_core"])]
    header = ("VM", "role", "node", "GPUs", "vCPUs", "host CPUs (affinity)", "memory", "hugepages")
    rows = [header]
    for name in sorted(vms, key=lambda n: (vms[n]["role"] != "gpu_worker", n)):
        vm = vms[name]
        note = " (GPUs span nodes)" if vm["spans"] else " (GPU node unknown)" if vm["gpu_node_unknown"] else ""
        pages = "-"
        if vm["hugepages"]:
            pages = "%s x%d" % (vm["hugepages"], vm["memory_mb"] // HUGEPAGE_MB[vm["hugepages"]])
        rows.append((name, vm["role"], "%d%s" % (vm["node"], note), ",".join(vm["gpus"]) or "-", str(vm["vcpus"]),
                     vm["affinity"] or "(none: no cores left)", _gib(vm["memory_mb"]), pages))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    for node in plan["nodes"]:
        memory = "memory unknown" if node["memory_mb"] is None else "%s, %s left for VMs after the host's share" % (
            _gib(node["memory_mb"]), _gib(node["memory_free_for_vms_mb"]) if node["memory_free_for_vms_mb"] >= 0
            else "-" + _gib(-node["memory_free_for_vms_mb"]))
        lines.append("node %d: host CPUs %s; free CPUs %s; %s" % (
            node["node"], node["host_cpus"] or "-", node["free_cpus"] or "-", memory))
    for size, pools in sorted(plan["hugepages"].items()):
        lines.append("huge pages to reserve (%s): %s" % (
            size, ", ".join("node %s: %d" % (node, count) for node, count in sorted(pools.items(), key=lambda i: int(i[0])))))
    return lines


def placement_tfvars(plan):
    """terraform/proxmox's ``placement`` variable: ``{vm: {affinity, host_node, hugepages}}``."""
    return dict((name, {
        "affinity": vm["affinity"],
        "host_node": vm["node"],
        "hugepages": HUGEPAGE_TERRAFORM.get(vm["hugepages"] or "", ""),
    }) for name, vm in plan["vms"].items() if vm["affinity"])


def hugepage_kernel_args(reservation):
    """Kernel arguments reserving huge pages per NUMA node at boot.

    ``{"1G": {"0": 256, "1": 256}}`` -> ``["hugepagesz=1G", "hugepages=0:256,1:256"]`` (the kernel's
    node format, Linux >= 5.18). One page size per host: the arguments pair by order, and two sizes
    with the same counts would repeat a token.
    """
    reservation = dict((size, pools) for size, pools in (reservation or {}).items() if pools)
    if not reservation:
        return []
    if len(reservation) > 1:
        raise ValueError("huge pages of one size per host: got %s" % ", ".join(sorted(reservation)))
    size, pools = next(iter(reservation.items()))
    if size not in HUGEPAGE_SIZES:
        raise ValueError("unknown huge page size %r: expected 1G or 2M" % (size,))
    counts = []
    for node, count in sorted(pools.items(), key=lambda item: int(item[0])):
        if not isinstance(count, int) or count < 0 or not re.match(r"^\d+$", str(node)):
            raise ValueError("huge pages per node must be {node number: page count}, got %r: %r" % (node, count))
        if count:
            counts.append("%s:%d" % (node, count))
    return ["hugepagesz=%s" % size, "hugepages=%s" % ",".join(counts)] if counts else []


def hugepage_shortfall(reservation, topology):
    """Per node, the pages a reservation asks for that the running host does not have: one message each."""
    nodes = dict((node["node"], node) for node in topology.get("nodes", []))
    missing = []
    for size, pools in sorted((reservation or {}).items()):
        for node, count in sorted(pools.items(), key=lambda item: int(item[0])):
            have = nodes.get(int(node), {}).get("hugepages", {}).get(size, {}).get("total", 0)
            if have < count:
                missing.append("node %s has %d %s huge pages reserved, the plan needs %d" % (node, have, size, count))
    return missing


# ----------------------------------------------------------- from inventory
SETTINGS = {
    "gpu_cluster_numa_placement": "bool",
    "gpu_cluster_numa_allow_span": "bool",
    "gpu_cluster_numa_topology_file": "path",
    "gpu_cluster_numa_host_cores": "count",
    "gpu_cluster_numa_host_memory_mb": "count",
    "gpu_cluster_numa_hugepages": "hugepages",
}


def _bad_setting(kind, value):
    if kind == "bool":
        return not isinstance(value, bool)
    if kind == "path":
        return not isinstance(value, str) or not value.strip() or "\n" in value
    if kind == "count":
        return isinstance(value, bool) or not isinstance(value, int) or value < 0
    return value not in HUGEPAGE_CHOICES


ADVICE = {
    "bool": "use true or false",
    "path": "use the path of a captured topology (JSON/YAML written by cps.gpu_cluster.pci_gpu_facts), or leave it unset",
    "count": "use a whole number >= 0",
    "hugepages": "use none, 1G or 2M",
}


def numa_problems(groups, hostvars):
    """Preflight: the NUMA placement variables of every Proxmox host, one message per problem.

    The placement itself needs the host's topology and is checked by the provision phase
    (plan_placement) before any VM is touched.
    """
    problems = []
    for host in list(groups.get("proxmox_hosts") or []):
        variables = hostvars.get(host) or {}
        for name, kind in SETTINGS.items():
            if name in variables and _bad_setting(kind, variables[name]):
                problems.append("%s: %s is %r; %s (docs/performance.md)" % (host, name, variables[name], ADVICE[kind]))
        pages = variables.get("gpu_cluster_numa_hugepages", "none")
        if pages in HUGEPAGE_MB and variables.get("gpu_cluster_numa_placement") is not True:
            problems.append("%s: gpu_cluster_numa_hugepages is %s but gpu_cluster_numa_placement is not true; huge pages are "
                            "reserved per NUMA node from the placement plan, so set gpu_cluster_numa_placement: true "
                            "(or gpu_cluster_numa_hugepages: none)" % (host, pages))
        if pages in HUGEPAGE_MB:
            for worker in list(groups.get("gpu_workers") or []):
                memory = (hostvars.get(worker) or {}).get("gpu_cluster_vm_memory_mb")
                if isinstance(memory, int) and not isinstance(memory, bool) and memory > 0 and memory % HUGEPAGE_MB[pages]:
                    problems.append("%s: gpu_cluster_vm_memory_mb %d is not a whole number of %s huge pages "
                                    "(gpu_cluster_numa_hugepages on %s); use a multiple of %d"
                                    % (worker, memory, pages, host, HUGEPAGE_MB[pages]))
    return problems


def placement_request(groups, hostvars, pve):
    """The planner's arguments for the VMs of ``pve`` as the inventory describes them.

    Returns ``{workers, control_planes, host_cores, host_memory_mb, hugepages, allow_span}`` (GPU
    workers and control planes in inventory order, GPUs by mapping name resolved to host addresses).
    """
    pve_vars = hostvars.get(pve) or {}
    devices = dict((device["name"], device["address"]) for device in pve_vars.get("gpu_cluster_gpu_pci_devices") or []
                   if isinstance(device, dict) and "name" in device and "address" in device)
    workers = []
    for name in groups.get("gpu_workers") or []:
        variables = hostvars.get(name) or {}
        preset = PRESETS.get(variables.get("gpu_cluster_vm_preset"), PRESETS[DEFAULT_PRESET])
        workers.append({
            "name": name,
            "vcpus": variables.get("gpu_cluster_vm_cores", preset[0]),
            "memory_mb": variables.get("gpu_cluster_vm_memory_mb", preset[1]),
            "gpus": [{"name": gpu, "address": devices.get(gpu, gpu)}
                     for gpu in variables.get("gpu_cluster_gpu_pci_mappings") or []],
        })
    control_planes = []
    for name in groups.get("k3s_servers") or []:
        variables = hostvars.get(name) or {}
        control_planes.append({"name": name, "vcpus": variables.get("gpu_cluster_vm_cores", CONTROL_PLANE_SIZE[0]),
                               "memory_mb": variables.get("gpu_cluster_vm_memory_mb", CONTROL_PLANE_SIZE[1])})
    return {
        "workers": workers,
        "control_planes": control_planes,
        "host_cores": pve_vars.get("gpu_cluster_numa_host_cores", DEFAULT_HOST_CORES),
        "host_memory_mb": pve_vars.get("gpu_cluster_numa_host_memory_mb", DEFAULT_HOST_MEMORY_MB),
        "hugepages": pve_vars.get("gpu_cluster_numa_hugepages", "none"),
        "allow_span": bool(pve_vars.get("gpu_cluster_numa_allow_span", False)),
    }
