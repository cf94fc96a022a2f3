# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU pools (``gpu_cluster_gpu_pools``): validation, capacity, GPU Operator objects, quotas, alerts.

A pool is a named set of GPU workers that hands out its GPUs in one mode::

    - name: notebooks          # DNS label
      nodes: [wk-gpu3]         # inventory host names of gpu_workers, or
      node_selector: {...}     # labels the workers carry (gpu=true and gpu_cluster_node_labels)
      allocation: timeslice    # exclusive | timeslice | mig
      replicas: 4              # timeslice only, >= 2
      renameByDefault: true    # timeslice only: shared GPUs become nvidia.com/gpu.shared
      mig_profile: all-1g.10gb # mig only: a mig-parted config name of the GPU Operator, or
      mig_layout: {3g.40gb: 1, 2g.20gb: 2}  # mig only: a mixed layout per GPU (mig-parted config custom-<name>)
      namespaces: [llm]        # optional: only these namespaces may use the pool's resources

Which MIG profiles a model offers and how many slices of each fit one GPU are *derived* from the GPU
Operator's default mig-parted configuration (``mig_parted_config``), never from a table of our own:

* an entry with a ``device-filter`` binds its ``mig-devices`` (profile -> count) to those PCI device ids;
* a model is MIG-capable when its device id appears in the ``all-balanced`` configuration, whose
  entries give the memory of the model's 1g, 2g (and 3g) instances;
* an entry without a filter applies to every GPU mig-parted is run on; it is offered by a model when
  each of its profiles fits that model's memory geometry: ``Cg.Mgb`` with M the model's memory for C
  compute slices, a 1g instance with the 2g memory (double-memory 1g, GPUs with 7 slices), a 4g
  instance with the 3g memory (7-slice GPUs) or the whole GPU (4-slice GPUs: A30, RTX PRO 6000), a
  7g instance with twice the 3g memory (within 1 GB: 141 GB for two 71 GB halves).

The GPU model of a worker is ``gpu_cluster_gpu_model`` (the name nvidia-smi reports), turned into its
PCI device id by ``MODEL_DEVICE_IDS`` (PCI ids database names), or ``gpu_cluster_gpu_device_id``
(``10de:20b5``) on the worker when the name is not listed.

MIG strategy: ``mixed`` (``MIG_STRATEGY``): every MIG slice is advertised as
``nvidia.com/mig-<profile>``, so a pool's slice size is visible in its resource name, pools with
different profiles (and ``all-balanced``, three sizes per GPU) coexist, and whole-GPU pools keep
``nvidia.com/gpu``. ``single`` would advertise slices as ``nvidia.com/gpu`` and needs one profile on
every GPU of the cluster.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible.module_utils.six import string_types

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_capacity import evaluate
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.mig_parted_config import DEFAULT_MIG_PARTED_CONFIGMAP
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import node_vars
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import (
    DNS_LABEL as DNS_LABEL_RE, LABEL_KEY as LABEL_KEY_RE, LABEL_VALUE as LABEL_VALUE_RE)

ALLOCATIONS = ("exclusive", "timeslice", "mig")
POOL_KEYS = ("name", "nodes", "node_selector", "allocation", "replicas", "mig_profile", "mig_layout", "namespaces",
             "renameByDefault")
# The mig-parted ConfigMap the GPU Operator's MIG manager reads when a pool declares a mig_layout
# (operator_values: migManager.config; the chart creates it from our data).
MIG_PARTED_CONFIGMAP = "gpu-pools-mig-parted"
CUSTOM_CONFIG_PREFIX = "custom-"
POOL_LABEL = "gpu-cluster.cps/gpu-pool"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
MIG_STRATEGY = "mixed"
DEVICE_PLUGIN_CONFIGMAP = "gpu-pools-device-plugin"
# The device-plugin configuration of GPU nodes in no pool (whole GPUs).
DEFAULT_CONFIG_NAME = "default"
QUOTA_NAME = "gpu-pools"
BALANCED = "all-balanced"
DEVICE_ID_RE = re.compile(r"(?:0x)?([0-9a-fA-F]{4})([0-9a-fA-F]{4})|([0-9a-fA-F]{4}):([0-9a-fA-F]{4})")
PROFILE_RE = re.compile(r"([0-9]+)g\.([0-9]+)gb(.*)")

# nvidia-smi names -> PCI device id (vendor 10de). Identification only: what each model offers
# comes from the mig-parted configuration. Models without MIG are listed so that messages name them.
MODEL_DEVICE_IDS = {
    "NVIDIA A100-SXM4-40GB": "10de:20b0",
    "NVIDIA A100-PCIE-40GB": "10de:20f1",
    "NVIDIA A100-SXM4-80GB": "10de:20b2",
    "NVIDIA A100 80GB PCIe": "10de:20b5",
    "NVIDIA A800-SXM4-80GB": "10de:20f3",
    "NVIDIA A800 80GB PCIe": "10de:20f5",
    "NVIDIA A30": "10de:20b7",
    "NVIDIA H100 80GB HBM3": "10de:2330",
    "NVIDIA H100 PCIe": "10de:2331",
    "NVIDIA H100 NVL": "10de:2321",
    "NVIDIA H800": "10de:2324",
    "NVIDIA H200": "10de:2335",
    "NVIDIA H200 NVL": "10de:233b",
    "NVIDIA GH200 480GB": "10de:2342",
    "NVIDIA B200": "10de:2901",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "10de:2bb5",
    "Tesla T4": "10de:1eb8",
    "NVIDIA A10G": "10de:2237",
    "NVIDIA A10": "10de:2236",
    "NVIDIA L4": "10de:27b8",
    "NVIDIA L40S": "10de:26b9",
    "NVIDIA GeForce RTX 4090": "10de:2684",
    "NVIDIA GeForce RTX 3090": "10de:2204",
}


class PoolError(ValueError):
    """Pools that cannot be realised; the message says what to change."""


# ------------------------------------------------------------------------------ mig-parted
def normalize_device_id(value):
    """``0x20B510DE`` (mig-parted) or ``10de:20b5`` (lspci) -> ``10de:20b5``; None when it is neither."""
    if not isinstance(value, string_types):
        return None
    match = DEVICE_ID_RE.fullmatch(value.strip())
    if not match:
        return None
    if match.group(1):
        return ("%s:%s" % (match.group(2), match.group(1))).lower()
    return ("%s:%s" % (match.group(3), match.group(4))).lower()


def load_mig_configs(text=DEFAULT_MIG_PARTED_CONFIGMAP):
    """The ``mig-configs`` of a mig-parted ConfigMap (or of its ``config.yaml``):
    {config name: [{"devices": None | [device ids], "enabled": bool, "profiles": {profile: count}}]}."""
    document = yaml.safe_load(text)
    if isinstance(document, dict) and "data" in document:
        document = yaml.safe_load(document["data"]["config.yaml"])
    configs = {}
    for name, entries in (document.get("mig-configs") or {}).items():
        parsed = []
        for entry in entries or []:
            device_filter = entry.get("device-filter")
            if isinstance(device_filter, string_types):
                device_filter = [device_filter]
            parsed.append({
                "devices": None if device_filter is None else [normalize_device_id(d) for d in device_filter],
                "enabled": bool(entry.get("mig-enabled")),
                "profiles": dict((str(k), int(v)) for k, v in (entry.get("mig-devices") or {}).items()),
            })
        configs[str(name)] = parsed
    return configs


_CONFIGS = {}


def mig_configs():
    """The operator's default mig-parted configs, parsed once."""
    if not _CONFIGS:
        _CONFIGS.update(load_mig_configs())
    return _CONFIGS


def _profile_parts(profile):
    match = PROFILE_RE.fullmatch(profile)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


def device_geometry(device_id, configs=None):
    """{compute slices: memory GB} of a device's ``all-balanced`` entry; {} when the device has no MIG."""
    configs = mig_configs() if configs is None else configs
    for entry in configs.get(BALANCED, []):
        if entry["devices"] is not None and device_id in entry["devices"]:
            geometry = {}
            for profile in entry["profiles"]:
                parts = _profile_parts(profile)
                if parts:
                    geometry[parts[0]] = parts[1]
            return geometry
    return {}


def full_gpu_profiles(configs=None):
    """The whole-GPU MIG profiles (``7g.<memory>gb``) the operator's mig-parted configs name: the exact
    spelling per card (an A100 80GB has ``7g.80gb``; an H200 ``7g.141gb``, one GB less than its two
    ``3g.71gb`` halves)."""
    configs = mig_configs() if configs is None else configs
    return {profile for entries in configs.values() for entry in entries for profile in entry["profiles"]
            if (_profile_parts(profile.partition("+")[0]) or (0, 0))[0] == 7}


def profile_fits(geometry, profile, configs=None):
    """Whether a MIG profile (``3g.40gb``, ``1g.10gb+me``) exists on a device of this memory geometry,
    exactly as NVIDIA names it: no tolerance on the memory size (issue 43: ``7g.79gb`` is not an A100
    80GB profile). The whole-GPU profile's memory is not always twice the 3g one's (H200: 7g.141gb,
    3g.71gb): it is the operator's ``all-7g.*`` name within one GB of that, and only that name."""
    parts = _profile_parts(profile)
    if not parts or not geometry:
        return False
    compute, memory = parts
    seven_slices = 3 in geometry
    if geometry.get(compute) == memory:
        return True
    if compute == 1 and seven_slices:
        return geometry.get(2) == memory
    if compute == 4:
        return memory == (geometry[3] if seven_slices else 2 * geometry.get(2, 0))
    if compute == 7 and seven_slices:
        return abs(memory - 2 * geometry[3]) <= 1 and "7g.%dgb" % memory in full_gpu_profiles(configs)
    return False


def mig_slices(device_id, config_name, configs=None):
    """{profile: count per GPU} that mig-parted config ``config_name`` creates on a device, or None
    when the device does not offer it (no MIG, a filter that leaves it out, a profile it lacks)."""
    configs = mig_configs() if configs is None else configs
    geometry = device_geometry(device_id, configs)
    if not geometry:
        return None
    for entry in configs.get(config_name, []):
        if entry["devices"] is not None:
            if device_id in entry["devices"]:
                return dict(entry["profiles"]) if entry["enabled"] and entry["profiles"] else None
            continue
        if not entry["enabled"] or not entry["profiles"]:
            return None
        if all(profile_fits(geometry, profile, configs) for profile in entry["profiles"]):
            return dict(entry["profiles"])
        return None
    return None


def offered_configs(device_id, configs=None):
    """{config name: {profile: count}} of every mig-parted config a device offers (sorted names)."""
    configs = mig_configs() if configs is None else configs
    result = {}
    for name in sorted(configs):
        slices = mig_slices(device_id, name, configs)
        if slices:
            result[name] = slices
    return result


def mig_resource(profile):
    """``1g.10gb`` -> ``nvidia.com/mig-1g.10gb``; ``1g.10gb+me`` -> ``nvidia.com/mig-1g.10gb.me``
    (the device plugin's names under the mixed strategy)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def pool_resource(pool):
    """The resource name a pool's pods ask for, from the pool entry alone: ``nvidia.com/gpu``
    (exclusive; timeslice without ``renameByDefault``), ``nvidia.com/gpu.shared`` (timeslice with
    it), ``nvidia.com/mig-<profile>`` (mig; ``all-1g.10gb`` and ``1g.10gb`` both give
    ``nvidia.com/mig-1g.10gb``). One source for the apps (vLLM, JupyterHub) and the quotas."""
    allocation = pool.get("allocation") or "exclusive"
    if allocation == "timeslice":
        return SHARED_GPU_RESOURCE if _rename(pool) else GPU_RESOURCE
    if allocation == "mig" and isinstance(pool.get("mig_layout"), dict) and pool["mig_layout"]:
        return mig_resource(largest_profile(pool["mig_layout"]))
    if allocation == "mig":
        profile = str(pool.get("mig_profile") or "")
        return mig_resource(profile[len("all-"):] if profile.startswith("all-") else profile)
    return GPU_RESOURCE


def mig_config_name(profile, configs=None):
    """A pool's ``mig_profile`` as a mig-parted config name: ``all-1g.10gb`` stays, ``1g.10gb`` becomes
    ``all-1g.10gb`` when that config exists; None when neither exists."""
    configs = mig_configs() if configs is None else configs
    if not isinstance(profile, string_types):
        return None
    if profile in configs:
        return profile
    if "all-" + profile in configs:
        return "all-" + profile
    return None


# ------------------------------------------------------------------------------ custom MIG layouts
# Where each GPU instance may start, in memory slices (NVIDIA's MIG user guide, "Supported MIG
# profiles" and its placement figures): GPUs with 7 compute slices have 8 memory slices, 4-slice GPUs
# (A30) have 4. An instance of C compute slices and M memory slices starts at a multiple of M, with
# the exceptions below; the compute slices of all instances add up to at most 7 (or 4).
SEVEN_SLICE_STARTS = {(7, 8): (0,), (4, 4): (0,), (3, 4): (0, 4), (2, 2): (0, 2, 4), (1, 1): tuple(range(7)),
                      (1, 2): (0, 2, 4, 6)}
FOUR_SLICE_STARTS = {(4, 4): (0,), (2, 2): (0, 2), (1, 1): (0, 1, 2, 3)}


def largest_profile(layout):
    """The layout's profile with the most compute slices (then memory): what apps on the pool ask for."""
    return max(sorted(layout), key=lambda p: _profile_parts(p) or (0, 0))


def layout_entry_problems(layout, where):
    """Shape of a ``mig_layout``: a non-empty mapping of MIG profiles (``3g.40gb``, ``1g.10gb+me``) to
    whole numbers of at least 1, per GPU."""
    if not isinstance(layout, dict) or not layout:
        return ["%s: mig_layout %r must map MIG profiles to counts per GPU, like {3g.40gb: 1, 2g.20gb: 2}"
                % (where, layout)]
    problems = []
    for profile, count in layout.items():
        if not isinstance(profile, string_types) or _profile_parts(profile) is None \
                or profile.partition("+")[2] not in ("", "me"):
            problems.append("%s: mig_layout profile %r is not a MIG profile like 3g.40gb or 1g.10gb+me" % (where, profile))
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.append("%s: mig_layout count %r of %s must be a whole number of at least 1 (instances per GPU)"
                            % (where, count, profile))
    return problems


def _placement(items, slots, starts):
    """Start slot per item (compute, memory slices, profile) with no two overlapping, or None."""
    used = [False] * slots
    order = sorted(items, key=lambda item: (-item[1], -item[0], item[2]))
    placed = []

    def place(index):
        if index == len(order):
            return True
        compute, size, _profile = order[index]
        for start in starts[(compute, size)]:
            if start + size <= slots and not any(used[start:start + size]):
                used[start:start + size] = [True] * size
                placed.append(start)
                if place(index + 1):
                    return True
                placed.pop()
                used[start:start + size] = [False] * size
        return False
    return list(zip(order, placed)) if place(0) else None


def layout_problems(device_id, layout):
    """Why ``layout`` ({profile: count per GPU}) cannot be made on a device (``10de:20b5``), as
    sentences; [] when it can. Checked the way the hardware decides: each profile must exist on the
    device (its memory geometry, from the operator's mig-parted configuration), the compute slices
    add up to at most 7 (4 on an A30), at most one media-extension (``+me``) instance, and the
    instances fit the device's memory slices at the start positions each size allows."""
    geometry = device_geometry(device_id)
    if not geometry:
        return ["%s has no MIG" % device_id]
    seven = 3 in geometry
    slots, compute_total = (8, 7) if seven else (4, 4)
    starts = SEVEN_SLICE_STARTS if seven else FOUR_SLICE_STARTS
    unit = geometry.get(1) or 1
    items, problems = [], []
    for profile in sorted(layout, key=_profile_sort):
        base = profile.partition("+")[0]
        parts = _profile_parts(base)
        if not parts or not profile_fits(geometry, base):
            offered = sorted({p for slices in offered_configs(device_id).values() for p in slices}, key=_profile_sort)
            problems.append("MIG profile %s does not exist on this GPU; its profiles are %s" % (profile, ", ".join(offered)))
            continue
        size = max(1, round(float(parts[1]) / unit))
        if (parts[0], size) not in starts:
            problems.append("MIG profile %s does not exist on this GPU" % profile)
            continue
        items.extend([(parts[0], size, profile)] * layout[profile])
    if problems:
        return problems
    compute = sum(item[0] for item in items)
    if compute > compute_total:
        problems.append("the layout %s needs %d compute slices; one GPU has %d"
                        % (layout_text(layout), compute, compute_total))
    media = sum(count for profile, count in layout.items() if profile.endswith("+me"))
    if media > 1:
        problems.append("the layout %s has %d media-extension (+me) instances; one GPU has one" % (layout_text(layout), media))
    memory = sum(item[1] for item in items)
    if memory > slots:
        problems.append("the layout %s needs %d memory slices; one GPU has %d" % (layout_text(layout), memory, slots))
    if not problems and _placement(items, slots, starts) is None:
        problems.append("the layout %s cannot be placed on one GPU: its instances overlap at every start position "
                        "the hardware allows (docs/gpu-pools.md, Custom MIG layouts)" % layout_text(layout))
    return problems


def layout_text(layout):
    return " + ".join("%d x %s" % (layout[p], p) for p in sorted(layout, key=_profile_sort, reverse=True))


def pool_mig_config(pool):
    """The mig-parted configuration name a MIG pool's nodes are labelled with (``nvidia.com/mig.config``)."""
    if pool.get("mig_layout") is not None:
        return CUSTOM_CONFIG_PREFIX + str(pool.get("name"))
    return mig_config_name(pool.get("mig_profile")) or str(pool.get("mig_profile"))


def pool_slices(pool, device_id):
    """{profile: count per GPU} a MIG pool makes on a device, or None when the device cannot."""
    layout = pool.get("mig_layout")
    if layout is not None:
        if not isinstance(layout, dict) or layout_problems(device_id, layout):
            return None
        return dict((str(p), int(c)) for p, c in layout.items())
    return mig_slices(device_id, mig_config_name(pool.get("mig_profile")))


def mig_parted_data(pools):
    """The ``data`` of the mig-parted ConfigMap when a pool declares a ``mig_layout`` ({} otherwise):
    the operator's default configurations (other pools keep using them) plus ``custom-<pool>`` per
    layout pool, every GPU of its nodes cut the same way."""
    custom = [p for p in pools or [] if isinstance(p, dict) and p.get("allocation") == "mig"
              and isinstance(p.get("mig_layout"), dict)]
    if not custom:
        return {}
    document = yaml.safe_load(yaml.safe_load(DEFAULT_MIG_PARTED_CONFIGMAP)["data"]["config.yaml"])
    for pool in custom:
        document["mig-configs"][pool_mig_config(pool)] = [{
            "devices": "all", "mig-enabled": True,
            "mig-devices": dict((str(p), int(c)) for p, c in sorted(pool["mig_layout"].items()))}]
    return {"config.yaml": yaml.safe_dump(document, default_flow_style=False, sort_keys=False)}


# ------------------------------------------------------------------------------ workers
def _label_dict(labels):
    if isinstance(labels, dict):
        return dict((str(k), str(v)) for k, v in labels.items())
    result = {}
    for item in labels if isinstance(labels, list) else []:
        key, _sep, value = str(item).partition("=")
        result[key] = value
    return result


def worker_view(host, variables):
    """What the pools need of one GPU worker's host variables."""
    variables = variables or {}
    labels = {"gpu": "true"}
    labels.update(_label_dict(variables.get("gpu_cluster_node_labels")))
    model = node_vars.gpu_model(variables)
    device_id = normalize_device_id(variables.get("gpu_cluster_gpu_device_id"))
    if device_id is None and model:
        device_id = MODEL_DEVICE_IDS.get(model.strip())
    return {
        "host": host,
        "node_name": node_vars.node_name(host, variables),
        "gpu_count": node_vars.gpu_count(variables),
        "model": model,
        "device_id": device_id,
        "labels": labels,
    }


def workers_view(workers):
    """GPU workers as ``{host: view}``: from a list of hostvars (each with ``inventory_hostname``) or a
    mapping of host -> variables."""
    if isinstance(workers, dict):
        items = sorted(workers.items())
    else:
        items = [((w or {}).get("inventory_hostname"), w) for w in workers or []]
    return dict((host, worker_view(host, variables)) for host, variables in items if host)


def pool_hosts(pool, workers):
    """Inventory hosts of a pool: its ``nodes``, or the workers whose labels match ``node_selector``."""
    if pool.get("nodes") is not None:
        return [h for h in pool["nodes"] if isinstance(h, string_types)]
    selector = pool.get("node_selector") or {}
    if not isinstance(selector, dict) or not selector:
        return []
    return sorted(h for h, w in workers.items()
                  if all(w["labels"].get(str(k)) == str(v) for k, v in selector.items()))


# ------------------------------------------------------------------------------ validation
def _pool_label(pool, index):
    name = pool.get("name") if isinstance(pool, dict) else None
    return "gpu_cluster_gpu_pools[%d] (%s)" % (index, name) if isinstance(name, string_types) else "gpu_cluster_gpu_pools[%d]" % index


def _entry_problems(pool, where):
    problems = []
    unknown = sorted(str(k) for k in pool if k not in POOL_KEYS)
    if unknown:
        problems.append("%s: unknown key(s) %s; a pool has %s" % (where, ", ".join(unknown), ", ".join(POOL_KEYS)))
    name = pool.get("name")
    if not isinstance(name, string_types) or not DNS_LABEL_RE.fullmatch(name):
        problems.append("%s: name %r must be a DNS label (lowercase letters, digits, '-'), like notebooks" % (where, name))
    allocation = pool.get("allocation")
    if allocation not in ALLOCATIONS:
        problems.append("%s: allocation %r must be one of exclusive (whole GPUs), timeslice (replicas pods share "
                        "each GPU) or mig (MIG slices)" % (where, allocation))
    has_nodes, has_selector = pool.get("nodes") is not None, pool.get("node_selector") is not None
    if has_nodes == has_selector:
        problems.append("%s: set exactly one of nodes (a list of gpu_workers hosts) or node_selector "
                        "(a mapping of node labels)" % where)
    elif has_nodes and (not isinstance(pool["nodes"], list) or not all(isinstance(n, string_types) for n in pool["nodes"])):
        problems.append("%s: nodes %r must be a list of gpu_workers host names" % (where, pool["nodes"]))
    elif has_selector and (not isinstance(pool["node_selector"], dict) or not all(
            isinstance(k, string_types) and LABEL_KEY_RE.fullmatch(k) and isinstance(v, string_types) and LABEL_VALUE_RE.fullmatch(v)
            for k, v in pool["node_selector"].items())):
        problems.append("%s: node_selector %r must map label keys to string values, like {gpu-class: a100}"
                        % (where, pool["node_selector"]))
    replicas = pool.get("replicas")
    if allocation == "timeslice":
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 2:
            problems.append("%s: replicas %r must be a whole number of at least 2 (the pods that share each GPU; "
                            "1 is exclusive allocation)" % (where, replicas))
    elif replicas is not None:
        problems.append("%s: replicas is only for allocation: timeslice; remove it" % where)
    rename = pool.get("renameByDefault")
    if rename is not None and (allocation != "timeslice" or not isinstance(rename, bool)):
        problems.append("%s: renameByDefault must be true or false, and only with allocation: timeslice" % where)
    if allocation == "mig" and pool.get("mig_layout") is not None:
        if pool.get("mig_profile") is not None:
            problems.append("%s: set one of mig_profile (a mig-parted configuration) or mig_layout (a mixed layout "
                            "per GPU), not both" % where)
        problems.extend(layout_entry_problems(pool.get("mig_layout"), where))
    elif allocation == "mig":
        if not isinstance(pool.get("mig_profile"), string_types) or mig_config_name(pool.get("mig_profile")) is None:
            problems.append("%s: mig_profile %r is not a configuration of the GPU Operator's mig-parted config; use one "
                            "like all-1g.10gb, all-3g.40gb or all-balanced, or a mig_layout (docs/gpu-pools.md)"
                            % (where, pool.get("mig_profile")))
    else:
        for key in ("mig_profile", "mig_layout"):
            if pool.get(key) is not None:
                problems.append("%s: %s is only for allocation: mig; remove it" % (where, key))
    namespaces = pool.get("namespaces")
    if namespaces is not None and (not isinstance(namespaces, list) or not namespaces or not all(
            isinstance(n, string_types) and DNS_LABEL_RE.fullmatch(n) for n in namespaces)):
        problems.append("%s: namespaces %r must be a non-empty list of namespace names (DNS labels); leave it out "
                        "to open the pool to every namespace" % (where, namespaces))
    return problems


def pool_problems(pools, workers):
    """Every problem of ``gpu_cluster_gpu_pools`` against the GPU workers (``workers_view``), as sentences
    that say what to change (empty when the pools can be realised)."""
    if pools is None:
        return []
    if not isinstance(pools, list):
        return ["gpu_cluster_gpu_pools is %r; use a list of pools, each with name, nodes or node_selector and "
                "allocation (docs/gpu-pools.md)" % (pools,)]
    problems = []
    valid = []
    seen = {}
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict):
            problems.append("gpu_cluster_gpu_pools[%d] is %r; use a mapping with name, nodes and allocation" % (index, pool))
            continue
        where = _pool_label(pool, index)
        entry = _entry_problems(pool, where)
        problems.extend(entry)
        name = pool.get("name")
        if isinstance(name, string_types):
            if name in seen:
                problems.append("gpu_cluster_gpu_pools: pool name %s is used twice (entries %d and %d); give each pool "
                                "its own name" % (name, seen[name], index))
            seen.setdefault(name, index)
        if not entry:
            valid.append((index, pool))
    owner = {}
    for index, pool in valid:
        where = _pool_label(pool, index)
        hosts = pool_hosts(pool, workers)
        for host in hosts:
            if host not in workers:
                problems.append("%s: node %s is not a host of gpu_workers; use the inventory names of GPU workers (%s)"
                                % (where, host, ", ".join(sorted(workers)) or "none declared"))
        if len(set(hosts)) != len(hosts):
            problems.append("%s: a node is listed twice in nodes; list each once" % where)
        if not hosts:
            how = "nodes is empty" if pool.get("nodes") is not None else "node_selector %r matches no GPU worker" % (pool["node_selector"],)
            problems.append("%s: the pool has no node (%s); give it at least one GPU worker or remove it" % (where, how))
        for host in sorted(set(hosts)):
            if host in owner:
                problems.append("node %s is in two GPU pools (%s and %s); a node hands out its GPUs in one mode, so "
                                "put it in one pool" % (host, owner[host], pool["name"]))
            else:
                owner[host] = pool["name"]
        if pool["allocation"] == "mig":
            problems.extend(_mig_problems(pool, where, [workers[h] for h in hosts if h in workers]))
    if not problems:
        problems.extend(_grant_problems([p for _i, p in valid], workers))
    return problems


def _mig_problems(pool, where, members):
    problems = []
    config = mig_config_name(pool.get("mig_profile"))
    for worker in members:
        if worker["device_id"] is None:
            problems.append("%s: node %s has GPU model %r, which is not known here; set gpu_cluster_gpu_device_id "
                            "(the PCI vendor:device id lspci -nn shows, like 10de:20b5) on it" % (where, worker["host"], worker["model"]))
            continue
        if not device_geometry(worker["device_id"]):
            problems.append("%s: node %s has %s (%s), which has no MIG (only A30, A100, H100, H200, B200 class GPUs do); "
                            "use allocation: timeslice or exclusive for it"
                            % (where, worker["host"], worker["model"] or "a GPU", worker["device_id"]))
            continue
        if pool.get("mig_layout") is not None:
            problems.extend("%s: node %s (%s): %s" % (where, worker["host"], worker["model"] or worker["device_id"], text)
                            for text in layout_problems(worker["device_id"], pool["mig_layout"]))
            continue
        if mig_slices(worker["device_id"], config) is None:
            offered = sorted(p for name, slices in offered_configs(worker["device_id"]).items()
                             for p in slices if len(slices) == 1 and name.startswith("all-"))
            problems.append("%s: MIG profile %s is not offered by %s on node %s; its profiles are %s"
                            % (where, pool["mig_profile"], worker["model"] or worker["device_id"], worker["host"],
                               ", ".join(sorted(set(offered), key=_profile_sort))))
    return problems


def _profile_sort(profile):
    parts = _profile_parts(profile) or (99, 0)
    return (parts[0], parts[1], profile)


def _grant_problems(pools, workers):
    """A quota cannot keep a resource to one pool when another pool hands out the same resource name
    to other namespaces: such grants contradict each other."""
    problems = []
    by_resource = {}
    for pool in pools:
        for resource in pool_resources(pool, workers):
            by_resource.setdefault(resource, []).append(pool)
    for resource in sorted(by_resource):
        sharing = by_resource[resource]
        grants = set(tuple(sorted(p["namespaces"])) if p.get("namespaces") else None for p in sharing)
        if len(sharing) > 1 and len(grants) > 1:
            names = ", ".join(p["name"] for p in sharing)
            problems.append("gpu_cluster_gpu_pools: pools %s all hand out %s but grant it to different namespaces "
                            "(%s); a ResourceQuota counts %s cluster-wide, so a namespace granted one pool could take "
                            "the other's GPUs: give these pools the same namespaces, or use renameByDefault or "
                            "another allocation so their resource names differ"
                            % (names, resource, "; ".join(", ".join(p.get("namespaces") or ["every namespace"]) for p in sharing),
                               resource))
    return problems


def inventory_pool_problems(inventory, hostvars=None):
    """Preflight entry point: the problems of the inventory's ``gpu_cluster_gpu_pools``, judged once
    (the model reads the same judgement: cluster_model.Inventory.pool_problems). ``inventory``: a
    cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    # cluster_model imports this module: the boundary's function is looked up when called
    from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model  # noqa: PLC0415 pylint: disable=import-outside-toplevel
    inv = cluster_model.inventory(inventory, hostvars)
    if inv.value("gpu_cluster_gpu_pools") is None:
        return []
    problems = []
    for host in sorted(inv.hosts("gpu_workers")):
        device_id = inv.vars(host).get("gpu_cluster_gpu_device_id")
        if device_id is not None and normalize_device_id(device_id) is None:
            problems.append("%s: gpu_cluster_gpu_device_id is %r; use the PCI vendor:device id lspci -nn shows for "
                            "the GPU, like 10de:20b5" % (host, device_id))
    return problems + list(inv.pool_problems)


# ------------------------------------------------------------------------------ capacity
def _rename(pool):
    return bool(pool.get("renameByDefault"))


def node_resources(pool, worker):
    """{resource: count} one worker of a pool offers."""
    gpus = worker["gpu_count"]
    if pool["allocation"] == "exclusive":
        return {GPU_RESOURCE: gpus}
    if pool["allocation"] == "timeslice":
        return {SHARED_GPU_RESOURCE if _rename(pool) else GPU_RESOURCE: gpus * pool["replicas"]}
    slices = pool_slices(pool, worker["device_id"]) or {}
    return dict((mig_resource(profile), count * gpus) for profile, count in slices.items())


def pool_resources(pool, workers):
    """Resource names a pool hands out (sorted)."""
    names = set()
    for host in pool_hosts(pool, workers):
        if host in workers:
            names.update(node_resources(pool, workers[host]))
    if not names and pool.get("allocation") in ("exclusive", "timeslice"):
        names.add(SHARED_GPU_RESOURCE if pool["allocation"] == "timeslice" and _rename(pool) else GPU_RESOURCE)
    return sorted(names)


def plain(value):
    """A copy made of plain dict/list/str/int/float/bool/None (Ansible hands filters tagged subclasses,
    which yaml.safe_dump cannot represent)."""
    if isinstance(value, dict):
        return dict((plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    for kind in (bool, int, float, str):
        if isinstance(value, kind) and value is not None:
            return kind(value)
    return value


def _checked(pools, workers):
    pools = plain(pools)
    workers = plain(workers)
    workers = workers_view(workers) if not _is_view(workers) else workers
    problems = pool_problems(pools, workers)
    if problems:
        raise PoolError("; ".join(problems))
    return list(pools or []), workers


def _is_view(workers):
    return isinstance(workers, dict) and all(isinstance(w, dict) and "device_id" in w and "labels" in w for w in workers.values())


def pool_capacity(pools, workers):
    """Expected capacity of every pool: a list of {name, allocation, resource, count, resources,
    per_node, nodes}. ``resource``/``count`` are the pool's (first, for all-balanced) resource and its
    total; ``resources`` every resource with its total; ``per_node`` {node name: {resource: count}}.
    exclusive = GPUs; timeslice = GPUs x replicas; mig = slices per GPU (mig-parted) x GPUs."""
    return _capacity(*_checked(pools, workers))


def _capacity(pools, workers):
    """:func:`pool_capacity` of pools already judged sound against the workers' view."""
    result = []
    for pool in pools:
        totals = {}
        per_node = {}
        hosts = pool_hosts(pool, workers)
        for host in hosts:
            offer = node_resources(pool, workers[host])
            per_node[workers[host]["node_name"]] = offer
            for resource, count in offer.items():
                totals[resource] = totals.get(resource, 0) + count
        resources = sorted(totals) or pool_resources(pool, workers)
        primary = resources[0]
        result.append({
            "name": pool["name"],
            "allocation": pool["allocation"],
            "resource": primary,
            "count": totals.get(primary, 0),
            "resources": dict((r, totals.get(r, 0)) for r in resources),
            "per_node": per_node,
            "nodes": [workers[h]["node_name"] for h in hosts],
        })
    return result


# ------------------------------------------------------------------------------ GPU Operator objects
def device_plugin_config(pool):
    """The device plugin's configuration (api/config/v1) for one pool. A time-sliced pool sets
    ``failRequestsGreaterThanOne``: a container asking more than one shared GPU is refused at
    allocation instead of getting two slices of one GPU and believing it has two GPUs."""
    config = {"version": "v1", "flags": {"migStrategy": MIG_STRATEGY if pool["allocation"] == "mig" else "none"}}
    if pool["allocation"] == "timeslice":
        config["sharing"] = {"timeSlicing": {
            "renameByDefault": _rename(pool),
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": GPU_RESOURCE, "replicas": pool["replicas"]}],
        }}
    return config


def device_plugin_configmap(pools, workers, namespace="gpu-operator", name=DEVICE_PLUGIN_CONFIGMAP):
    """The ConfigMap the GPU Operator's ``devicePlugin.config`` points at: one key per pool, plus
    ``default`` (whole GPUs, MIG devices under the mixed strategy) for GPU nodes in no pool."""
    pools, _workers = _checked(pools, workers)
    data = {DEFAULT_CONFIG_NAME: yaml.safe_dump({"version": "v1", "flags": {"migStrategy": MIG_STRATEGY}},
                                                default_flow_style=False, sort_keys=False)}
    for pool in pools:
        data[pool["name"]] = yaml.safe_dump(device_plugin_config(pool), default_flow_style=False, sort_keys=False)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "gpu-cluster", "app.kubernetes.io/component": "gpu-pools"}},
        "data": data,
    }


def operator_values(pools, configmap=DEVICE_PLUGIN_CONFIGMAP):
    """GPU Operator chart values for the pools (deep-merged into the role's values): the device
    plugin's config ConfigMap and default, and the MIG strategy. Empty without pools."""
    if not pools:
        return {}
    values = {"devicePlugin": {"config": {"name": configmap, "default": DEFAULT_CONFIG_NAME}},
              "mig": {"strategy": MIG_STRATEGY}}
    parted = mig_parted_data(pools)
    if parted:
        values["migManager"] = {"config": {"name": MIG_PARTED_CONFIGMAP, "create": True, "default": "all-disabled",
                                           "data": parted}}
    return values


def mig_strategy(pools, default="single"):
    """``mixed`` when pools are declared (see the module doc), else ``default``."""
    return MIG_STRATEGY if pools else default


def pool_node_labels(pools, host, variables=None, as_list=False):
    """Labels one inventory host gets from the pools (``{}`` when it is in none): our pool label,
    ``nvidia.com/device-plugin.config=<pool>`` and, on MIG pools, ``nvidia.com/mig.config=<config>``.
    ``variables`` are the host's variables (node_selector pools match its labels); ``as_list`` returns
    ``key=value`` strings (the form of ``k3s_node_labels``)."""
    labels = _pool_node_labels(pools, host, variables)
    return ["%s=%s" % item for item in sorted(labels.items())] if as_list else labels


def _pool_node_labels(pools, host, variables):
    view = worker_view(host, variables or {})
    for pool in pools or []:
        if not isinstance(pool, dict) or not isinstance(pool.get("name"), string_types):
            continue
        if host in pool_hosts(pool, {host: view}):
            return member_labels(pool)
    return {}


def member_labels(pool):
    """The labels a member of ``pool`` gets: our pool label, ``nvidia.com/device-plugin.config=<pool>``
    and, on a MIG pool, ``nvidia.com/mig.config=<config>``."""
    labels = {POOL_LABEL: pool["name"], DEVICE_PLUGIN_CONFIG_LABEL: pool["name"]}
    if pool.get("allocation") == "mig":
        labels[MIG_CONFIG_LABEL] = pool_mig_config(pool)
    return labels


def node_labels(pools, workers):
    """{node name: labels} for every pool member (render output and direct delivery)."""
    pools, workers = _checked(pools, workers)
    result = {}
    for host in sorted(workers):
        labels = pool_node_labels(pools, host, _host_variables(workers[host]))
        if labels:
            result[workers[host]["node_name"]] = labels
    return result


def _host_variables(view):
    return {"gpu_cluster_node_labels": ["%s=%s" % item for item in sorted(view["labels"].items())]}


def resource_quotas(pools, workers, judged=False):
    """ResourceQuota objects: a namespace granted pools gets each granted resource up to the pools'
    capacity and zero for the resources of restricted pools it is not granted; ``default`` gets zero
    for every restricted resource. Pools without ``namespaces`` are open and get no quota entry.
    ``judged``: ``pools`` and ``workers`` are the cluster model's (its pools judged sound once against
    its workers' view, cluster_model.Inventory.pools), so they are not judged again."""
    pools, workers = (list(pools or []), workers) if judged else _checked(pools, workers)
    capacity = _capacity(pools, workers)
    restricted = {}
    for pool, cap in zip(pools, capacity):
        if pool.get("namespaces"):
            for resource, count in cap["resources"].items():
                entry = restricted.setdefault(resource, {"count": 0, "namespaces": set()})
                entry["count"] += count
                entry["namespaces"].update(pool["namespaces"])
    if not restricted:
        return []
    namespaces = set(["default"])
    for entry in restricted.values():
        namespaces.update(entry["namespaces"])
    quotas = []
    for namespace in sorted(namespaces):
        hard = {}
        for resource in sorted(restricted):
            granted = namespace in restricted[resource]["namespaces"]
            hard["requests." + resource] = str(restricted[resource]["count"] if granted else 0)
        quotas.append({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": QUOTA_NAME, "namespace": namespace,
                         "labels": {"app.kubernetes.io/part-of": "gpu-cluster", "app.kubernetes.io/component": "gpu-pools"}},
            "spec": {"hard": hard},
        })
    return quotas


def quota_components(pools, workers):
    """One component per quota namespace (``gpu-quota-<namespace>``), delivered into that namespace.
    No Namespace object: Fleet creates a bundle's namespace, direct delivery creates it first, and a
    namespace another component labels (the LLM namespace) is not claimed twice."""
    return [{"name": ("gpu-quota-" + q["metadata"]["namespace"])[:63].rstrip("-"), "namespace": q["metadata"]["namespace"],
             "manifests": [q]} for q in resource_quotas(pools, workers)]


# ------------------------------------------------------------------------------ verify
def capacity_report(pools, workers, nodes, require_ready=True):
    """Verify rows ``{check, target, status, detail}``, one per pool and resource: the pool's Ready,
    schedulable nodes (matched by name) must advertise at least the expected allocatable
    (``gpu_capacity.evaluate``), plus one row per pool member missing from ``nodes``."""
    capacity = pool_capacity(pools, workers)
    by_name = dict(((n.get("metadata") or {}).get("name"), n) for n in nodes or [] if isinstance(n, dict))
    rows = []
    for pool in capacity:
        members = [by_name[name] for name in pool["nodes"] if name in by_name]
        resources = sorted(pool["resources"])
        result = evaluate(members, resources=resources,
                          expected=dict(pool["resources"], per_node=pool["per_node"]), require_ready=require_ready)
        for resource in resources:
            want = pool["resources"][resource]
            have = result["totals"].get(resource, 0)
            status = "ok" if have >= want else "failed"
            detail = "%d of %d expected %s allocatable on %s" % (have, want, resource, ", ".join(pool["nodes"]))
            if status == "failed":
                detail += ": " + "; ".join(s for s in result["shortfalls"] if resource in s or "not in the cluster" in s
                                           or "NotReady" in s or "cordoned" in s)
            rows.append({"check": "gpu pool capacity", "target": "%s (%s)" % (pool["name"], resource),
                         "status": status, "detail": detail.rstrip(": ")})
    return rows
