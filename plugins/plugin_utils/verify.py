# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of the verify phase (roles/verify), as pure functions.

What each worker's GPUs look like against the inventory, the guest's view inside a GPU worker, the
expected GPU capacity, etcd voters, which Jobs to run (their manifests built from the render tier's
CUDA smoke pod, :func:`components.cuda_smoke_pod`), how to judge a Job from its status and log, the
GPU performance verdict (probe JSON against a per-model table of data-sheet peaks), and the report:
rows of the stable shape ``{check, target, status, detail}`` and a one-line result.

Statuses: PASS, WARN, FAIL, SKIPPED (a lab, or a part the user switched off) and NOT VERIFIED (a part
that could not run outside a lab: the run never says PASS without having checked capacity and run
the smoke Jobs).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components, node_vars, phase
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import copy_data

PASS = "PASS"
WARN = "WARN"
FAIL = "FAIL"
SKIPPED = "SKIPPED"
NOT_VERIFIED = "NOT VERIFIED"
STATUSES = (PASS, WARN, FAIL, SKIPPED, NOT_VERIFIED)
ROW_KEYS = ("check", "target", "status", "detail")
# The checks without which a run is NOT VERIFIED rather than PASS (issue 19).
ESSENTIAL_CHECKS = ("capacity", "smoke Jobs")
_RANK = {SKIPPED: 0, PASS: 1, WARN: 2, NOT_VERIFIED: 3, FAIL: 4}


# --------------------------------------------------------------------------------------------- rows
def row(check, target, status, detail):
    """One report row ``{check, target, status, detail}``; refuses a status outside :data:`STATUSES`."""
    if status not in STATUSES:
        raise ValueError("verify row %r: status %r is not one of %s" % (check, status, ", ".join(STATUSES)))
    return {"check": str(check), "target": str(target or ""), "status": status,
            "detail": " ".join(str(detail if detail is not None else "").split())}


def normalise_row(item):
    """A row of the one shape ``{check, target, status, detail}`` (every task file and module that adds
    rows returns it: capacity, etcd, the Jobs, JupyterHub, vllm_endpoint_check), checked."""
    if not isinstance(item, dict):
        raise ValueError("verify row %r is not a mapping with check, target, status and detail" % (item,))
    missing = [key for key in ("check", "status") if key not in item]
    if missing:
        raise ValueError("verify row %r lacks %s" % (item, ", ".join(missing)))
    return row(item["check"], item.get("target", ""), item["status"], item.get("detail", ""))


def cannot_run(reason, lab=False, switched_off=False):
    """``""`` (run), ``SKIPPED`` (a lab, or the user's choice) or ``NOT VERIFIED`` (anywhere else)."""
    status = phase.cannot_run_status(reason, lab, switched_off)
    return NOT_VERIFIED if status == phase.FAIL else status


def worst(statuses):
    """The most severe status: FAIL > NOT VERIFIED > WARN > PASS > SKIPPED (``SKIPPED`` when empty)."""
    return max(list(statuses) or [SKIPPED], key=lambda s: _RANK.get(s, 0))


# ------------------------------------------------------------------------------------ cluster access
def cluster_skip_reason(kubeconfig, exists, cluster_info):
    """Why the cluster cannot be checked (``""`` when an API server answered)."""
    if not kubeconfig:
        return "gpu_cluster_kubeconfig is not set"
    if not exists:
        return "kubeconfig %s does not exist (run playbooks/k3s.yml first)" % kubeconfig
    info = cluster_info if isinstance(cluster_info, dict) else {}
    if info.get("failed") or "version" not in info:
        return "no Kubernetes API server answers through %s" % kubeconfig
    return ""


# ------------------------------------------------------------------------------------- GPU workers
def worker_gpus(declared, model, pci_gpus, smi, unreachable_msg=None, lab=False):  # noqa: PLR0917 - a filter: Jinja passes by position
    """Compare one worker's PCI and nvidia-smi view with the inventory.

    ``pci_gpus``: ``pci_gpu_facts``' list; ``smi``: ``nvidia_gpu_facts``' registered result (or ``{}``);
    ``unreachable_msg``: set when the host could not be reached. Returns ``{declared, model, seen_pci,
    seen_smi, smi_models, driver_version, status, reason, checked}``.
    """
    declared = int(declared or 0)
    smi = smi if isinstance(smi, dict) else {}
    pci_gpus = list(pci_gpus or [])
    smi_found = bool(smi.get("nvidia_smi_found"))
    smi_gpus = list((smi.get("ansible_facts") or {}).get("nvidia_gpus") or [])
    smi_models = sorted({str(g.get("product_name")) for g in smi_gpus})
    skip = ""
    if unreachable_msg is not None:
        skip = "host unreachable: %s" % " ".join(str(unreachable_msg).split())
    elif phase._flag(lab) and not pci_gpus and not smi_found:
        skip = "no NVIDIA GPU on the PCI bus and no nvidia-smi (a lab worker)"
    problems = []
    if not skip:
        if len(pci_gpus) != declared:
            problems.append("PCI shows %d NVIDIA GPU(s), the inventory declares %d" % (len(pci_gpus), declared))
        if smi_found and len(smi_gpus) != declared:
            problems.append("nvidia-smi sees %d GPU(s), the inventory declares %d" % (len(smi_gpus), declared))
        if smi_found and model and smi_gpus and smi_models != [model]:
            problems.append("nvidia-smi reports %s, the inventory declares %s" % (", ".join(smi_models), model))
        if smi.get("failed") or (smi.get("rc") or 0) != 0:
            problems.append("nvidia-smi failed: %s" % (smi.get("msg") or ""))
    status = cannot_run(skip, lab) if skip else (FAIL if problems else PASS)
    return {"declared": declared, "model": model or "", "seen_pci": len(pci_gpus),
            "seen_smi": len(smi_gpus) if smi_found else None, "smi_models": smi_models,
            "driver_version": (smi.get("ansible_facts") or {}).get("nvidia_driver_version"),
            "status": status, "reason": skip or "; ".join(problems), "checked": not skip}


def worker_spec(host):
    """``{node, gpu_count, model, expected}`` of an inventory host (its hostvars)."""
    host = host if host is not None else {}
    expected = host.get("gpu_cluster_verify_expected")
    return {"node": str(node_vars.node_name(host.get("inventory_hostname") or "", host)),
            "gpu_count": node_vars.gpu_count(host),
            "model": node_vars.gpu_model(host),
            "expected": dict(expected) if expected else None}


def worker_row(node, worker, lab=False):
    """The ``GPUs`` row of one worker from :func:`worker_gpus` (``{}``: the worker play never reached it)."""
    if not worker:
        reason = "the worker play did not record this host"
        return row("GPUs", node, cannot_run(reason, lab), reason)
    if not worker.get("checked"):
        return row("GPUs", node, worker["status"], worker["reason"])
    seen = "declared %s, PCI %s, nvidia-smi %s" % (
        worker["declared"], worker["seen_pci"], "-" if worker["seen_smi"] is None else worker["seen_smi"])
    return row("GPUs", node, worker["status"], seen + (": " + worker["reason"] if worker["reason"] else ""))


# -------------------------------------------------------------------------------------- guest view
def cpu_list_count(text):
    """Number of CPUs in a kernel CPU list (``0-7,16-23`` is 16)."""
    count = 0
    for piece in str(text or "").strip().split(","):
        part = piece.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            count += int(high) - int(low) + 1
        else:
            int(part)
            count += 1
    return count


def parse_meminfo(text):
    """``/proc/meminfo`` as ``{key: int}`` (kB values in kB, counts as counts)."""
    values = {}
    for line in str(text or "").splitlines():
        match = re.match(r"^([\w()]+):\s+(\d+)", line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


def guest_view(cpu_online, node_dirs, meminfo_text):
    """Inside a GPU worker: ``{vcpus, numa_nodes, memory_mib, hugepages, hugepage_size_kb, hugetlb_mib}``.

    ``cpu_online``: ``/sys/devices/system/cpu/online``; ``node_dirs``: the names (or paths) under
    ``/sys/devices/system/node``; ``meminfo_text``: ``/proc/meminfo``.
    """
    nodes = sorted({str(d).rstrip("/").rsplit("/", 1)[-1] for d in node_dirs or []
                    if re.match(r"^node\d+$", str(d).rstrip("/").rsplit("/", 1)[-1])})
    mem = parse_meminfo(meminfo_text)
    return {"vcpus": cpu_list_count(cpu_online), "numa_nodes": len(nodes) or 1,
            "memory_mib": mem.get("MemTotal", 0) // 1024, "hugepages": mem.get("HugePages_Total", 0),
            "hugepage_size_kb": mem.get("Hugepagesize", 0), "hugetlb_mib": mem.get("Hugetlb", 0) // 1024}


def guest_row(node, view, expected_vcpus=None, skip_reason="", lab=False):
    """The ``guest view`` row: PASS with what the guest sees, WARN when it has fewer vCPUs than the
    inventory's ``gpu_cluster_vm_cores``."""
    if skip_reason or not view:
        reason = skip_reason or "the worker play did not record this host"
        return row("guest view", node, cannot_run(reason, lab) or NOT_VERIFIED, reason)
    detail = "%d vCPUs, %d NUMA node(s), %d MiB, hugepages %d x %d kB (hugetlb %d MiB)" % (
        view["vcpus"], view["numa_nodes"], view["memory_mib"], view["hugepages"], view["hugepage_size_kb"],
        view["hugetlb_mib"])
    if expected_vcpus and int(expected_vcpus) != view["vcpus"]:
        return row("guest view", node, WARN, "%s; the inventory gives it %s vCPUs (gpu_cluster_vm_cores)" % (
            detail, expected_vcpus))
    return row("guest view", node, PASS, detail)


# ---------------------------------------------------------------------------------------- capacity
def expected_capacity(workers, resource="nvidia.com/gpu", pools=None):
    """gpu_capacity's ``expected`` from the workers ``[{node, gpu_count, expected}]``: each worker offers
    its ``gpu_count`` of ``resource``, or what its GPU pool hands out (``pools``: the
    ``gpu_pool_capacity`` filter's list, whose ``per_node`` gives e.g. ``{nvidia.com/gpu.shared: 8}``
    or ``{nvidia.com/mig-1g.10gb: 14}``), or its own ``expected`` mapping (which wins). The cluster
    total of ``resource`` counts every worker that offers it."""
    pool_offer = {}
    for pool in pools or []:
        pool_offer.update((pool or {}).get("per_node") or {})
    per_node = {}
    total = 0
    for worker in workers or []:
        if worker.get("expected"):
            per_node[worker["node"]] = dict(worker["expected"])
        elif worker["node"] in pool_offer:
            per_node[worker["node"]] = dict(pool_offer[worker["node"]])
            total += int(pool_offer[worker["node"]].get(resource) or 0)
        else:
            count = int(worker.get("gpu_count") or 0)
            per_node[worker["node"]] = {resource: count}
            total += count
    expected = {"per_node": per_node}
    if total > 0:
        expected[resource] = total
    return expected


def _quantity(value):
    try:
        return int(float(str(value)))
    except (TypeError, ValueError):
        return 0


def pool_rows(pools, result, skip_reason="", lab=False):
    """One ``GPU pool`` row per pool (``pools``: the ``gpu_pool_capacity`` filter's list): the
    allocatable count of each of its resources on its nodes (``gpu_capacity``'s ``nodes``) against
    the expected capacity."""
    rows = []
    for pool in pools or []:
        name = pool.get("name", "?")
        if skip_reason:
            rows.append(row("GPU pool", name, cannot_run(skip_reason, lab), skip_reason))
            continue
        allocatable = dict((n.get("name"), n.get("allocatable") or {}) for n in (result or {}).get("nodes") or [])
        found, short = [], []
        for res, want in sorted((pool.get("resources") or {}).items()):
            have = sum(_quantity(allocatable.get(node, {}).get(res)) for node in pool.get("per_node") or {})
            found.append("%s %d of %d" % (res, have, want))
            if have < want:
                short.append(res)
        nodes = ", ".join(pool.get("nodes") or []) or "no node"
        detail = "%s (%s) on %s" % ("; ".join(found) or "no resource", pool.get("allocation", "?"), nodes)
        rows.append(row("GPU pool", name, FAIL if short else PASS,
                        ("short of " + ", ".join(short) + ": " if short else "") + detail))
    return rows


def capacity_rows(result, skip_reason="", lab=False):
    """The ``capacity`` and ``nodes Ready`` rows from ``gpu_capacity``'s result."""
    if skip_reason:
        status = cannot_run(skip_reason, lab)
        return [row("capacity", "cluster", status, skip_reason), row("nodes Ready", "cluster", status, skip_reason)]
    result = result if isinstance(result, dict) else {}
    shortfalls = list(result.get("shortfalls") or [])
    if result.get("failed") and not shortfalls:
        shortfalls = [result.get("msg") or "gpu_capacity did not run"]
    nodes = result.get("nodes") or []
    not_ready = [n.get("name") for n in nodes if not n.get("ready")]
    totals = ", ".join("%s=%s" % (k, v) for k, v in sorted((result.get("totals") or {}).items())) or "none"
    return [row("capacity", "cluster", FAIL if shortfalls else PASS,
                "; ".join(shortfalls) if shortfalls else "allocatable " + totals),
            row("nodes Ready", "cluster", FAIL if not_ready else PASS,
                "not Ready: " + ", ".join(not_ready) if not_ready else "%d nodes Ready" % len(nodes))]


def allocatable_by_node(result):
    """``{node: "nvidia.com/gpu=2"}`` from ``gpu_capacity``'s nodes."""
    out = {}
    for node in (result or {}).get("nodes") or []:
        alloc = node.get("allocatable") or {}
        out[node.get("name")] = ", ".join("%s=%s" % (k, v) for k, v in sorted(alloc.items())) or "0"
    return out


# -------------------------------------------------------------------------------------------- etcd
def etcd_row(servers, members=None, health=None, skip_reason="", lab=False, first_server=""):  # noqa: PLR0917 - a filter
    """The ``etcd`` row: as many voters as ``servers``, health true. Fewer than 3 servers is the
    inventory's choice (SKIPPED); no cluster or an unreachable server is SKIPPED in a lab, NOT VERIFIED
    elsewhere."""
    want = int(servers or 0)
    if not skip_reason and want < 3:
        return row("etcd", "cluster", SKIPPED, "fewer than 3 k3s_servers: no embedded etcd quorum to check")
    if skip_reason:
        return row("etcd", "cluster", cannot_run(skip_reason, lab), skip_reason)
    members = members if isinstance(members, dict) else {}
    if members.get("unreachable"):
        reason = "server %s unreachable" % first_server
        return row("etcd", "cluster", cannot_run(reason, lab), reason)
    listed = ((members.get("json") or {}).get("members")) or []
    voters = [m for m in listed if not m.get("isLearner")]
    healthy = str(((health or {}).get("json") or {}).get("health", "false")).lower() == "true"
    detail = "%d voter(s) of %d member(s), expected %d voters; health %s" % (
        len(voters), len(listed), want, "true" if healthy else "false")
    if not listed and members.get("msg"):
        detail += " (%s)" % members["msg"]
    return row("etcd", "cluster", PASS if healthy and len(voters) == want else FAIL, detail)


# ------------------------------------------------------------------------------------- Job planning
_TORCH_ONE = ("import torch; print('cuda_available=%s device_count=%d' % "
              "(torch.cuda.is_available(), torch.cuda.device_count()))")
_TORCH_MULTI = (
    "import torch\n"
    "n = torch.cuda.device_count()\n"
    "print('cuda_available=%s device_count=%d' % (torch.cuda.is_available(), n))\n"
    "devices = ['cuda:%d' % i for i in range(n)]\n"
    "parts = [(torch.ones(1024, 1024, device=d) @ torch.ones(1024, 1024, device=d)).sum().to('cuda:0') for d in devices]\n"
    "total = torch.stack(parts).sum().item()\n"
    "print('multi_gpu_sum=%d expected=%d' % (total, n * 1024 ** 3))\n"
    "print('multi_gpu_ok' if total == n * 1024 ** 3 else 'multi_gpu_wrong')\n")
_TF = ("import tensorflow as tf; gpus = tf.config.list_physical_devices('GPU'); "
       "print('tf_gpus=%d' % len(gpus)); "
       "print('tf_matmul_ok' if gpus and float(tf.reduce_sum(tf.matmul(tf.ones([256, 256]), tf.ones([256, 256])))) "
       "== 256.0 ** 3 else 'tf_matmul_failed')")
_WRITE = "echo verify-ok > /data/probe && sync && cat /data/probe"
_THROUGHPUT = (
    "set -e; echo write:; dd if=/dev/zero of=/data/verify.bin bs=1M count={mib} conv=fsync 2>&1; "
    "echo read:; dd if=/data/verify.bin of=/dev/null bs=1M iflag=direct 2>&1 "
    "|| dd if=/data/verify.bin of=/dev/null bs=1M 2>&1; rm -f /data/verify.bin; echo verify-ok")
_NET = (
    "mkdir -p /www && echo {me} > /www/index.html && (httpd -f -p 8080 -h /www &) && ok=1 && "
    "for peer in {peers}; do n=0; until wget -q -T 3 -O /tmp/peer http://$peer.{service}:8080/ "
    "&& [ \"$(cat /tmp/peer)\" = \"$peer\" ]; do n=$((n+1)); if [ $n -ge 40 ]; then break; fi; sleep 3; done; "
    "if [ \"$(cat /tmp/peer 2>/dev/null)\" = \"$peer\" ]; then echo reach $peer ok; else echo reach $peer FAIL; ok=0; fi; "
    "done; sleep 30; [ $ok = 1 ] && echo net-ok")


def slug(name, length=40):
    """A DNS-label-safe piece of a Job name from a node name."""
    text = re.sub(r"[^a-z0-9-]", "-", str(name).lower())[:length]
    return text.strip("-") or "node"


def _on_node(worker):
    """The fields every GPU Job pinned to ``worker`` carries: its node, and the node's resource and
    tolerations where the cluster model gave them (no key: the defaults of job_manifests)."""
    on = {"node": worker["node"]}
    if worker.get("resource"):
        on["resource"] = worker["resource"]
    if worker.get("tolerations") is not None:
        on["tolerations"] = [dict(t) for t in worker["tolerations"]]
    return on


def plan_jobs(workers, nodes=None, images=None, options=None):
    """The check Jobs, as specs ``{check, name, node?, gpus, image, command, expect, judge, ...}``.

    ``workers``: ``[{node, gpu_count}]`` of the GPU workers, each optionally with what the cluster
    model says of its node (``cluster_workloads.verify_workers``): ``resource`` (the GPU resource it
    advertises), ``shared`` (a unit is a time-slice or a MIG instance, not a whole GPU) and
    ``tolerations`` (one per taint of the node). A Job on a node asks for that node's resource, one
    unit where units are shared (the device plugin refuses more than one shared GPU once
    ``failRequestsGreaterThanOne`` is set, and one CUDA process uses one MIG instance); the
    performance probe and the multi-GPU check, which measure whole GPUs, run on nodes of whole GPUs
    only. ``nodes``: every Kubernetes node name (the pod-network check puts a pod on each); ``images``: ``cuda, vectoradd, pytorch, busybox, tensorflow``;
    ``options``: ``smoke_tests``, ``gpu_probe``, ``probe_burn`` (seconds), ``tensorflow``,
    ``fast_scratch_class``, ``fast_scratch_node_selector``, ``nfs_class``, ``scratch_mib``,
    ``network``.
    """
    images = dict(images or {})
    opts = {"smoke_tests": True, "gpu_probe": True, "probe_burn": 0, "tensorflow": True,
            "fast_scratch_class": "fast-scratch", "fast_scratch_node_selector": {"gpu": "true"},
            "nfs_class": "nfs-client", "scratch_mib": 1024, "network": True}
    opts.update(options or {})
    gpu_workers = [w for w in workers or [] if int(w.get("gpu_count") or 0) > 0]
    jobs = []
    if phase._flag(opts["smoke_tests"]):
        for worker in gpu_workers:
            node, sl, on = worker["node"], slug(worker["node"]), _on_node(worker)
            jobs += [
                dict(on, check="nvidia-smi", name="smi-" + sl, gpus=1, image=images["cuda"],
                     command=["nvidia-smi", "-L"], expect="^GPU 0: ", judge="log"),
                dict(on, check="vector-add", name="vectoradd-" + sl, gpus=1, image=images["vectoradd"],
                     expect="Test PASSED", judge="log"),
                dict(on, check="pytorch", name="pytorch-" + sl, gpus=1, image=images["pytorch"],
                     command=["python", "-c", _TORCH_ONE], expect="cuda_available=True device_count=1", judge="log"),
            ]
            if phase._flag(opts["gpu_probe"]) and not worker.get("shared"):
                argv = ["python", "/probe/gpu_probe.py"]
                if int(opts["probe_burn"] or 0) > 0:
                    argv += ["--burn", str(int(opts["probe_burn"]))]
                jobs.append(dict(on, check="gpu-probe", name="gpuprobe-" + sl, gpus=int(worker["gpu_count"]),
                                 image=images["pytorch"], command=argv, expect='"probe": "gpu"', judge="probe",
                                 model=worker.get("model", ""), probe=True))
        multi = [w for w in gpu_workers if int(w["gpu_count"]) >= 2 and not w.get("shared")]
        if multi:
            node = multi[0]["node"]
            jobs.append(dict(_on_node(multi[0]), check="multi-gpu", name="multigpu-" + slug(node), gpus=2,
                             image=images["pytorch"], command=["python", "-c", _TORCH_MULTI],
                             expect="cuda_available=True device_count=2[\\s\\S]*multi_gpu_ok", judge="log"))
        if gpu_workers and phase._flag(opts["tensorflow"]) and images.get("tensorflow"):
            node = gpu_workers[0]["node"]
            jobs.append(dict(_on_node(gpu_workers[0]), check="tensorflow", name="tensorflow-" + slug(node), gpus=1,
                             image=images["tensorflow"], command=["python", "-c", _TF],
                             expect="tf_gpus=1[\\s\\S]*tf_matmul_ok", judge="log"))
    jobs += [
        {"check": "coredns", "name": "coredns", "gpus": 0, "image": images["busybox"],
         "command": ["nslookup", "kubernetes.default.svc.cluster.local"],
         "expect": "Name:\\s+kubernetes\\.default\\.svc\\.cluster\\.local", "judge": "log"},
        {"check": "default-storage", "name": "default-storage", "gpus": 0, "storage_class": "",
         "image": images["busybox"], "command": ["sh", "-c", _WRITE], "expect": "^verify-ok$", "judge": "log"},
    ]
    mib = int(opts["scratch_mib"])
    for check, klass, selector in (("scratch fast-scratch", opts["fast_scratch_class"],
                                    opts["fast_scratch_node_selector"] if gpu_workers else {}),
                                   ("scratch nfs-client", opts["nfs_class"], {})):
        if not klass or (check.endswith("fast-scratch") and not gpu_workers):
            continue
        job = {"check": check, "name": "throughput-" + slug(klass), "gpus": 0, "storage_class": klass,
               "storage_mib": mib + 512, "node_selector": dict(selector or {}), "image": images["busybox"],
               "command": ["sh", "-c", _THROUGHPUT.format(mib=mib)], "expect": "^verify-ok$",
               "judge": "throughput"}
        known = [w["tolerations"] for w in gpu_workers if w.get("tolerations") is not None]
        if check.endswith("fast-scratch") and known:
            # the GPU workers' scratch: tolerate every taint they carry (the cluster model's)
            job["tolerations"] = []
            for entry in (t for tolerations in known for t in tolerations):
                if entry not in job["tolerations"]:
                    job["tolerations"].append(dict(entry))
        jobs.append(job)
    names, seen = [], set()
    for node in nodes or []:  # in order, once each (a set: linear at any size)
        if str(node) not in seen:
            seen.add(str(node))
            names.append(str(node))
    if phase._flag(opts["network"]) and len(names) >= 2:
        hosts = {n: "net-" + slug(n, 50) for n in names}
        # the GPU workers' own taints (a NoExecute GPU taint too; job_manifests adds every NoSchedule one)
        known = []
        for entry in (t for w in gpu_workers if w.get("tolerations") is not None for t in w["tolerations"]):
            if entry not in known:
                known.append(dict(entry))
        for node in names:
            peers = " ".join(hosts[p] for p in names if p != node)
            job = {"check": "pod network", "name": hosts[node], "node": node, "gpus": 0,
                   "image": images["busybox"], "hostname": hosts[node], "subdomain": "verify-net",
                   "command": ["sh", "-c", _NET.format(me=hosts[node], peers=peers, service="verify-net")],
                   "expect": "^net-ok$", "judge": "network", "network": True}
            if known:
                job["tolerations"] = [dict(t) for t in known]
            jobs.append(job)
    return jobs


def namespace_manifest(namespace):
    """The verify namespace (pod-security baseline)."""
    labels = {"app.kubernetes.io/managed-by": "cps.gpu_cluster"}
    for mode in ("enforce", "audit", "warn"):
        labels["pod-security.kubernetes.io/" + mode] = "baseline"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}


def probe_configmap(namespace, source):
    """The ConfigMap holding ``gpu_probe.py`` (mounted at ``/probe`` in the probe Jobs)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gpu-probe", "namespace": namespace,
                         "labels": {"app.kubernetes.io/name": "gpu-cluster-verify",
                                    "app.kubernetes.io/managed-by": "cps.gpu_cluster"}},
            "data": {"gpu_probe.py": str(source)}}


def network_service(namespace):
    """The headless Service giving each pod-network check pod a DNS name."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "verify-net", "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "cps.gpu_cluster"}},
            "spec": {"clusterIP": "None", "selector": {"gpu-cluster-verify/network": "true"},
                     "ports": [{"name": "http", "port": 8080, "targetPort": 8080}]}}


def job_manifests(job, namespace, deadline=1200, resource="nvidia.com/gpu"):
    """``[PVC?, Job]`` for one planned Job. The pod is :func:`components.cuda_smoke_pod`'s (the render
    tier's smoke pod: ``runtimeClassName: nvidia``, its toleration and restricted security context),
    pinned to the Job's node; Jobs without GPUs drop the runtime class and the GPU limit."""
    smoke = components.cuda_smoke_pod(name=job["name"], namespace=namespace, image=job["image"],
                                      gpus=max(int(job.get("gpus") or 0), 1))
    pod = copy_data(smoke["spec"])
    container = pod["containers"][0]
    container["name"] = "check"
    container["imagePullPolicy"] = "IfNotPresent"
    if job.get("command"):
        container["command"] = list(job["command"])
    if int(job.get("gpus") or 0) > 0:
        container["resources"] = {"limits": {job.get("resource") or resource: int(job["gpus"])}}
    else:
        pod.pop("runtimeClassName", None)
        container.pop("resources", None)
    if job.get("tolerations") is not None:
        pod["tolerations"] = [dict(t) for t in job["tolerations"]]  # every taint of the node it is pinned to
    if job.get("node"):
        pod["nodeSelector"] = {"kubernetes.io/hostname": job["node"]}
    elif job.get("node_selector"):
        pod["nodeSelector"] = dict(job["node_selector"])
    else:
        pod.pop("nodeSelector", None)
    pod["automountServiceAccountToken"] = False
    volumes, mounts = [], []
    if "storage_class" in job:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": job["name"]}})
        mounts.append({"name": "data", "mountPath": "/data"})
    if job.get("probe"):
        volumes += [{"name": "probe", "configMap": {"name": "gpu-probe"}},
                    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
        mounts += [{"name": "probe", "mountPath": "/probe", "readOnly": True},
                   {"name": "shm", "mountPath": "/dev/shm"}]
    if job.get("network"):
        pod["hostname"] = job["hostname"]
        pod["subdomain"] = job["subdomain"]
        # a pod on every node, servers included: tolerate what keeps ordinary pods off a node
        pod["tolerations"] = pod["tolerations"] + [{"operator": "Exists", "effect": "NoSchedule"}]
        volumes.append({"name": "www", "emptyDir": {}})
        mounts.append({"name": "www", "mountPath": "/www"})
    if mounts:
        container["volumeMounts"] = mounts
        pod["volumes"] = volumes
    labels = {"app.kubernetes.io/name": "gpu-cluster-verify", "gpu-cluster-verify/job": job["name"]}
    if job.get("network"):
        labels["gpu-cluster-verify/network"] = "true"
    manifest = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job["name"], "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "gpu-cluster-verify",
                                "app.kubernetes.io/managed-by": "cps.gpu_cluster",
                                "gpu-cluster-verify/check": slug(job["check"], 63)}},
        "spec": {"backoffLimit": 0, "activeDeadlineSeconds": int(deadline), "ttlSecondsAfterFinished": 3600,
                 "template": {"metadata": {"labels": labels}, "spec": pod}},
    }
    out = []
    if "storage_class" in job:
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": job["name"], "namespace": namespace,
                            "labels": {"app.kubernetes.io/name": "gpu-cluster-verify",
                                       "app.kubernetes.io/managed-by": "cps.gpu_cluster"}},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "%dMi" % int(job.get("storage_mib") or 64)}}}}
        if job["storage_class"]:
            pvc["spec"]["storageClassName"] = job["storage_class"]
        out.append(pvc)
    out.append(manifest)
    return out


GRANT_NAME = "gpu-cluster-verify"


def grant_quota(jobs, namespace, granted, resource="nvidia.com/gpu"):
    """The verify namespace's own ResourceQuota for the GPU resources of the reserved pools
    (``granted``: the cluster model's ``limited``), as much as the Jobs ask together; None when the
    Jobs ask none of them. The API server admits a pod asking a limited resource only in a namespace
    whose quota lists it, and verify runs on every pool; deleted with the namespace afterwards."""
    totals = {}
    for job in jobs or []:
        name = job.get("resource") or resource
        if int(job.get("gpus") or 0) > 0 and name in (granted or []):
            totals[name] = totals.get(name, 0) + int(job["gpus"])
    if not totals:
        return None
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": GRANT_NAME, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "cps.gpu_cluster"}},
            "spec": {"hard": dict(("requests." + name, str(totals[name])) for name in sorted(totals))}}


def plan_manifests(jobs, namespace, deadline=1200, resource="nvidia.com/gpu", probe_source=None, *, granted=None):
    """Everything the Jobs need, in apply order: namespace, its ResourceQuota for the reserved pools'
    resources (:func:`grant_quota`, when the Jobs ask any), ConfigMap (probe), Service (network),
    then each Job's PVC and Job."""
    out = [namespace_manifest(namespace)]
    quota = grant_quota(jobs, namespace, granted, resource)
    if quota:
        out.append(quota)
    if any(j.get("probe") for j in jobs) and probe_source is not None:
        out.append(probe_configmap(namespace, probe_source))
    if any(j.get("network") for j in jobs):
        out.append(network_service(namespace))
    for job in jobs:
        out += job_manifests(job, namespace, deadline, resource)
    return out


# ------------------------------------------------------------------------------------- Job judging
def _mbps(value, unit):
    factor = {"": 1e-6, "K": 1e-3, "k": 1e-3, "M": 1.0, "G": 1e3}.get(unit, 1.0)
    return float(value) * factor


def parse_throughput(log):
    """``{"write_mbps", "read_mbps"}`` from the throughput Job's two ``dd`` reports (busybox or GNU)."""
    out = {"write_mbps": None, "read_mbps": None}
    section = None
    for line in str(log or "").splitlines():
        if line.strip() in ("write:", "read:"):
            section = line.strip()[:-1]
            continue
        match = re.search(r"([\d.]+)\s*([kKMG]?)B/s", line)
        if match and section:
            out[section + "_mbps"] = round(_mbps(match.group(1), match.group(2)), 1)
    return out


def parse_probe_log(log):
    """The probe's JSON objects in a log: ``{"gpus": [...], "node": {...} or None, "errors": [...]}``."""
    gpus, node, errors = [], None, []
    for raw in str(log or "").splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            errors.append("unreadable probe line (%s)" % exc)
            continue
        if isinstance(obj, dict) and obj.get("probe") == "gpu":
            gpus.append(obj)
        elif isinstance(obj, dict) and obj.get("probe") == "node":
            node = obj
    return {"gpus": sorted(gpus, key=lambda g: g.get("index", 0)), "node": node, "errors": errors}


def job_outcome(job_status):
    """``(finished, succeeded, reason)`` from a Job's ``status``."""
    status = job_status if isinstance(job_status, dict) else {}
    succeeded = int(status.get("succeeded") or 0) > 0
    failed = int(status.get("failed") or 0) > 0
    reasons = ", ".join(str(c.get("reason")) for c in status.get("conditions") or [] if c.get("reason"))
    return succeeded or failed, succeeded, reasons


def judge_job(job, job_status, log, deadline=1200):
    """One Job's check: ``{check, name, node, status, detail, log, measured}``.

    ``log`` Jobs pass when the Job succeeded and the log matches ``expect``; ``throughput`` Jobs also
    report write/read MB/s; ``network`` Jobs name the peers they could not reach; ``probe`` Jobs carry
    the parsed probe output in ``measured`` (judged per GPU by :func:`gpu_perf_verdict`).
    """
    log = str(log or "")
    finished, succeeded, reasons = job_outcome(job_status)
    measured = None
    if not succeeded:
        status = FAIL
        why = reasons or ("not finished in %s s" % deadline if not finished else "failed")
        detail = "Job did not succeed (%s)" % why
        if job.get("judge") == "network":
            lost = re.findall(r"^reach (\S+) FAIL$", log, re.M)
            if lost:
                detail += ": cannot reach " + ", ".join(lost)
    elif not re.search(job["expect"], log, re.M):
        status, detail = FAIL, "log does not match %s" % job["expect"]
    else:
        status, detail = PASS, "log matches %s" % job["expect"]
    if job.get("judge") == "throughput":
        measured = parse_throughput(log)
        if status == PASS:
            if measured["write_mbps"] is None or measured["read_mbps"] is None:
                status, detail = FAIL, "dd did not report both rates"
            else:
                detail = "write %.0f MB/s, read %.0f MB/s (%s)" % (
                    measured["write_mbps"], measured["read_mbps"], job.get("storage_class") or "default class")
    elif job.get("judge") == "probe":
        measured = parse_probe_log(log)
        if status == PASS or measured["gpus"]:
            status = PASS if measured["gpus"] else FAIL
            detail = "%d GPU(s) measured" % len(measured["gpus"]) if measured["gpus"] else \
                "the probe printed no GPU result"
    elif job.get("judge") == "network" and status == PASS:
        detail = "reached %d peer(s)" % len(re.findall(r"^reach \S+ ok$", log, re.M))
    return {"check": job["check"], "name": job["name"], "node": job.get("node", ""), "status": status,
            "detail": detail, "log": log[-2000:], "measured": measured}


def job_rows(checks):
    """Report rows from judged Jobs (probe Jobs give one row; their GPUs are judged separately)."""
    return [row(c["check"], c.get("node") or "cluster", c["status"], c["detail"]) for c in checks]


# ---------------------------------------------------------------------------- GPU performance table
# Data-sheet / architecture-whitepaper peaks, dense (no sparsity), tensor figures with FP32
# accumulate (what PyTorch's matmul uses). TFLOP/s; memory bandwidth GB/s; PCIe generation and width
# of the card. ``None``: the card cannot do it (T4 has no bf16 or tf32).
GPU_MODELS = {
    "NVIDIA A100-PCIE-40GB": {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "mem_gbs": 1555,
                              "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA A100 80GB PCIe": {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "mem_gbs": 1935,
                              "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA A100-SXM4-40GB": {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "mem_gbs": 1555,
                              "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA A100-SXM4-80GB": {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "mem_gbs": 2039,
                              "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA H100 PCIe": {"bf16": 756, "fp16": 756, "tf32": 378, "fp32": 51, "mem_gbs": 2000,
                         "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA H100 80GB HBM3": {"bf16": 989, "fp16": 989, "tf32": 495, "fp32": 67, "mem_gbs": 3350,
                              "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA H100 NVL": {"bf16": 835, "fp16": 835, "tf32": 418, "fp32": 60, "mem_gbs": 3900,
                        "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA H200": {"bf16": 989, "fp16": 989, "tf32": 495, "fp32": 67, "mem_gbs": 4800,
                    "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA H200 NVL": {"bf16": 835, "fp16": 835, "tf32": 418, "fp32": 60, "mem_gbs": 4800,
                        "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA L40S": {"bf16": 362, "fp16": 362, "tf32": 183, "fp32": 91.6, "mem_gbs": 864,
                    "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA L4": {"bf16": 121, "fp16": 121, "tf32": 60, "fp32": 30.3, "mem_gbs": 300,
                  "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA A10": {"bf16": 125, "fp16": 125, "tf32": 62.5, "fp32": 31.2, "mem_gbs": 600,
                   "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA A10G": {"bf16": 70, "fp16": 70, "tf32": 35, "fp32": 31.2, "mem_gbs": 600,
                    "pcie_gen": 4, "pcie_width": 16},
    "Tesla T4": {"bf16": None, "fp16": 65, "tf32": None, "fp32": 8.1, "mem_gbs": 320,
                 "pcie_gen": 3, "pcie_width": 16},
    "NVIDIA GeForce RTX 3090": {"bf16": 71, "fp16": 71, "tf32": 35.6, "fp32": 35.6, "mem_gbs": 936,
                                "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA GeForce RTX 4090": {"bf16": 165.2, "fp16": 165.2, "tf32": 82.6, "fp32": 82.6, "mem_gbs": 1008,
                                "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA GeForce RTX 5090": {"bf16": 209.5, "fp16": 209.5, "tf32": 104.8, "fp32": 104.8, "mem_gbs": 1792,
                                "pcie_gen": 5, "pcie_width": 16},
    "NVIDIA RTX A6000": {"bf16": 154.8, "fp16": 154.8, "tf32": 77.4, "fp32": 38.7, "mem_gbs": 768,
                         "pcie_gen": 4, "pcie_width": 16},
    "NVIDIA RTX 6000 Ada Generation": {"bf16": 364.2, "fp16": 364.2, "tf32": 182.1, "fp32": 91.1,
                                       "mem_gbs": 960, "pcie_gen": 4, "pcie_width": 16},
}

# Fractions of peak: at or above ``pass`` PASS, below ``fail`` FAIL, in between WARN.
THRESHOLDS = {
    "matmul": {"pass": 0.60, "fail": 0.45},
    "memory": {"pass": 0.70, "fail": 0.50},
    "host_link": {"pass": 0.50, "fail": 0.30},
    "sm_clock": {"pass": 0.75, "fail": 0.50},
    "power_limit": {"pass": 0.90, "fail": 0.0},
    "allreduce": {"pass": 0.25, "fail": 0.0},
    "temperature_c": {"warn": 85, "fail": 95},
}

# Per-direction PCIe bandwidth in GB/s per lane after line coding.
PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# Clock-event reasons that mean the GPU is held back by heat or the board, not by the workload.
BAD_CLOCK_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")


def _norm_model(name):
    return re.sub(r"[^a-z0-9]", "", str(name or "").lower().replace("nvidia", "").replace("geforce", ""))


def model_figures(model, models=None):
    """``(name, figures)`` for a model name (exact, then ignoring case, spaces, 'NVIDIA'/'GeForce');
    ``models`` overrides or adds entries (merged per key over :data:`GPU_MODELS`)."""
    table = copy_data(GPU_MODELS)
    for name, figures in (models or {}).items():
        table[name] = dict(table.get(name, {}), **(figures or {}))
    if isinstance(model, dict):
        return model.get("name", "custom"), dict(model)
    if model in table:
        return model, table[model]
    wanted = _norm_model(model)
    for name, figures in table.items():
        if wanted and _norm_model(name) == wanted:
            return name, figures
    return model, None


def pcie_gbs(gen, width):
    """Per-direction PCIe bandwidth of a link in GB/s (``None`` when unknown)."""
    try:
        return round(PCIE_LANE_GBS[int(gen)] * int(width), 1)
    except (KeyError, TypeError, ValueError):
        return None


_LABELS = {"matmul_bf16_tflops": "bf16", "matmul_fp16_tflops": "fp16", "matmul_tf32_tflops": "tf32",
           "matmul_fp32_tflops": "fp32", "device_copy_gbs": "memory", "h2d_pinned_gbs": "H2D",
           "d2h_pinned_gbs": "D2H", "sm_clock_mhz": "SM clock", "power_limit_w": "power limit",
           "allreduce_busbw_gbs": "all-reduce"}


def _metric(name, measured, expected, unit, status, reason, short=None):  # noqa: PLR0917 - one metric's fields
    fraction = None
    if isinstance(measured, (int, float)) and isinstance(expected, (int, float)) and expected:
        fraction = round(float(measured) / float(expected), 3)
    return {"metric": name, "measured": measured, "expected": expected, "unit": unit, "fraction": fraction,
            "status": status, "reason": reason, "short": short or reason}


def _graded(name, measured, expected, unit, limits, what, unavailable):  # noqa: PLR0917 - one metric's fields
    if measured is None:
        return _metric(name, None, expected, unit, SKIPPED, "not measured: %s" % (unavailable.get(name) or "no value"))
    if expected is None:
        return _metric(name, measured, None, unit, SKIPPED, "no expected figure for this model")
    fraction = float(measured) / float(expected)
    text = "%s %s of %s %s expected (%.0f%%)" % (_num(measured), unit, _num(expected), unit, fraction * 100)
    short = "%s %s of %s %s (%.0f%%)" % (_LABELS.get(name, name), _num(measured), _num(expected), unit, fraction * 100)
    if fraction < limits["fail"]:
        return _metric(name, measured, expected, unit, FAIL, "%s: %s, below %.0f%% (%s)" % (
            name, text, limits["fail"] * 100, what), short)
    if fraction < limits["pass"]:
        return _metric(name, measured, expected, unit, WARN, "%s: %s, below %.0f%% (%s)" % (
            name, text, limits["pass"] * 100, what), short)
    return _metric(name, measured, expected, unit, PASS, text, short)


def _num(value):
    return ("%.1f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _link_metric(probe, figures):
    gen_now, gen_max = probe.get("pcie_gen_current"), probe.get("pcie_gen_max")
    width_now, width_max = probe.get("pcie_width_current"), probe.get("pcie_width_max")
    card_gen = (figures or {}).get("pcie_gen") or gen_max
    card_width = (figures or {}).get("pcie_width") or width_max
    if gen_now is None or width_now is None:
        return _metric("pcie_link", None, None, "", SKIPPED, "not measured: %s" % (
            (probe.get("unavailable") or {}).get("pcie_link") or "nvidia-smi gave no link state"))
    now = "Gen%s x%s" % (gen_now, width_now)
    best = "Gen%s x%s" % (card_gen, card_width)
    problems, causes = [], []
    if card_width and int(width_now) < int(card_width):
        causes.append("slot, riser or bifurcation")
        problems.append("link trained at x%s of x%s: the slot is wired narrower, a riser or extension cable "
                        "drops lanes, or the slot is bifurcated; move the card to a full x%s slot"
                        % (width_now, card_width, card_width))
    if card_gen and int(gen_now) < int(card_gen):
        causes.append("slot, riser, BIOS or passthrough config")
        problems.append("link at Gen%s of Gen%s: the slot, a riser or the BIOS (PCIe speed forced lower) limits "
                        "it, or the passthrough configuration hides the PCIe link (Proxmox: machine q35 and "
                        "hostpci ...,pcie=1)" % (gen_now, card_gen))
    if problems:
        return _metric("pcie_link", now, best, "", FAIL, "PCIe " + "; ".join(problems),
                       "PCIe %s of %s (%s)" % (now, best, " / ".join(causes)))
    return _metric("pcie_link", now, best, "", PASS, "PCIe %s (the card's maximum)" % now)


def gpu_perf_verdict(probe, model=None, models=None, thresholds=None):
    """Judge one GPU's probe JSON against its model's expected figures.

    ``probe``: one object of ``gpu_probe.py`` (or its JSON text); ``model``: the GPU model name (default
    the probe's ``name``) or a dict of figures; ``models``: extra or overriding table entries;
    ``thresholds``: overrides of :data:`THRESHOLDS` (per key, merged). Returns ``{gpu, index, model,
    status, summary, metrics: [{metric, measured, expected, unit, fraction, status, reason}]}``;
    ``status`` is the worst of the metrics (PASS, WARN or FAIL).
    """
    if isinstance(probe, str):
        try:
            probe = json.loads(probe)
        except ValueError as exc:
            raise ValueError("gpu_perf_verdict: the probe output is not JSON (%s)" % exc) from exc
    if not isinstance(probe, dict):
        raise ValueError("gpu_perf_verdict: the probe output must be one JSON object per GPU, got %r" % (probe,))
    limits = copy_data(THRESHOLDS)
    for key, value in (thresholds or {}).items():
        if key not in limits:
            raise ValueError("gpu_perf_verdict: unknown threshold %r; the thresholds are %s"
                             % (key, ", ".join(sorted(limits))))
        limits[key].update(value or {})
    name, figures = model_figures(model or probe.get("name"), models)
    unavailable = probe.get("unavailable") or {}
    metrics = []
    if figures is None:
        metrics.append(_metric("model", name, None, "", WARN, "no expected figures for %r: add it to "
                               "verify_gpu_perf_models to judge its throughput" % name))
        figures = {}
    for precision in ("bf16", "fp16", "tf32", "fp32"):
        key = "matmul_%s_tflops" % precision
        metrics.append(_graded(key, probe.get(key), figures.get(precision), "TFLOP/s", limits["matmul"],
                               "throttled, power-capped or a half-working GPU", unavailable))
    metrics.append(_graded("device_copy_gbs", probe.get("device_copy_gbs"), figures.get("mem_gbs"), "GB/s",
                           limits["memory"], "memory clock or ECC/row-remapping trouble", unavailable))
    metrics.append(_link_metric(probe, figures))
    link = pcie_gbs(figures.get("pcie_gen") or probe.get("pcie_gen_max"),
                    figures.get("pcie_width") or probe.get("pcie_width_max"))
    for key in ("h2d_pinned_gbs", "d2h_pinned_gbs"):
        metrics.append(_graded(key, probe.get(key), link, "GB/s", limits["host_link"],
                               "PCIe link, or the VM's memory on the other NUMA node than the GPU", unavailable))
    sm, sm_max = probe.get("sm_clock_mhz"), probe.get("sm_clock_max_mhz")
    reasons = [r for r in probe.get("clock_event_reasons") or [] if r in BAD_CLOCK_REASONS]
    if reasons:
        metrics.append(_metric("sm_clock_mhz", sm, sm_max, "MHz", FAIL, "clocks held back under load by %s "
                               "(cooling, airflow or the board's power delivery)" % ", ".join(reasons),
                               "clocks held back: %s" % ", ".join(reasons)))
    else:
        metrics.append(_graded("sm_clock_mhz", sm, sm_max, "MHz", limits["sm_clock"],
                               "clocks low under load: power cap, heat or application clocks", unavailable))
    limit_w, default_w = probe.get("power_limit_w"), probe.get("power_default_limit_w")
    metrics.append(_graded("power_limit_w", limit_w, default_w, "W", limits["power_limit"],
                           "power limit set below the default: nvidia-smi -pl or the BIOS", unavailable))
    temp = probe.get("temperature_c")
    if temp is None:
        metrics.append(_metric("temperature_c", None, None, "C", SKIPPED, "not measured: %s" % (
            unavailable.get("temperature_c") or "no value")))
    else:
        t_status = FAIL if temp >= limits["temperature_c"]["fail"] else (
            WARN if temp >= limits["temperature_c"]["warn"] else PASS)
        metrics.append(_metric("temperature_c", temp, limits["temperature_c"]["warn"], "C", t_status,
                               "%s C%s" % (temp, "" if t_status == PASS else ": too hot, check cooling and airflow")))
    metrics.append(_errors_metric(probe, unavailable))
    status = worst(m["status"] for m in metrics)
    if status == SKIPPED:
        status = FAIL
        metrics.append(_metric("probe", None, None, "", FAIL, "the probe measured nothing"))
    bad = [m["short"] for m in metrics if m["status"] == status and status in (FAIL, WARN)]
    if status == PASS:
        bf16 = next((m for m in metrics if m["metric"] in ("matmul_bf16_tflops", "matmul_fp16_tflops")
                     and m["status"] == PASS), None)
        summary = "as expected" + (": %s" % bf16["short"] if bf16 else "")
    else:
        summary = "; ".join(bad)
    return {"gpu": probe.get("name"), "index": probe.get("index"), "uuid": probe.get("uuid"), "model": name,
            "status": status, "summary": summary, "metrics": metrics}


def _errors_metric(probe, unavailable):
    """ECC, retired/remapped pages and Xid: any uncorrected error, pending retirement/remap or recent
    Xid is FAIL; corrected ECC errors alone are WARN."""
    problems, warnings, seen = [], [], False
    uncorrected, corrected = probe.get("ecc_uncorrected"), probe.get("ecc_corrected")
    if uncorrected is not None:
        seen = True
        if int(uncorrected) > 0:
            problems.append("%s uncorrected ECC error(s)" % uncorrected)
    if corrected is not None:
        seen = True
        if int(corrected) > 0:
            warnings.append("%s corrected ECC error(s)" % corrected)
    for key, text in (("retired_pages_pending", "page retirement pending (reset the GPU)"),
                      ("remapped_rows_pending", "row remapping pending (reset the GPU)"),
                      ("remapped_rows_failure", "row remapping failed (the card needs replacing)")):
        if probe.get(key) is not None:
            seen = True
            if probe[key] is True or str(probe[key]).lower() in ("yes", "true", "1"):
                problems.append(text)
    if probe.get("retired_pages") is not None:
        seen = True
        if int(probe["retired_pages"]) > 0:
            warnings.append("%s retired page(s)" % probe["retired_pages"])
    xid = probe.get("xid_recent")
    if xid is not None:
        seen = True
        if xid:
            problems.append("recent Xid error(s) %s (see the kernel log: nvidia Xid)" % ", ".join(str(x) for x in xid))
    if problems:
        return _metric("errors", "; ".join(problems + warnings), 0, "", FAIL, "; ".join(problems + warnings))
    if warnings:
        return _metric("errors", "; ".join(warnings), 0, "", WARN, "; ".join(warnings))
    if not seen:
        return _metric("errors", None, 0, "", SKIPPED, "not measured: %s" % (
            unavailable.get("ecc") or "no ECC, page or Xid data"))
    return _metric("errors", "none", 0, "", PASS, "no ECC, page-retirement or Xid errors")


def allreduce_verdict(node_probe, figures=None, thresholds=None):
    """The NCCL all-reduce bus bandwidth of a node against its GPUs' PCIe link (a floor only: NVLink
    is faster)."""
    limits = dict(THRESHOLDS["allreduce"], **((thresholds or {}).get("allreduce") or {}))
    node_probe = node_probe or {}
    busbw = node_probe.get("allreduce_busbw_gbs")
    if busbw is None:
        return _metric("allreduce_busbw_gbs", None, None, "GB/s", SKIPPED, "not measured: %s" % (
            (node_probe.get("unavailable") or {}).get("allreduce") or "fewer than 2 GPUs"))
    link = pcie_gbs((figures or {}).get("pcie_gen"), (figures or {}).get("pcie_width"))
    return _graded("allreduce_busbw_gbs", busbw, link, "GB/s", limits, "GPU-to-GPU path: P2P off, "
                   "ACS/IOMMU routing through the root complex, or GPUs on different NUMA nodes", {})


def perf_rows(node, verdicts, allreduce=None):
    """``GPU performance`` rows, one per GPU (and the node's all-reduce)."""
    rows = [row("GPU performance", "%s GPU%s" % (node, v.get("index")), v["status"],
                "%s: %s" % (v["gpu"] or v["model"], v["summary"])) for v in verdicts]
    if allreduce and allreduce["status"] != SKIPPED:
        rows.append(row("NCCL all-reduce", node, allreduce["status"], allreduce["reason"]))
    return rows


def perf_table(node, verdicts):
    """Lines of the per-GPU table (measured vs expected) for the report."""
    keys = (("matmul_bf16_tflops", "bf16 TFLOP/s"), ("matmul_fp32_tflops", "fp32 TFLOP/s"),
            ("device_copy_gbs", "mem GB/s"), ("h2d_pinned_gbs", "H2D GB/s"), ("pcie_link", "PCIe"))
    out = []
    for verdict in verdicts:
        by = {m["metric"]: m for m in verdict["metrics"]}
        cells = []
        for key, _label in keys:
            metric = by.get(key)
            if not metric or metric["measured"] is None:
                cells.append("-")
                continue
            mark = "" if metric["status"] == PASS else " **%s**" % metric["status"]
            expected = "" if metric["expected"] is None else " / %s" % _num(metric["expected"])
            cells.append("%s%s%s" % (_num(metric["measured"]), expected, mark))
        out.append({"target": "%s GPU%s" % (node, verdict.get("index")), "model": verdict["model"],
                    "status": verdict["status"], "cells": cells,
                    "why": "" if verdict["status"] == PASS else verdict["summary"],
                    "reasons": [m["reason"] for m in verdict["metrics"] if m["status"] in (FAIL, WARN)]})
    return out


PERF_COLUMNS = ("bf16 TFLOP/s", "fp32 TFLOP/s", "mem GB/s", "H2D GB/s", "PCIe")


# ------------------------------------------------------------------------------------------ result
def verify_result(rows, jobs_ran, lab=False):
    """``{result, failed, failures, not_verified, skipped, checked, summary}`` from every report row.

    ``result`` is FAIL when a row failed; NOT VERIFIED when a row is NOT VERIFIED or an essential check
    (capacity, the smoke Jobs: ``jobs_ran``) did not run; PASS only otherwise. ``failed`` (the phase
    fails) is true for FAIL and for NOT VERIFIED rows; a lab's SKIPPED rows and the user's choices (check
    mode) leave it false.
    """
    rows = [normalise_row(r) for r in rows or []]
    failures = ["%s%s" % (r["check"], " on " + r["target"] if r["target"] and r["target"] != "cluster" else "")
                for r in rows if r["status"] == FAIL]
    failure_details = ["%s%s: %s" % (r["check"], " on " + r["target"] if r["target"] and r["target"] != "cluster" else "",
                                     r["detail"]) for r in rows if r["status"] == FAIL]
    unverified = ["%s%s (%s)" % (r["check"], " on " + r["target"] if r["target"] and r["target"] != "cluster" else "",
                                 r["detail"]) for r in rows if r["status"] == NOT_VERIFIED]
    capacity = [r for r in rows if r["check"] == "capacity"]
    missing = []
    if not capacity or all(r["status"] in (SKIPPED, NOT_VERIFIED) for r in capacity):
        missing.append("capacity (%s)" % (capacity[0]["detail"] if capacity else "not checked"))
    if not jobs_ran:
        jobs = [r for r in rows if r["check"] == "smoke Jobs"]
        missing.append("smoke Jobs (%s)" % (jobs[0]["detail"] if jobs else "not run"))
    skipped = sum(1 for r in rows if r["status"] == SKIPPED)
    warned = sum(1 for r in rows if r["status"] == WARN)
    if failures:
        result = FAIL
        summary = "; ".join(failure_details)
    elif unverified or missing:
        result = NOT_VERIFIED
        reasons = unverified + [m for m in missing if not any(m.split(" (")[0] in u for u in unverified)]
        summary = "; ".join(reasons)
    else:
        result = PASS
        summary = "%d checks%s%s" % (len(rows), ", %d WARN" % warned if warned else "",
                                     ", %d SKIPPED" % skipped if skipped else "")
    return {"result": result, "failed": bool(failures or unverified), "failures": failures,
            "not_verified": unverified + ([] if unverified else missing), "skipped": skipped,
            "warned": warned, "checked": len(rows), "summary": summary}


# ------------------------------------------------------------------------------------------ report
def probe_verdicts(checks, models=None, thresholds=None):
    """``{node: {"verdicts": [...], "allreduce": metric}}`` from the judged probe Jobs."""
    out = {}
    for check in checks or []:
        measured = check.get("measured") or {}
        if check.get("check") != "gpu-probe" or not measured.get("gpus"):
            continue
        verdicts = [gpu_perf_verdict(gpu, None, models, thresholds) for gpu in measured["gpus"]]
        _name, figures = model_figures(measured["gpus"][0].get("name"), models)
        out[check["node"]] = {"verdicts": verdicts,
                              "allreduce": allreduce_verdict(measured.get("node"), figures, thresholds)}
    return out


def build_report(name, workers, rows, checks, jobs_ran, lab=False, capacity=None, models=None,  # noqa: PLR0917 - a filter
                 thresholds=None):
    """Everything the report shows, from what the run collected.

    ``workers``: ``[{node, declared, model, worker, guest}]`` (``worker`` from :func:`worker_gpus`,
    ``guest`` the guest-view row); ``rows``: the cluster rows so far (capacity, etcd, LLM, ...: any
    shape :func:`normalise_row` takes; other task files append theirs); ``checks``: judged Jobs.
    Returns ``{name, rows, workers, perf, checks, result...}`` (:func:`verify_result`'s keys merged).
    """
    probes = probe_verdicts(checks, models, thresholds)
    alloc = allocatable_by_node(capacity) if capacity else {}
    all_rows, table, perf = [], [], []
    for worker in workers or []:
        node = worker["node"]
        gpus_row = worker_row(node, worker.get("worker"), lab)
        all_rows.append(gpus_row)
        if worker.get("guest"):
            all_rows.append(normalise_row(worker["guest"]))
        smoke = [c for c in checks or [] if c.get("node") == node]
        node_perf = probes.get(node, {})
        table.append({"node": node, "declared": worker.get("declared", 0), "model": worker.get("model", ""),
                      "seen": gpus_row["detail"] if (worker.get("worker") or {}).get("checked")
                      else gpus_row["status"],
                      "allocatable": alloc.get(node, SKIPPED if not capacity else "0"),
                      "smoke": ", ".join("%s %s" % (c["check"], c["status"]) for c in smoke) or SKIPPED,
                      "performance": worst(v["status"] for v in node_perf.get("verdicts", []))
                      if node_perf else SKIPPED})
        perf += perf_table(node, node_perf.get("verdicts", []))
    all_rows += [normalise_row(r) for r in rows or []]
    all_rows += job_rows(checks)
    for node, node_perf in sorted(probes.items()):
        all_rows += perf_rows(node, node_perf["verdicts"], node_perf["allreduce"])
    result = verify_result(all_rows, jobs_ran, lab)
    result.update({"name": name, "rows": all_rows, "workers": table, "perf": perf,
                   "checks": [dict(c, measured=None) for c in checks or []]})
    return result


def _cell(text):
    return str(text).replace("|", "/").replace("\n", " ")


def report_markdown(report):
    """The report as Markdown: result and summary first, then the per-GPU performance table, the
    workers, every row, and each Job's log tail."""
    out = ["# %s: verify report" % report["name"], "",
           "**Result: %s**: %s" % (report["result"], report["summary"]), ""]
    if report["perf"]:
        out += ["## GPU performance (measured / expected)", "",
                "| GPU | model | status | %s | why |" % " | ".join(PERF_COLUMNS),
                "|---|---|---|%s---|" % ("---|" * len(PERF_COLUMNS))]
        for entry in report["perf"]:
            out.append("| %s | %s | %s | %s | %s |" % (entry["target"], entry["model"], entry["status"],
                                                       " | ".join(entry["cells"]), _cell(entry["why"])))
        out.append("")
        for entry in report["perf"]:
            for reason in entry["reasons"]:
                out.append("- %s %s: %s" % (entry["status"], entry["target"], reason))
        out.append("")
    out += ["## GPU workers", "", "| node | declared | seen | allocatable | smoke tests | performance |",
            "|---|---|---|---|---|---|"]
    for worker in report["workers"]:
        out.append("| %s | %s%s | %s | %s | %s | %s |" % (
            worker["node"], worker["declared"], " x " + worker["model"] if worker["model"] else "",
            _cell(worker["seen"]), _cell(worker["allocatable"]), _cell(worker["smoke"]), worker["performance"]))
    if not report["workers"]:
        out.append("| (no hosts in gpu_workers) | | | | | |")
    out += ["", "## Checks", "", "| check | target | status | detail |", "|---|---|---|---|"]
    for item in report["rows"]:
        out.append("| %s | %s | %s | %s |" % (_cell(item["check"]), _cell(item["target"]), item["status"],
                                              _cell(item["detail"])))
    out += ["", "## Jobs", ""]
    for check in report["checks"]:
        out += ["### %s %s%s" % (check["status"], check["check"], " on " + check["node"] if check["node"] else ""),
                "", check["detail"], "", "```", str(check.get("log") or "").strip(), "```", ""]
    if not report["checks"]:
        jobs = [r for r in report["rows"] if r["check"] == "smoke Jobs"]
        out.append("No Jobs ran%s." % (": " + jobs[0]["detail"] if jobs else ""))
    return "\n".join(out) + "\n"


def report_lines(report):
    """The lines printed at the end of the run: the per-GPU table, every row that is not PASS, the
    summary."""
    out = []
    if report["perf"]:
        out.append("%-22s %-26s %-6s %s" % ("GPU", "model", "status", " | ".join(PERF_COLUMNS)))
        for entry in report["perf"]:
            out.append("%-22s %-26s %-6s %s%s" % (entry["target"], entry["model"][:26], entry["status"],
                                                  " | ".join(entry["cells"]).replace("**", ""),
                                                  "  <- " + entry["why"] if entry["why"] else ""))
    for item in report["rows"]:
        if item["status"] != PASS:
            out.append("%s %s%s: %s" % (item["status"], item["check"],
                                        " on " + item["target"] if item["target"] not in ("", "cluster") else "",
                                        item["detail"]))
    out.append("%s verify: %s" % (report["result"], report["summary"]))
    return out
