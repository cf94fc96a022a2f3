# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU driver's lifecycle (docs/components.md, GPU driver): which driver branch the inventory's
GPUs need, the GPU Operator's driver ``upgradePolicy``, the node label that leaves a host's own
driver alone, the progress of a driver upgrade read from the nodes, and the preflight checks."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, node_vars

# Pascal and Volta GPUs (P100, P40, P4, V100, TITAN V, Quadro GP100/GV100): NVIDIA's R580 driver
# branch is the last that supports them (R580 release notes: "the last driver branch to support
# Maxwell, Pascal and Volta"), so an inventory with one runs the legacy pin for every node. Turing
# (T4) and newer run the current pin. One driver for the cluster: the ClusterPolicy has one version.
LEGACY_MODELS = re.compile(r"(\bV100|\bP100|\bP40\b|\bP4\b|\bTITAN V\b|\bGV100\b|\bGP100\b|\bTITAN Xp\b)", re.IGNORECASE)
# The GPU Operator's per-node switch for its containerised driver: a host with a driver of its own
# keeps it and gets everything else (the node label is the cluster model's).
DEPLOY_DRIVER_LABEL = cluster_model.HOST_DRIVER_LABEL.partition("=")[0]
# The label the operator's upgrade controller moves each GPU node through during a driver upgrade.
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_DONE = "upgrade-done"
UPGRADE_FAILED = "upgrade-failed"
# an NVIDIA data-center driver version: 595.91.07, 580.95.05, 570.195.03
DRIVER_VERSION = re.compile(r"^[1-9][0-9]{2}\.[0-9]{1,3}\.[0-9]{1,3}\Z")


def generation_branch(model):
    """``legacy`` for a Pascal or Volta model name, else ``current``."""
    return "legacy" if LEGACY_MODELS.search(str(model or "")) else "current"


def driver_version(models, current, legacy, override=None):
    """``{version, branch, why}``: the driver every GPU node runs. ``override`` (the inventory's
    ``gpu_cluster_gpu_driver_version``) wins; else the legacy pin when any model needs it."""
    if override:
        return {"version": str(override), "branch": "inventory", "why": "gpu_cluster_gpu_driver_version"}
    old = sorted(set(str(m) for m in models or [] if generation_branch(m) == "legacy"))
    if old:
        return {"version": str(legacy), "branch": "legacy",
                "why": "R580 is the last branch for %s" % ", ".join(old)}
    return {"version": str(current), "branch": "current", "why": "every GPU model is Turing or newer"}


def upgrade_policy(max_parallel=1, pod_deletion_timeout=300):
    """The ClusterPolicy's ``driver.upgradePolicy``: the operator upgrades the driver node by node,
    ``max_parallel`` nodes at a time (as many unavailable at most), deleting the GPU pods of a node
    first (waiting ``pod_deletion_timeout`` seconds for them to stop, never forcing); a full drain
    is not needed (the GPU pods are the only users of the driver)."""
    parallel = int(max_parallel)
    if parallel < 1:
        raise ValueError("max_parallel must be at least 1 (0 would upgrade every node at once)")
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": parallel,
        "maxUnavailable": parallel,
        "waitForCompletion": {"timeoutSeconds": 0, "podSelector": ""},
        "gpuPodDeletion": {"force": False, "timeoutSeconds": int(pod_deletion_timeout), "deleteEmptyDir": True},
        "drain": {"enable": False, "force": False, "podSelector": "", "timeoutSeconds": 300, "deleteEmptyDir": False},
    }


def upgrade_progress(nodes, names=None):
    """``{done, failed, pending, states}`` of a driver upgrade from Node objects (``names``: the GPU
    nodes to watch; default every node with the upgrade label): done when every watched node is
    ``upgrade-done`` (or has no state: nothing to upgrade there, such as a host driver)."""
    states = {}
    for node in nodes or []:
        metadata = (node or {}).get("metadata") or {}
        name = metadata.get("name")
        state = (metadata.get("labels") or {}).get(UPGRADE_STATE_LABEL, "")
        if names is None and not state:
            continue
        if names is None or name in names:
            states[name] = state
    missing = sorted(set(names or []) - set(states))
    failed = sorted(name for name, state in states.items() if state == UPGRADE_FAILED)
    pending = sorted(name for name, state in states.items() if state not in ("", UPGRADE_DONE, UPGRADE_FAILED)) + missing
    return {"done": not failed and not pending, "failed": failed, "pending": pending,
            "states": dict((name, states.get(name, "not in the cluster")) for name in sorted(set(states) | set(missing)))}


# --------------------------------------------------------------------------------- preflight
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def unmanaged_pods(pods):
    """``namespace/name`` of the pods a drain may not evict without force: running pods that no
    object owns. The same rule as the drain that follows (kubernetes.core's k8s_drain, ``filter_pods``,
    after kubectl drain's unreplicated filter, k8s.io/kubectl/pkg/drain/filters.go): mirror pods
    (static pods, which the API server cannot delete) and finished pods are left out, any owner
    reference counts as managed. A JupyterHub notebook server (KubeSpawner creates bare pods) is one."""
    found = []
    for pod in pods or []:
        metadata = pod.get("metadata") or {}
        if MIRROR_ANNOTATION in (metadata.get("annotations") or {}):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if not metadata.get("ownerReferences"):
            found.append("%s/%s" % (metadata.get("namespace"), metadata.get("name")))
    return sorted(found)


def maintenance_drain_problem(pods, node, force=False):
    """'' when GPU node maintenance may drain ``node`` (its pods as the API lists them), else why not:
    pods no controller manages would be deleted for good, so the drain needs ``force``
    (gpu_cluster_maintenance_force), and the playbook says so before it labels or cordons anything."""
    unmanaged = unmanaged_pods(pods)
    if not unmanaged or force is True:
        return ""
    return ("%s runs pods no controller manages: %s; an eviction deletes them for good (a notebook server loses "
            "its session). Ask their users to stop them (the hub's admin page for notebooks), or run again with "
            "-e gpu_cluster_maintenance_force=true to evict them too; nothing was changed." % (node, ", ".join(unmanaged)))


def driver_problems(inventory, hostvars=None):
    """Preflight: the driver settings of the inventory, one message each.
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    problems = []
    values = inv.values((
        "gpu_cluster_gpu_driver_version", "gpu_cluster_gpu_driver_max_parallel_upgrades", "gpu_cluster_gpu_driver_enabled",
        "gpu_cluster_gpu_driver_upgrade_timeout"))
    version = values.get("gpu_cluster_gpu_driver_version")
    if version not in (None, "") and not (isinstance(version, str) and DRIVER_VERSION.match(version)):
        problems.append("gpu_cluster_gpu_driver_version is %r; use an NVIDIA driver version such as '595.91.07' "
                        "(quoted), or leave it unset for the pin of versions.yml (docs/components.md)" % (version,))
    parallel = values.get("gpu_cluster_gpu_driver_max_parallel_upgrades")
    workers = inv.hosts("gpu_workers")
    if parallel is not None and not (node_vars.is_int(parallel) and 1 <= parallel <= max(len(workers), 1)):
        problems.append("gpu_cluster_gpu_driver_max_parallel_upgrades is %r; use a whole number from 1 to the number "
                        "of GPU workers (%d): how many nodes upgrade their driver at once" % (parallel, max(len(workers), 1)))
    timeout = values.get("gpu_cluster_gpu_driver_upgrade_timeout")
    if timeout is not None and not (node_vars.is_int(timeout) and timeout >= 300):
        problems.append("gpu_cluster_gpu_driver_upgrade_timeout is %r; use seconds, at least 300: how long "
                        "playbooks/gpu_driver_upgrade.yml waits for every GPU node to report upgrade-done" % (timeout,))
    for host in workers:
        on_host = inv.vars(host).get("gpu_cluster_gpu_driver_on_host")
        if on_host is not None and not isinstance(on_host, bool):
            problems.append("%s: gpu_cluster_gpu_driver_on_host is %r; use true (the host has its own NVIDIA driver) "
                            "or false (a YAML boolean)" % (host, on_host))
    if values.get("gpu_cluster_gpu_driver_enabled") is False:
        with_driver = [h for h in workers if inv.vars(h).get("gpu_cluster_gpu_driver_on_host") is False]
        if with_driver:
            problems.append("gpu_cluster_gpu_driver_enabled is false (no containerised driver anywhere) but %s set "
                            "gpu_cluster_gpu_driver_on_host: false; install their driver on the host or switch the "
                            "operator's driver on" % ", ".join(with_driver))
    return problems
