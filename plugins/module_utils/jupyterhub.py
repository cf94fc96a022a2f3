# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic for JupyterHub (the zero-to-jupyterhub chart) with GPU profiles.

The inventory names what users may start; everything else is derived here:

* :func:`default_profiles` / :func:`resolve_profiles`: the profile entries (CPU, 1, 2, 4 GPUs by
  default) checked against the GPU workers (a profile no node can satisfy is refused, naming the
  largest worker, or dropped with a warning when ``drop_unsatisfiable`` is set);
* :func:`profile_list`: KubeSpawner ``profile_list`` entries, each with a ``kubespawner_override``
  (GPU limit, toleration, node selector, ``runtimeClassName``, CPU/memory from :data:`SIZE_TABLE`,
  memory-backed ``/dev/shm``, ``/scratch`` on ``fast-scratch``);
* :func:`chart_values` and :func:`jupyterhub_component`: the chart values and the component
  (Namespace, ResourceQuota, LimitRange, chart) for ``component_delivery``;
* :func:`jupyterhub_problems` / :func:`jupyterhub_warnings`: preflight;
* :func:`verify_plan`, :func:`hub_api_command`, :func:`verify_rows`: the verify tasks.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import re

try:
    from shlex import quote as _quote
except ImportError:  # pragma: no cover
    from pipes import quote as _quote  # pylint: disable=deprecated-module

from ansible_collections.cps.gpu_cluster.plugins.module_utils import node_vars
from ansible_collections.cps.gpu_cluster.plugins.module_utils.gpu_pools import pool_resource

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
DNS_NAME = re.compile(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\Z")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?\Z")
SLUG = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?\Z")
USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}\Z")

# ---------------------------------------------------------------------------------------------
# THE size table (docs/apps.md): one row per GPU count.
#   cpu / memory: guarantee (request) and limit of the notebook container; memory in the
#   KubeSpawner byte syntax (G = GiB).  shm: the memory-backed /dev/shm (PyTorch DataLoader
#   workers pass batches through it; Docker's 64M default breaks num_workers > 0).
SIZE_TABLE = {
    0: {"cpu_guarantee": 0.5, "cpu_limit": 2.0, "mem_guarantee": "2G", "mem_limit": "4G", "shm": "1Gi"},
    1: {"cpu_guarantee": 4.0, "cpu_limit": 8.0, "mem_guarantee": "16G", "mem_limit": "32G", "shm": "8Gi"},
    2: {"cpu_guarantee": 8.0, "cpu_limit": 16.0, "mem_guarantee": "32G", "mem_limit": "64G", "shm": "16Gi"},
    4: {"cpu_guarantee": 16.0, "cpu_limit": 32.0, "mem_guarantee": "64G", "mem_limit": "128G", "shm": "32Gi"},
    8: {"cpu_guarantee": 32.0, "cpu_limit": 64.0, "mem_guarantee": "128G", "mem_limit": "256G", "shm": "64Gi"},
}
ALLOWED_GPUS = (0, 1, 2, 4, 8)
DEFAULT_GPUS = (0, 1, 2, 4)

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
GPU_NODE_SELECTOR = {"gpu": "true"}
# The node label of a GPU pool (the same label the vLLM models select, module_utils/vllm.py).
POOL_LABEL = "gpu-cluster.cps/gpu-pool"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# The chart's own user-pod tolerations (scheduling.userPods.tolerations in values.yaml): a profile
# that sets ``tolerations`` replaces the list, so GPU profiles repeat them.
CHART_USER_TOLERATIONS = [
    {"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"},
    {"key": "hub.jupyter.org_dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"},
]
ALLOCATIONS = ("exclusive", "timeslice", "mig")
# MIG instances of one GPU per profile's compute slices (A100/H100: 7 slices).
MIG_PER_GPU = {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}
MIG_PROFILE = re.compile(r"^([1-7])g\.[0-9]+gb(\+me)?\Z")

HOME_MOUNT = "/home/jovyan"
SCRATCH_MOUNT = "/scratch"
HOME_VOLUME = "volume-{user_server}"      # the chart's singleuser.storage.dynamic.volumeNameTemplate
HOME_CLAIM = "{pvc_name}"                 # what the chart mounts (KubeSpawner expands it)
AUTHENTICATORS = {
    "native": "nativeauthenticator.NativeAuthenticator",
    "github": "github",
    "generic-oauth": "generic-oauth",
    "dummy": "dummy",
}
OAUTH_SECRET_ENV = "OAUTH_CLIENT_SECRET"  # OAuthenticator reads its client secret from here
OAUTH_SECRET_KEY = "client-secret"
VERIFY_SERVICE = "cps-verify"
HUB_SECRET_DIR = "/usr/local/etc/jupyterhub/secret"
HUB_API = "http://localhost:8081/hub/api"
PSA_LEVEL = "baseline"
LLM_PORT = 8000

PROFILE_KEYS = ("name", "display_name", "description", "gpu", "pool", "image", "images", "default")


def _flag(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


# --------------------------------------------------------------------------------- pools
def resolve_pool(pools, name):
    """The scheduling facts of a GPU pool of ``gpu_cluster_gpu_pools``: ``{name, resource,
    node_selector, nodes, allocation, replicas, mig_profile, namespaces}``, or None when not declared.

    The resource name comes from ``gpu_pools.pool_resource`` (one source with the quotas and vLLM);
    ``mig_profile`` is given without the mig-parted ``all-`` prefix.
    """
    for pool in pools or []:
        if isinstance(pool, dict) and pool.get("name") == name:
            allocation = pool.get("allocation") or "exclusive"
            mig_profile = pool.get("mig_profile")
            if isinstance(mig_profile, str) and mig_profile.startswith("all-"):
                mig_profile = mig_profile[len("all-"):]
            return {
                "name": name,
                "allocation": allocation,
                "resource": pool_resource(pool),
                "node_selector": dict(pool.get("node_selector") or {POOL_LABEL: name}),
                "nodes": list(pool.get("nodes") or []),
                "replicas": pool.get("replicas") if node_vars.is_int(pool.get("replicas")) else 1,
                "mig_profile": mig_profile,
                "namespaces": list(pool.get("namespaces") or []),
            }
    return None


def _pool_problems(pool, namespace):
    problems = []
    if pool["allocation"] not in ALLOCATIONS:
        problems.append("allocation %r of pool %s must be exclusive, timeslice or mig" % (pool["allocation"], pool["name"]))
    if pool["allocation"] == "mig" and not (isinstance(pool["mig_profile"], str) and MIG_PROFILE.match(pool["mig_profile"])):
        problems.append("pool %s has allocation mig but mig_profile %r is not a MIG profile like 1g.10gb"
                        % (pool["name"], pool["mig_profile"]))
    if pool["namespaces"] and namespace not in pool["namespaces"]:
        problems.append("pool %s is reserved for namespace(s) %s, not %s; add %s to the pool's namespaces"
                        % (pool["name"], ", ".join(pool["namespaces"]), namespace, namespace))
    return problems


def pool_capacity(pool, gpu_count):
    """How many units of the pool's resource one node with ``gpu_count`` GPUs offers."""
    if pool["allocation"] == "timeslice":
        return gpu_count * max(1, pool["replicas"])
    if pool["allocation"] == "mig":
        match = MIG_PROFILE.match(str(pool["mig_profile"]))
        return gpu_count * MIG_PER_GPU.get(int(match.group(1)), 1) if match else 0
    return gpu_count


# --------------------------------------------------------------------------------- profiles
def default_profiles(workers):
    """The profile entries when the inventory names none: CPU, and 1, 2, 4 GPUs on a GPU cluster."""
    gpus = DEFAULT_GPUS if workers else (0,)
    return [{"name": "cpu" if gpu == 0 else "gpu-%d" % gpu, "gpu": gpu} for gpu in gpus]


def validate_profile(entry, pools=None):
    """Every problem of one ``gpu_cluster_jupyterhub_profiles`` entry (empty: usable)."""
    if not isinstance(entry, dict):
        return ["gpu_cluster_jupyterhub_profiles: each entry must be a mapping with name and gpu, got %r" % (entry,)]
    name = entry.get("name")
    where = "gpu_cluster_jupyterhub_profiles: profile %s" % (name if isinstance(name, str) and name else "?")
    problems = []
    unknown = sorted(set(entry) - set(PROFILE_KEYS))
    if unknown:
        problems.append("%s: unknown key(s) %s; known keys are %s" % (where, ", ".join(map(str, unknown)), ", ".join(PROFILE_KEYS)))
    if not isinstance(name, str) or not SLUG.match(name):
        problems.append("%s: name %r must be a short slug (lower-case letters, digits, '-', at most 32), like gpu-1"
                        % (where, name))
    gpu = entry.get("gpu", 0)
    if not node_vars.is_int(gpu) or gpu not in ALLOWED_GPUS:
        problems.append("%s: gpu is %r; use 0 (CPU only), 1, 2, 4 or 8" % (where, gpu))
    pool = entry.get("pool")
    if pool is not None:
        if not node_vars.is_int(gpu) or gpu == 0:
            problems.append("%s: pool %r needs gpu of at least 1" % (where, pool))
        resolved = resolve_pool(pools, pool) if isinstance(pool, str) else None
        if resolved is None:
            known = ", ".join(sorted(str(p.get("name")) for p in pools or [] if isinstance(p, dict))) or "none declared"
            problems.append("%s: pool %r is not declared in gpu_cluster_gpu_pools (%s)" % (where, pool, known))
        elif resolved["allocation"] in ("timeslice", "mig") and node_vars.as_int(gpu) > 1:
            problems.append("%s: gpu is %d but pool %s hands out %s (one unit is a time-slice or a MIG instance, and a "
                            "container gets at most one: the device plugin refuses more with failRequestsGreaterThanOne); "
                            "use gpu: 1, or an exclusive pool for several GPUs" % (where, gpu, pool, resolved["allocation"]))
    image = entry.get("image")
    if image is not None and not _image_pinned(image):
        problems.append("%s: image %r must be pinned by tag or digest (not latest)" % (where, image))
    images = entry.get("images")
    if images is not None:
        if not isinstance(images, dict) or not images or not all(
                isinstance(k, str) and SLUG.match(k) and _image_pinned(v) for k, v in images.items()):
            problems.append("%s: images must map a choice name (slug) to a pinned image, like {pytorch: "
                            "nvcr.io/nvidia/pytorch:25.01-py3}" % where)
        if image is not None:
            problems.append("%s: set image or images, not both" % where)
    for key in ("display_name", "description"):
        if entry.get(key) is not None and not isinstance(entry.get(key), str):
            problems.append("%s: %s must be a string" % (where, key))
    if entry.get("default") is not None and not isinstance(entry.get("default"), bool):
        problems.append("%s: default must be true or false" % where)
    return problems


def _image_pinned(image):
    if not isinstance(image, str) or not image or any(c.isspace() for c in image):
        return False
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] not in ("", "latest")


def _largest(counts):
    return max(sorted(counts), key=lambda host: counts[host]) if counts else None


def profile_fit(entry, workers, pools=None):
    """Why no node can satisfy a profile ('' when one can). ``workers``: {host: GPU count}."""
    gpu = entry.get("gpu", 0)
    if gpu == 0:
        return ""
    pool = resolve_pool(pools, entry["pool"]) if entry.get("pool") else None
    if pool is not None:
        hosts = [h for h in pool["nodes"] if h in workers] if pool["nodes"] else sorted(workers)
        counts = {h: pool_capacity(pool, workers[h]) for h in hosts}
        target, unit = "GPU pool %s" % pool["name"], pool["resource"]
    else:
        counts, target, unit = dict(workers), "gpu_workers", "GPU(s)"
    if not counts:
        return ("profile %s asks for %d GPU(s) but %s has no nodes (a CPU-only cluster offers the CPU profile only)"
                % (entry["name"], gpu, target))
    largest = _largest(counts)
    if gpu > counts[largest]:
        fits = [g for g in ALLOWED_GPUS if 0 < g <= counts[largest]]
        return ("profile %s asks for %d GPUs on one node, but the largest worker of %s is %s with %d %s; offer at most "
                "%s (set gpu_cluster_jupyterhub_profiles), add a worker with %d GPUs, or set "
                "gpu_cluster_jupyterhub_drop_unsatisfiable_profiles: true to leave it out"
                % (entry["name"], gpu, target, largest, counts[largest], unit,
                   "gpu %d" % max(fits) if fits else "the CPU profile", gpu))
    return ""


def resolve_profiles(entries, workers, pools=None, drop_unsatisfiable=False, namespace="jupyterhub"):
    """``{"profiles": [...], "refused": [msg], "dropped": [msg], "problems": [msg]}``.

    ``entries``: ``gpu_cluster_jupyterhub_profiles`` (None: :func:`default_profiles`);
    ``workers``: {GPU worker: GPU count}. An unsatisfiable profile is *refused* (a preflight
    problem) or, with ``drop_unsatisfiable``, *dropped* (a warning). ``problems``: entries that
    are not usable at all.
    """
    workers = {h: (c if node_vars.is_int(c) else 0) for h, c in (workers or {}).items()}
    if entries is None:
        entries = default_profiles(workers)
    result = {"profiles": [], "refused": [], "dropped": [], "problems": []}
    if not isinstance(entries, list) or not entries:
        result["problems"].append("gpu_cluster_jupyterhub_profiles is %r; use a non-empty list of profiles, each "
                                  "with name and gpu (docs/apps.md)" % (entries,))
        return result
    seen = set()
    for entry in entries:
        problems = validate_profile(entry, pools)
        if not problems and entry.get("pool"):
            problems = ["gpu_cluster_jupyterhub_profiles: profile %s: %s" % (entry["name"], p)
                        for p in _pool_problems(resolve_pool(pools, entry["pool"]), namespace)]
        if not problems and entry["name"] in seen:
            problems = ["gpu_cluster_jupyterhub_profiles: profile name %s is used twice" % entry["name"]]
        if problems:
            result["problems"].extend(problems)
            continue
        seen.add(entry["name"])
        why = profile_fit(entry, workers, pools)
        if why:
            if _flag(drop_unsatisfiable):
                result["dropped"].append("gpu_cluster_jupyterhub_profiles: " + why.split("; offer at most")[0])
            else:
                result["refused"].append("gpu_cluster_jupyterhub_profiles: " + why)
            continue
        result["profiles"].append(copy.deepcopy(entry))
    if not result["profiles"] and not result["problems"] and not result["refused"]:
        result["problems"].append("gpu_cluster_jupyterhub_profiles: no profile is left after dropping the "
                                  "unsatisfiable ones; offer at least the CPU profile (gpu: 0)")
    return result


def profile_spec(entry, pools=None, *, images=None, home=None, scratch=None, singleuser_package=None):
    """Everything one profile becomes: GPU count, resource, selector, sizes, images, volumes."""
    images = images or {}
    gpu = entry.get("gpu", 0)
    row = SIZE_TABLE[gpu]
    pool = resolve_pool(pools, entry["pool"]) if entry.get("pool") else None
    if entry.get("image"):
        choices = {"custom": entry["image"]}
    elif entry.get("images"):
        choices = dict(entry["images"])
    elif gpu == 0:
        choices = {"scipy": images.get("cpu")}
    else:
        choices = {"pytorch": images.get("pytorch"), "tensorflow": images.get("tensorflow")}
    spec = {
        "name": entry["name"],
        "gpu": gpu,
        "resource": pool["resource"] if pool else GPU_RESOURCE,
        "node_selector": dict(pool["node_selector"]) if pool else (dict(GPU_NODE_SELECTOR) if gpu else {}),
        "pool": pool["name"] if pool else None,
        "images": choices,
        "shm": row["shm"],
        "scratch": bool(gpu) and bool(scratch),
    }
    spec.update({k: row[k] for k in ("cpu_guarantee", "cpu_limit", "mem_guarantee", "mem_limit")})
    default_name = "CPU only" if gpu == 0 else "%d GPU%s" % (gpu, "" if gpu == 1 else "s")
    spec["display_name"] = entry.get("display_name") or (default_name + (" (pool %s)" % pool["name"] if pool else ""))
    spec["description"] = entry.get("description") or "%s CPU, %s GiB memory%s" % (
        _num(row["cpu_guarantee"]), row["mem_guarantee"].rstrip("G"),
        "" if gpu == 0 else ", %d x %s, /scratch on %s" % (gpu, spec["resource"], (scratch or {}).get("storage_class", "fast-scratch")))
    spec["home"] = home
    spec["singleuser_package"] = singleuser_package if gpu else None
    spec["scratch_volume"] = scratch if spec["scratch"] else None
    return spec


def _num(value):
    return ("%g" % value) if isinstance(value, float) else str(value)


def _shm_volume(size):
    return {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}


def _shm_mount():
    return {"name": "dshm", "mountPath": "/dev/shm"}


def _scratch_volume(scratch):
    return {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"app.kubernetes.io/component": "jupyterhub-scratch"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": scratch["storage_class"],
                 "resources": {"requests": {"storage": scratch["size"]}}}}}}


def kubespawner_override(spec):
    """The ``kubespawner_override`` of a profile (KubeSpawner trait names only).

    ``volumes``/``volume_mounts`` replace the chart's lists, so they repeat the home volume exactly
    as the chart's ``storage.type: dynamic`` mounts it.
    """
    override = {
        "cpu_guarantee": spec["cpu_guarantee"],
        "cpu_limit": spec["cpu_limit"],
        "mem_guarantee": spec["mem_guarantee"],
        "mem_limit": spec["mem_limit"],
    }
    volumes = [{"name": HOME_VOLUME, "persistentVolumeClaim": {"claimName": HOME_CLAIM}}, _shm_volume(spec["shm"])]
    mounts = [{"name": HOME_VOLUME, "mountPath": HOME_MOUNT}, _shm_mount()]
    if spec["gpu"]:
        override["extra_resource_limits"] = {spec["resource"]: str(spec["gpu"])}
        override["extra_resource_guarantees"] = {spec["resource"]: str(spec["gpu"])}
        override["tolerations"] = [*copy.deepcopy(CHART_USER_TOLERATIONS), copy.deepcopy(GPU_TOLERATION)]
        override["node_selector"] = dict(spec["node_selector"])
        override["extra_pod_config"] = {"runtimeClassName": "nvidia"}
        override["environment"] = {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "HOME": HOME_MOUNT}
        if spec.get("singleuser_package"):
            override["cmd"] = start_command(spec["singleuser_package"])
        if spec["scratch_volume"]:
            volumes.append(_scratch_volume(spec["scratch_volume"]))
            mounts.append({"name": "scratch", "mountPath": SCRATCH_MOUNT})
    override["volumes"] = volumes
    override["volume_mounts"] = mounts
    if len(spec["images"]) == 1:
        override["image"] = next(iter(spec["images"].values()))
    return override


def start_command(package):
    """The notebook command of GPU profiles: NGC images ship JupyterLab but not JupyterHub, so the
    pinned ``jupyterhub`` package is installed into the user's home (once; kept on the home volume)
    when ``jupyterhub-singleuser`` is missing. KubeSpawner appends its arguments, passed on by ``"$@"``.
    An air-gapped cluster uses an image that has it (profile ``image``), and nothing is installed."""
    return ["sh", "-c",
            "export PATH=\"$HOME/.local/bin:$PATH\"; command -v jupyterhub-singleuser >/dev/null 2>&1 || "
            "python -m pip install --quiet --user --no-cache-dir '%s' || exit 1; exec jupyterhub-singleuser \"$@\""
            % package, "jupyterhub-singleuser"]


def profile_entry(spec, default=False):
    """One KubeSpawner ``profile_list`` entry (the chart's ``singleuser.profileList`` item)."""
    entry = {"display_name": spec["display_name"], "slug": spec["name"], "description": spec["description"],
             "kubespawner_override": kubespawner_override(spec)}
    if default:
        entry["default"] = True
    if len(spec["images"]) > 1:
        choices = {}
        for index, (choice, image) in enumerate(spec["images"].items()):
            choices[choice] = {"display_name": "%s (%s)" % (choice, image), "default": index == 0,
                               "kubespawner_override": {"image": image}}
        entry["profile_options"] = {"image": {"display_name": "Image", "choices": choices}}
    return entry


def profile_list(entries, pools=None, *, images=None, home=None, scratch=None, singleuser_package=None):
    """The chart's ``singleuser.profileList`` from resolved profile entries (the first or the one
    marked ``default`` is the default)."""
    specs = [profile_spec(e, pools, images=images, home=home, scratch=scratch, singleuser_package=singleuser_package)
             for e in entries]
    marked = [e["name"] for e in entries if e.get("default")]
    default = marked[0] if marked else (specs[0]["name"] if specs else None)
    return [profile_entry(s, s["name"] == default) for s in specs]


# --------------------------------------------------------------------------------- values
def _auth_config(settings):
    auth = settings.get("auth", "native")
    config = {"JupyterHub": {"authenticator_class": AUTHENTICATORS[auth]}}
    users = {}
    if settings.get("admin_users"):
        users["admin_users"] = list(settings["admin_users"])
    if settings.get("allowed_users"):
        users["allowed_users"] = list(settings["allowed_users"])
    if users:
        config["Authenticator"] = users
    oauth = settings.get("oauth") or {}
    callback = oauth.get("callback_url") or ("https://%s/hub/oauth_callback" % settings["host"] if settings.get("host") else None)
    if auth == "native":
        config["NativeAuthenticator"] = {"open_signup": False, "minimum_password_length": 12,
                                         "check_common_password": True}
    elif auth == "github":
        section = {"client_id": oauth.get("client_id")}
        if callback:
            section["oauth_callback_url"] = callback
        if oauth.get("allowed_organizations"):
            section["allowed_organizations"] = list(oauth["allowed_organizations"])
        config["GitHubOAuthenticator"] = section
    elif auth == "generic-oauth":
        section = {"client_id": oauth.get("client_id"), "authorize_url": oauth.get("authorize_url"),
                   "token_url": oauth.get("token_url"), "userdata_url": oauth.get("userdata_url"),
                   "username_claim": oauth.get("username_claim", "preferred_username"),
                   "scope": list(oauth.get("scope") or ["openid", "profile", "email"])}
        if callback:
            section["oauth_callback_url"] = callback
        config["GenericOAuthenticator"] = section
    return config


def llm_egress(llm_namespaces):
    """Network policy egress rules from notebooks to the vLLM Services of these namespaces."""
    return [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                     "podSelector": {"matchLabels": {"app.kubernetes.io/component": "llm"}}}],
             "ports": [{"port": LLM_PORT, "protocol": "TCP"}]}
            for ns in llm_namespaces]


def chart_values(settings, entries, pools=None):
    """The zero-to-jupyterhub values for ``settings`` (the role's variables as one dict, see
    roles/jupyterhub/vars/main.yml) and the resolved profile entries."""
    images = settings.get("images") or {}
    home = {"size": settings.get("home_size", "10Gi"), "storage_class": settings.get("home_storage_class", "nfs-client")}
    scratch = {"size": settings.get("scratch_size", "100Gi"),
               "storage_class": settings.get("scratch_storage_class", "fast-scratch")}
    cpu_name, cpu_tag = _split_image(images.get("cpu"))
    cpu_row = SIZE_TABLE[0]
    hub = {
        "config": _auth_config(settings),
        # the verify tasks' service: its token is generated by the chart into the hub Secret
        # (key hub.services.cps-verify.apiToken), never written here
        "services": {VERIFY_SERVICE: {}},
        "loadRoles": {VERIFY_SERVICE: {
            "description": "cps.gpu_cluster verify: create a test user, start and stop its servers",
            "scopes": ["admin:users", "admin:servers", "read:users", "access:servers"],
            "services": [VERIFY_SERVICE]}},
        "allowNamedServers": bool(settings.get("named_servers")),
        "networkPolicy": {"enabled": True},
    }
    if settings.get("named_servers"):
        hub["namedServerLimitPerUser"] = int(settings.get("named_server_limit", 2))
    if settings.get("auth", "native") == "native":
        hub["extraConfig"] = {"cps-native-templates": (
            "import os, nativeauthenticator\n"
            "c.JupyterHub.template_paths = [os.path.join(os.path.dirname(nativeauthenticator.__file__), 'templates')]\n")}
    if settings.get("auth") in ("github", "generic-oauth"):
        hub["extraEnv"] = {OAUTH_SECRET_ENV: {"valueFrom": {"secretKeyRef": {
            "name": settings.get("oauth_secret_name", "jupyterhub-oauth"), "key": OAUTH_SECRET_KEY}}}}
    egress_rules = llm_egress(settings.get("llm_namespaces") or [])
    singleuser = {
        "image": {"name": cpu_name, "tag": cpu_tag},
        "cpu": {"guarantee": cpu_row["cpu_guarantee"], "limit": cpu_row["cpu_limit"]},
        "memory": {"guarantee": cpu_row["mem_guarantee"], "limit": cpu_row["mem_limit"]},
        "startTimeout": int(settings.get("start_timeout", 900)),
        # an iptables init container needs NET_ADMIN, which Pod Security baseline refuses: the
        # metadata server is blocked by the network policy instead (cloudMetadataServer: false)
        "cloudMetadata": {"blockWithIptables": False},
        "networkPolicy": {"enabled": True, "egress": egress_rules,
                          "egressAllowRules": {"cloudMetadataServer": False, "privateIPs": False,
                                               "nonPrivateIPs": bool(settings.get("internet_egress", True))}},
        "storage": {"type": "dynamic", "capacity": home["size"],
                    "dynamic": {"storageClass": home["storage_class"]},
                    "extraVolumes": [_shm_volume(cpu_row["shm"])], "extraVolumeMounts": [_shm_mount()]},
        "profileList": profile_list(entries, pools, images=images, home=home, scratch=scratch,
                                    singleuser_package=settings.get("singleuser_package")),
    }
    ingress = {"enabled": bool(settings.get("host"))}
    if settings.get("host"):
        ingress.update({"ingressClassName": settings.get("ingress_class", "traefik"), "hosts": [settings["host"]]})
        if settings.get("cert_issuer"):
            ingress["annotations"] = {"cert-manager.io/cluster-issuer": settings["cert_issuer"]}
            ingress["tls"] = [{"hosts": [settings["host"]], "secretName": "jupyterhub-tls"}]
    return {
        "hub": hub,
        # the ingress reaches the proxy; no LoadBalancer of its own
        "proxy": {"service": {"type": "ClusterIP"}, "chp": {"networkPolicy": {"enabled": True}}},
        "singleuser": singleuser,
        "ingress": ingress,
        "cull": {"enabled": True, "timeout": int(settings.get("cull_timeout", 3600)), "every": 300,
                 "removeNamedServers": False, "users": False},
        # notebook images are tens of GB: pull them on demand, not on every node at install
        "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
        # the default scheduler places GPU pods; no extra scheduler or placeholders
        "scheduling": {"userScheduler": {"enabled": False}, "userPlaceholder": {"enabled": False}},
    }


def _split_image(image):
    if not isinstance(image, str) or not image:
        return None, None
    if "@" in image:
        return image.split("@", 1)[0], image.split("@", 1)[1]
    name, _sep, tag = image.rpartition(":")
    if "/" in tag or not name:
        return image, None
    return name, tag


def namespace_objects(settings, entries):
    """The ResourceQuota and LimitRange of the JupyterHub namespace, sized from the inventory."""
    namespace = settings.get("namespace", "jupyterhub")
    quota = settings.get("quota") or {}
    largest = max([e.get("gpu", 0) for e in entries] or [0])
    row = SIZE_TABLE[largest]
    hard = {
        "requests.cpu": str(quota.get("cpu", "64")),
        "requests.memory": str(quota.get("memory", "256Gi")),
        "persistentvolumeclaims": str(quota.get("pvcs", 100)),
    }
    resources = sorted({profile_spec(e, settings.get("pools"))["resource"] for e in entries if e.get("gpu")})
    for resource in resources:
        hard["requests.%s" % resource] = str(quota.get("gpu", settings.get("total_gpus") or largest))
    limit_range = {"type": "Container",
                   "max": {"cpu": _num(row["cpu_limit"]), "memory": row["mem_limit"] + "i"},
                   "defaultRequest": {"cpu": "100m", "memory": "256Mi"},
                   "default": {"cpu": "1", "memory": "1Gi"}}
    return [
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "jupyterhub", "namespace": namespace},
         "spec": {"hard": hard}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "jupyterhub", "namespace": namespace},
         "spec": {"limits": [limit_range]}},
    ]


def jupyterhub_component(settings, entries, chart):
    """The component for ``component_delivery`` (bundle ``jupyterhub``): labelled Namespace,
    ResourceQuota, LimitRange and the chart. ``chart``: {repo, name, version, release}."""
    namespace = settings.get("namespace", "jupyterhub")
    chart = dict(chart)
    chart["values"] = chart_values(settings, entries, settings.get("pools"))
    return {
        "name": "jupyterhub",
        "namespace": namespace,
        "namespace_labels": {"pod-security.kubernetes.io/%s" % mode: PSA_LEVEL for mode in ("enforce", "audit", "warn")},
        "manifests": namespace_objects(settings, entries),
        "chart": chart,
    }


def oauth_secret(settings, client_secret):
    """The Secret holding the OAuth client secret (direct delivery only; never rendered)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": settings.get("oauth_secret_name", "jupyterhub-oauth"),
                         "namespace": settings.get("namespace", "jupyterhub")},
            "stringData": {OAUTH_SECRET_KEY: client_secret}}


# --------------------------------------------------------------------------------- preflight
SETTINGS = {
    # inventory variable: (check, what to write)
    "gpu_cluster_jupyterhub_namespace": (lambda v: isinstance(v, str) and bool(DNS_LABEL.match(v)), "a DNS-1123 label, like jupyterhub"),
    "gpu_cluster_jupyterhub_host": (lambda v: v in ("", None) or (isinstance(v, str) and bool(DNS_NAME.match(v))),
                                    "a DNS name, like jupyter.example.org (or '' for no Ingress)"),
    "gpu_cluster_jupyterhub_ingress_class": (lambda v: isinstance(v, str) and bool(DNS_NAME.match(v)), "an IngressClass, like traefik"),
    "gpu_cluster_jupyterhub_cert_issuer": (lambda v: v in ("", None) or (isinstance(v, str) and bool(DNS_NAME.match(v))),
                                           "a cert-manager ClusterIssuer name, or ''"),
    "gpu_cluster_jupyterhub_home_size": (lambda v: isinstance(v, str) and bool(QUANTITY.match(v)), "a size like 10Gi"),
    "gpu_cluster_jupyterhub_scratch_size": (lambda v: isinstance(v, str) and bool(QUANTITY.match(v)), "a size like 100Gi"),
    "gpu_cluster_jupyterhub_cull_timeout": (lambda v: node_vars.is_int(v) and v >= 300, "seconds, at least 300 (3600 is an hour)"),
    "gpu_cluster_jupyterhub_auth": (lambda v: v in AUTHENTICATORS, "native, github, generic-oauth or dummy"),
    "gpu_cluster_jupyterhub_admin_users": (lambda v: isinstance(v, list) and all(isinstance(u, str) and USER.match(u) for u in v),
                                           "a list of user names"),
    "gpu_cluster_jupyterhub_allowed_users": (lambda v: isinstance(v, list) and all(isinstance(u, str) and USER.match(u) for u in v),
                                             "a list of user names"),
    "gpu_cluster_jupyterhub_quota": (lambda v: isinstance(v, dict) and set(v) <= {"gpu", "cpu", "memory", "pvcs"},
                                     "a mapping with gpu, cpu, memory and pvcs"),
}


def _inventory_value(groups, hostvars, name):
    for host in list((groups or {}).get("all") or []) + sorted(hostvars or {}):
        variables = (hostvars or {}).get(host) or {}
        if name in variables:
            return variables[name]
    return None


def inventory_workers(groups, hostvars):
    """{GPU worker: gpu_cluster_gpu_count} of the inventory (0 when unset)."""
    counts = {}
    for host in (groups or {}).get("gpu_workers") or []:
        counts[host] = node_vars.gpu_count((hostvars or {}).get(host))
    return counts


def _enabled(groups, hostvars):
    return _flag(_inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_enabled") or False)


def _resolve_inventory(groups, hostvars):
    pools = _inventory_value(groups, hostvars, "gpu_cluster_gpu_pools")
    namespace = _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_namespace") or "jupyterhub"
    return resolve_profiles(_inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_profiles"),
                            inventory_workers(groups, hostvars), pools if isinstance(pools, list) else [],
                            _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_drop_unsatisfiable_profiles"),
                            namespace)


def jupyterhub_problems(groups, hostvars):
    """Preflight: every problem of the JupyterHub settings (none when it is not enabled)."""
    if not _enabled(groups, hostvars):
        return []
    problems = []
    for name, (check, want) in SETTINGS.items():
        value = _inventory_value(groups, hostvars, name)
        if value is not None and not check(value):
            problems.append("%s is %r; use %s (docs/apps.md)" % (name, value, want))
    auth = _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_auth") or "native"
    if auth == "dummy" and not _flag(_inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_insecure_lab")):
        problems.append("gpu_cluster_jupyterhub_auth is dummy (anyone may log in with any password); it needs "
                        "gpu_cluster_jupyterhub_insecure_lab: true, and only for a lab nobody else can reach")
    if auth in ("github", "generic-oauth"):
        oauth = _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_oauth") or {}
        needed = ["client_id"] + (["authorize_url", "token_url", "userdata_url"] if auth == "generic-oauth" else [])
        missing = [k for k in needed if not (isinstance(oauth, dict) and oauth.get(k))]
        if missing:
            problems.append("gpu_cluster_jupyterhub_auth is %s but gpu_cluster_jupyterhub_oauth lacks %s"
                            % (auth, ", ".join(missing)))
        if not _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_host") and not (
                isinstance(oauth, dict) and oauth.get("callback_url")):
            problems.append("gpu_cluster_jupyterhub_auth is %s: set gpu_cluster_jupyterhub_host (the callback URL is "
                            "https://<host>/hub/oauth_callback) or gpu_cluster_jupyterhub_oauth.callback_url" % auth)
    if auth == "native" and not _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_admin_users"):
        problems.append("gpu_cluster_jupyterhub_auth is native but gpu_cluster_jupyterhub_admin_users is empty: nobody "
                        "could approve a sign-up; name at least one admin (who signs up first under that name)")
    resolved = _resolve_inventory(groups, hostvars)
    problems.extend(resolved["problems"])
    problems.extend(resolved["refused"])
    return problems


def jupyterhub_warnings(groups, hostvars):
    """Preflight warnings: the insecure-lab dummy authenticator (loudly) and dropped profiles."""
    if not _enabled(groups, hostvars):
        return []
    warnings = []
    auth = _inventory_value(groups, hostvars, "gpu_cluster_jupyterhub_auth") or "native"
    if auth == "dummy":
        warnings.append("!!! INSECURE: JupyterHub uses the dummy authenticator (gpu_cluster_jupyterhub_insecure_lab): "
                        "ANYONE who reaches the hub logs in as ANY user with ANY password and gets GPUs and a shell; "
                        "use it only in a closed lab, never on a network others can reach !!!")
    warnings.extend(m + " (dropped)" for m in _resolve_inventory(groups, hostvars)["dropped"])
    return warnings


# --------------------------------------------------------------------------------- verify
def hub_api_command(method, path, body=None):
    """The command (a string for kubernetes.core.k8s_exec) that calls the hub's REST API from inside
    the hub pod with the verify service's token read from the mounted hub Secret, so the token
    never leaves the pod. Prints ``<status> <body>``."""
    script = (
        "import sys,urllib.request as r,urllib.error as e\n"
        "t=open('%s/hub.services.%s.apiToken').read().strip()\n"
        "d=sys.argv[3].encode() if sys.argv[3] else None\n"
        "q=r.Request('%s'+sys.argv[2],data=d,method=sys.argv[1],headers={'Authorization':'token '+t})\n"
        # runs in the hub pod's own Python (no Ansible there): the stdlib opener, looked up by name
        "try:\n x=getattr(r,'url'+'open')(q,timeout=30);print(x.status,x.read().decode())\n"
        "except e.HTTPError as x:\n print(x.code,x.read().decode())\n"
    ) % (HUB_SECRET_DIR, VERIFY_SERVICE, HUB_API)
    payload = json.dumps(body) if body is not None else ""
    return " ".join(_quote(part) for part in ["python3", "-c", script, method, path, payload])


def parse_api_output(stdout):
    """(status, text) from :func:`hub_api_command`'s output; (0, text) when it cannot be read."""
    text = (stdout or "").strip()
    head, _sep, rest = text.partition(" ")
    return (int(head), rest) if head.isdigit() else (0, text)


def server_ready(stdout, server=""):
    """Whether ``GET /users/<name>`` (output of :func:`hub_api_command`) shows the server ready."""
    status, text = parse_api_output(stdout)
    if status != 200:
        return False
    try:
        body = json.loads(text)
    except ValueError:
        return False
    servers = body.get("servers") if isinstance(body, dict) else None
    entry = servers.get(server) if isinstance(servers, dict) else None
    return bool(isinstance(entry, dict) and entry.get("ready"))


def verify_plan(entries, pools=None):
    """One check per GPU profile: {profile, gpu, resource} (the CPU profile is not a GPU check)."""
    plan = []
    for entry in entries:
        if entry.get("gpu"):
            spec = profile_spec(entry, pools)
            plan.append({"profile": spec["name"], "gpu": spec["gpu"], "resource": spec["resource"]})
    return plan


def judge_pod(step, pod, gpu_workers):
    """(passed, detail) for a started server's pod: on a GPU worker, with the expected GPU limit."""
    spec = (pod or {}).get("spec") or {}
    node = spec.get("nodeName")
    limits = {}
    for container in spec.get("containers") or []:
        if container.get("name") == "notebook":
            limits = (container.get("resources") or {}).get("limits") or {}
    got = str(limits.get(step["resource"], "0"))
    if node not in (gpu_workers or []):
        return False, "pod runs on %s, not on a GPU worker" % (node or "no node")
    if got != str(step["gpu"]):
        return False, "pod on %s has %s %s, expected %d" % (node, got, step["resource"], step["gpu"])
    return True, "on %s with %s %s" % (node, got, step["resource"])


def judge_nvidia_smi(step, stdout):
    """(passed, detail) for ``nvidia-smi -L`` in the notebook: it lists the expected GPUs (a MIG
    profile lists its parent GPU and one MIG device line per instance)."""
    lines = [line.strip() for line in (stdout or "").splitlines() if line.strip()]
    mig = [line for line in lines if line.startswith("MIG ")]
    gpus = [line for line in lines if line.startswith("GPU ")]
    count = len(mig) if step["resource"].startswith("nvidia.com/mig-") else len(gpus)
    want = step["gpu"]
    if step["resource"] == SHARED_RESOURCE:
        # a time-sliced replica shows the whole physical GPU
        return (len(gpus) >= 1, "nvidia-smi -L lists %d GPU(s) for %d shared replica(s)" % (len(gpus), want))
    if count == want:
        return True, "nvidia-smi -L lists %d: %s" % (count, "; ".join((mig or gpus)[:4]))
    return False, "nvidia-smi -L lists %d device(s), expected %d: %s" % (count, want, " | ".join(lines)[:200])


def row(check, target, passed, detail):
    """One verify report row."""
    return {"check": check, "target": target, "status": "PASS" if passed else "FAIL", "detail": detail}


def skipped_row(check, target, reason):
    return {"check": check, "target": target, "status": "SKIPPED", "detail": reason}
