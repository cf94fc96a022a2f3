# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers for the k3s roles: token, config.yaml, interfaces, checksums, versions,
the version gate, the token rules and the bootstrap decision (cluster-init or join)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import secrets

import yaml

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s_hardening

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?\+k3s(\d+)\Z", re.ASCII)  # \d: 0-9 only, as Go's


def parse_version(version):
    """Split 'v1.33.5+k3s1' into a comparable tuple; ValueError when it is not a k3s version."""
    match = _VERSION.match(str(version).strip())
    if not match:
        raise ValueError("%r is not a k3s release version like v1.33.5+k3s1" % (version,))
    major, minor, patch, rc, k3s = match.groups()
    # a release candidate sorts before the release it precedes
    return (int(major), int(minor), int(patch), int(rc) if rc else 10 ** 6, int(k3s))


def is_downgrade(current, wanted):
    """True when going from `current` to `wanted` would be a downgrade."""
    return parse_version(wanted) < parse_version(current)


def version_problem(current, wanted, allow_downgrade=False, allow_skip_minor=False, upgrading=True):
    """'' when a node may go from k3s `current` to `wanted`, else what to do instead.

    current is '' for a node without k3s. Refused: a downgrade (k3s and etcd do not support
    one) and skipping a minor version (Kubernetes supports one minor at a time), unless the
    matching override is set. upgrading: the caller is playbooks/upgrade.yml (an etcd snapshot
    first, then each node drained and upgraded in turn); k3s.yml and site.yml (upgrading=False) would
    replace the binary of every running node at once, so a newer version than a node runs is refused
    there, pointing to upgrade.yml.
    """
    if not current:
        return ""
    have, want = parse_version(current), parse_version(wanted)
    if want < have and not allow_downgrade:
        return ("k3s %s runs here and gpu_cluster_k3s_version is %s: k3s does not support downgrades. "
                "Set gpu_cluster_k3s_version to %s or newer, or restore an etcd snapshot taken before "
                "the upgrade (playbooks/etcd_snapshot.yml); set k3s_install_allow_downgrade=true only "
                "if you know the data is compatible." % (current, wanted, current))
    if want[:2] > have[:2] and not allow_skip_minor:
        if want[0] != have[0] or want[1] > have[1] + 1:
            return ("k3s %s runs here and gpu_cluster_k3s_version is %s: that skips minor versions. "
                    "Upgrade one minor at a time: set gpu_cluster_k3s_version to the latest v%d.%d.x "
                    "release, run playbooks/upgrade.yml, then the next minor; or set "
                    "k3s_install_allow_skip_minor=true to force it."
                    % (current, wanted, have[0], have[1] + 1))
    if want > have and not upgrading:
        return ("k3s %s runs here and gpu_cluster_k3s_version is %s: this playbook would replace the binary on "
                "every node at once, with no etcd snapshot and no drain. Run playbooks/upgrade.yml with the new "
                "gpu_cluster_k3s_version (it snapshots etcd first, then drains and upgrades one node at a time); "
                "nothing was changed." % (current, wanted))
    return ""


def join_version_problem(server_versions, wanted):
    """'' when new agents may join at k3s `wanted`, else what to do instead (add_node.yml).

    server_versions maps each server to the version it runs ('' for none or unreachable). A
    node must not run a newer k3s than the servers (the kubelet may not be newer than the API
    server), and servers halfway through an upgrade run two versions: finish that first. An
    older `wanted` is a downgrade, which the version gate refuses on the servers themselves.
    """
    running = sorted(set(version for version in (server_versions or {}).values() if version),
                     key=parse_version)
    if not running:
        return ""
    if len(running) > 1:
        return ("the servers run different k3s versions (%s): finish the upgrade with playbooks/upgrade.yml "
                "before adding nodes." % ", ".join(running))
    if parse_version(wanted) > parse_version(running[0]):
        return ("the servers run k3s %s and gpu_cluster_k3s_version is %s: a node must not run a newer k3s "
                "than the servers. Run playbooks/upgrade.yml first, or set gpu_cluster_k3s_version to %s to "
                "join at the version the cluster runs." % (running[0], wanted, running[0]))
    return ""


def agent_upgrade_problem(server_versions, wanted, servers_in_run=None):
    """'' when upgrade.yml may upgrade the agents of this run to `wanted`, else what to do instead.

    server_versions maps each server to the version it runs ('' when it has none or did not answer);
    servers_in_run: the servers this run upgrades itself (they go first). An agent's kubelet may not be
    newer than the servers' API server (k3s docs upgrades/manual.md: servers first, then agents;
    Kubernetes version skew policy), so with --limit leaving servers out, every server left out must
    already run `wanted` or newer.
    """
    in_run = set(servers_in_run or [])
    behind = sorted(server for server, version in (server_versions or {}).items()
                    if server not in in_run and (not version or parse_version(version) < parse_version(wanted)))
    if not behind:
        return ""
    found = ", ".join("%s runs %s" % (server, server_versions.get(server) or "an unknown version") for server in behind)
    return ("upgrade.yml would upgrade agents to k3s %s, but the servers this run leaves out are not there yet (%s): "
            "an agent may not run a newer k3s than the servers (k3s docs upgrades/manual.md: servers first). "
            "Upgrade the servers first: run upgrade.yml without --limit, or keep k3s_servers in it; nothing "
            "was changed." % (wanted, found))


def current_version(running, binary):
    """The version a node runs: what its API reports, else its binary's ('' when neither)."""
    running = (running or "").strip()
    if running:
        try:
            parse_version(running)
            return running
        except ValueError:
            pass
    return version_from_output(binary) if binary and "k3s version" in binary else (binary or "").strip()


def bootstrap_plan(servers, first_server, probes):
    """Decide who starts the cluster and which servers day-2 operations go through.

    probes: {server: {'reachable': bool, 'etcd': bool, 'token': bool, 'api': bool}} where etcd
    is /var/lib/rancher/k3s/server/db/etcd, token /var/lib/rancher/k3s/server/token and api
    a k3s API answering on the server. Returns a dict:
      cluster_init: the server that gets cluster-init ('' when every server joins): the first
        server, unless another server already runs an initialised cluster and the first one
        does not (a rebuilt first server joins instead of starting a second etcd);
      api_server: the first server whose API answers, else the first initialised reachable
        one, else the first server (drain, uncordon, snapshot, the join URL without a VIP);
      token_server: the first initialised reachable server holding the server token, else
        api_server (where the cluster token is kept and read);
      initialised: the servers that already run a cluster.
    """
    servers = list(servers or [first_server])
    if first_server in servers:
        servers.remove(first_server)
    servers.insert(0, first_server)

    def probe(host):
        return probes.get(host) or {}

    reachable = [s for s in servers if probe(s).get("reachable", True)]
    initialised = [s for s in reachable if probe(s).get("etcd") or probe(s).get("api")]
    healthy = [s for s in reachable if probe(s).get("api")]
    if not initialised or first_server in initialised:
        cluster_init = first_server
    else:
        cluster_init = ""
    api_server = (healthy or initialised or [first_server])[0]
    with_token = [s for s in initialised if probe(s).get("token")]
    token_server = with_token[0] if with_token else (api_server if initialised else first_server)
    down = [s for s in servers if s not in reachable]
    problem = ""
    if cluster_init and cluster_init not in initialised and down:
        # Unreachable is not absent: the servers that did not answer may run the cluster, and a
        # cluster-init here would start a second one with a new token beside it.
        problem = (
            f"{first_server} would start a new cluster (cluster-init), but {', '.join(down)} could not be "
            f"reached and may still run the cluster: starting a second etcd beside it splits the cluster. "
            f"Bring {', '.join(down)} back and re-run (a rebuilt {first_server} then joins them), or, if "
            f"they are gone for good, remove them from k3s_servers in the inventory first."
        )
    return {"cluster_init": cluster_init, "api_server": api_server, "token_server": token_server,
            "initialised": initialised, "problem": problem}


SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")


def restore_plan(servers, first_server, probes, snapshot, backups=None, s3=False, off=None, token=True):  # noqa: PLR0917 - the filter's order
    """Where an etcd snapshot restore runs, and how, decided before anything is stopped.

    probes: {server: {'reachable': bool, 'snapshot': bool (the named file is in its snapshot
    directory), 'restored': str (the snapshot its restore marker names, '' for none),
    'joined': str (the same for a server that rejoined after a restore)}}.
    backups: control-node paths of copies of the snapshot (reset and restore backups).
    s3: the servers are configured with etcd S3 (k3s fetches the snapshot from the bucket).
    off: the servers the user says are off or wiped (k3s_snapshot_restore_servers_off): every server
    that does not answer must be among them, or the restore is refused before anything stops - a
    server that was only unreachable keeps its k3s enabled and its old etcd data, and two of three
    coming back hold a majority of the old cluster beside the restored one.
    token: whether the cluster's server token is known (the state directory's server-token, k3s_token
    or a server's cluster-token): a restore without it fails in k3s (pkg/cli/server/server.go; data
    encrypted with another token, pkg/cluster/storage.go), so it is refused before anything stops.
    Returns {restore_server, source ('local', 'backup' or 's3'), backup, stop, rejoin, down,
    problem}; problem is '' when the restore may go ahead, else why not and what to do.
    restore_server is the server an interrupted restore of this snapshot already reset, else
    the first reachable server (inventory order, first_server first) holding the snapshot, else
    the first reachable server (the snapshot is copied there from a backup, or fetched from S3).
    stop: the reachable servers whose k3s must stop (not those already done by an interrupted
    run); rejoin: the other reachable servers, in order, that still have to rejoin.
    """
    servers = list(servers or [first_server])
    if first_server in servers:
        servers.remove(first_server)
    servers.insert(0, first_server)
    backups = sorted(backups or [])
    plan = {"restore_server": "", "source": "", "backup": "", "stop": [], "rejoin": [], "down": [],
            "problem": ""}

    def probe(host):
        return probes.get(host) or {}

    name = snapshot if isinstance(snapshot, str) else ""
    if not SNAPSHOT_NAME.fullmatch(name) or ".." in name:
        plan["problem"] = (
            f"k3s_snapshot_name {snapshot!r} is not a snapshot file name: give the name that "
            "'k3s etcd-snapshot list' (playbooks/etcd_snapshot.yml -e k3s_snapshot_action=list) shows, "
            "without a directory.")
        return plan
    reachable = [s for s in servers if probe(s).get("reachable", False)]
    plan["down"] = [s for s in servers if s not in reachable]
    if not reachable:
        plan["problem"] = (f"no server could be reached ({', '.join(servers)}): a restore needs at least one; "
                           "bring one back and re-run. Nothing was stopped.")
        return plan
    resumed = [s for s in reachable if probe(s).get("restored") == name]
    holders = [s for s in reachable if probe(s).get("snapshot")]
    if resumed:
        plan["restore_server"], plan["source"] = resumed[0], "local"
    elif holders:
        plan["restore_server"], plan["source"] = holders[0], "local"
    elif backups:
        plan["restore_server"], plan["source"], plan["backup"] = reachable[0], "backup", backups[-1]
    elif s3:
        plan["restore_server"], plan["source"] = reachable[0], "s3"
    else:
        looked = ", ".join(reachable)
        plan["problem"] = (
            f"snapshot {name} is on none of the reachable servers ({looked}), in no backup on the control "
            "node, and etcd S3 is not configured: nothing was stopped. List the snapshots with "
            "-e k3s_snapshot_action=list"
            + (f", or bring {', '.join(plan['down'])} back if it holds it" if plan["down"] else "") + ".")
        return plan
    unconfirmed = [s for s in plan["down"] if s not in (off or [])]
    if unconfirmed:
        listed = ", ".join(unconfirmed)
        plan["problem"] = (
            f"{listed} could not be reached, and a server that is only unreachable still has k3s enabled and "
            "its old etcd data: when it comes back it rejoins the old cluster, and two old members would hold a "
            "majority beside the restored one. Nothing was stopped. Bring them back and re-run (they are reset "
            "and rejoined), or make sure they are off (shut the VMs down in Proxmox, or wipe them) and say so: "
            f"-e '{json.dumps({'k3s_snapshot_restore_servers_off': unconfirmed})}'"
            " (docs/k3s.md, Disaster recovery). k3s.yml moves their old etcd data aside when they return.")
        plan.update(restore_server="", source="", backup="")
        return plan
    if not token:
        plan["problem"] = (
            "the cluster's server token is not known: neither the state directory's server-token, k3s_token, "
            "nor a server's /etc/rancher/k3s/cluster-token holds it, and k3s restores a snapshot only with the "
            "token its data was encrypted with. Set k3s_token to the cluster's token (a backup keeps it: "
            "<backup dir>/<time>/<server>/cluster-token) and re-run. Nothing was stopped.")
        plan.update(restore_server="", source="", backup="")
        return plan
    restorer = plan["restore_server"]
    done = [s for s in reachable if s != restorer and probe(s).get("joined") == name]
    plan["rejoin"] = [s for s in reachable if s != restorer and s not in done]
    plan["stop"] = ([] if resumed else [restorer]) + list(plan["rejoin"])
    return plan


def local_storage_dirs(configs, defaults, trees):
    """The local-path volume directories the uninstall guard checks: ``defaults`` (k3s_node_local_volume_dirs)
    plus the ``default-local-storage-path`` this node's k3s really uses, when the uninstall would delete it
    (it lies in one of ``trees``). ``configs``: the texts of /etc/rancher/k3s/config.yaml, then its drop-ins
    config.yaml.d/*.yaml in name order; a later file's value wins (k3s pkg/configfilearg), and k3s's default
    is <data-dir>/storage (pkg/cli/server/server.go)."""
    path = ""
    for text in configs or []:
        try:
            data = yaml.safe_load(text or "") or {}
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("default-local-storage-path"), str):
            path = data["default-local-storage-path"]
    found = [str(d) for d in defaults or []]
    path = path.rstrip("/")
    inside = any(path == t.rstrip("/") or path.startswith(t.rstrip("/") + "/") for t in trees or [])
    if path and inside and path not in found:
        found.append(path)
    return found


def version_from_output(text):
    """Read the version out of `k3s --version` output ('' when absent)."""
    match = re.search(r"k3s version (v\S+)", text or "")
    return match.group(1) if match else ""


def sha256_for(sums_text, filename):
    """Return the sha256 that a sha256sum file lists for `filename` (ValueError when absent)."""
    for line in (sums_text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*").split("/")[-1] == filename:
            digest = parts[0].lower()
            if re.match(r"^[0-9a-f]{64}$", digest):
                return digest
    raise ValueError("no sha256 for %r in the checksum file" % filename)


def binary_name(arch):
    """Release asset name of the k3s binary for a Debian/uname architecture."""
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(arch, arch)
    if arch == "amd64":
        return "k3s"
    if arch == "arm64":
        return "k3s-arm64"
    raise ValueError("k3s is built for amd64 and arm64, not %r" % arch)


def release_arch(arch):
    """amd64/arm64 for a uname/Debian architecture."""
    name = binary_name(arch)
    return "amd64" if name == "k3s" else "arm64"


def interface_for_ip(facts, address):
    """Name of the interface that holds IPv4 `address` in Ansible facts ('' when none)."""
    for iface in facts.get("interfaces", []) or []:
        data = facts.get(iface.replace("-", "_")) or facts.get(iface) or {}
        ipv4 = data.get("ipv4")
        candidates = ipv4 if isinstance(ipv4, list) else [ipv4] if ipv4 else []
        candidates += data.get("ipv4_secondaries", []) or []
        for entry in candidates:
            if isinstance(entry, dict) and entry.get("address") == address:
                return data.get("device", iface)
    return ""


def duplicate_hostnames(hostnames):
    """Return {hostname: [inventory names]} for hostnames used by more than one node."""
    seen = {}
    for inventory_name, hostname in hostnames.items():
        if not hostname:
            continue  # no facts for this host in this run
        seen.setdefault(str(hostname).lower(), []).append(inventory_name)
    return dict((name, sorted(hosts)) for name, hosts in seen.items() if len(hosts) > 1)


# The labels a kubelet may set on its own Node (k8s.io/kubelet/pkg/apis/well_known_labels.go,
# kubeletLabels and kubeletLabelNamespaces; the kubelet's --node-labels documentation): a key in the
# kubernetes.io or k8s.io namespace (or a subdomain of them) must be one of these, or sit under
# kubelet.kubernetes.io / node.kubernetes.io. The kubelet refuses any other such label at start-up
# ("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels"), and the
# NodeRestriction admission plugin refuses it when a kubelet patches its Node. Such labels
# (node-role.kubernetes.io/infra) are set through the API after the node joins (k3s_node_api_labels).
KUBELET_LABELS = frozenset((
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
))
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
RESTRICTED_LABEL_NAMESPACES = ("kubernetes.io", "k8s.io")


def _in_namespace(namespace, domain):
    return namespace == domain or namespace.endswith("." + domain)


def kubelet_may_set_label(label):
    """Whether a kubelet may register with this label (``key`` or ``key=value``): True for keys
    outside kubernetes.io / k8s.io, and inside them only for the kubelet's allowed set."""
    key = str(label).partition("=")[0]
    if key in KUBELET_LABELS:
        return True
    namespace = key.rpartition("/")[0]
    if not any(_in_namespace(namespace, domain) for domain in RESTRICTED_LABEL_NAMESPACES):
        return True
    return any(_in_namespace(namespace, domain) for domain in KUBELET_LABEL_NAMESPACES)


def refused_node_labels(labels):
    """The labels of ``labels`` (``['key=value', ...]`` or a mapping) that a kubelet may not set."""
    items = ["%s=%s" % (k, v) for k, v in labels.items()] if isinstance(labels, dict) else list(labels or [])
    return [str(item) for item in items if not kubelet_may_set_label(item)]


def node_config(role, node_ip, flannel_iface, *, server_url="", cluster_init=False,
                tls_san=None, cluster_cidr="", service_cidr="", labels=None, taints=None,
                snapshot_cron="0 */6 * * *", snapshot_retention=20, extra=None,
                node_name="", cis=None):
    """Build the dict written to /etc/rancher/k3s/config.yaml for one node.

    role is 'server' or 'agent'. The first server gets cluster-init and no
    server URL; every other node gets the URL of an existing server. The token
    never goes here (it lives in the 0600 env file). node_name (the inventory
    name) becomes node-name; cis (k3s_hardening.cis_config) is merged before
    extra, and extra's *-arg lists add to the CIS ones rather than replace them.
    """
    if role not in ("server", "agent"):
        raise ValueError("role must be 'server' or 'agent', got %r" % (role,))
    if cluster_init and role != "server":
        raise ValueError("only a server can start the cluster (cluster-init)")
    if cluster_init and server_url:
        raise ValueError("the first server (cluster-init) must not join another server")
    if not cluster_init and not server_url:
        raise ValueError("a joining %s needs the server URL" % role)
    config = {}
    if cluster_init:
        config["cluster-init"] = True
    else:
        config["server"] = server_url
    if node_name:
        problem = k3s_hardening.node_name_problem(node_name)
        if problem:
            raise ValueError(problem)
        config["node-name"] = node_name
    config["node-ip"] = node_ip
    if flannel_iface:
        config["flannel-iface"] = flannel_iface
    if role == "server":
        config["tls-san"] = sorted(set(tls_san or []))
        config["cluster-cidr"] = cluster_cidr
        config["service-cidr"] = service_cidr
        config["secrets-encryption"] = True
        config["write-kubeconfig-mode"] = "0600"
        config["etcd-snapshot-schedule-cron"] = snapshot_cron
        config["etcd-snapshot-retention"] = int(snapshot_retention)
    labels = labels or {}
    if isinstance(labels, dict):
        label_list = ["%s=%s" % (key, labels[key]) for key in sorted(labels)]
    else:
        label_list = list(labels)
    if label_list:
        config["node-label"] = label_list
    if taints:
        config["node-taint"] = list(taints)
    config = k3s_hardening.merge_config(config, cis or {})
    config = k3s_hardening.merge_config(config, extra or {})
    node_labels = config.get("node-label") or []
    refused = refused_node_labels(node_labels if isinstance(node_labels, list) else [node_labels])
    if refused:
        raise ValueError("the kubelet refuses to register with %s (a label under kubernetes.io or k8s.io outside "
                         "its allowed set); set it through the API after the node joins (k3s_node_api_labels)"
                         % ", ".join(refused))
    return config


def label_dict(labels):
    """['a=b', ...] or {'a': 'b'} to a dict."""
    if isinstance(labels, dict):
        return dict((str(k), str(v)) for k, v in labels.items())
    result = {}
    for item in labels or []:
        key, _sep, value = str(item).partition("=")
        result[key] = value
    return result


def taint_dicts(taints):
    """['key=value:Effect', ...] to the list of dicts kubernetes.core.k8s_taint takes."""
    result = []
    for item in taints or []:
        spec, _sep, effect = str(item).rpartition(":")
        if not spec or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError("taint %r is not key[=value]:NoSchedule|PreferNoSchedule|NoExecute" % item)
        key, sep, value = spec.partition("=")
        taint = {"key": key, "effect": effect}
        if sep:
            taint["value"] = value
        result.append(taint)
    return result


# The cluster's identity: a random id the first converge writes on every server
# (IDENTITY_FILE, with the etcd data it names) and in the inventory's state directory. Day-2
# playbooks compare them, so the inventory of one cluster is never run against another.
IDENTITY_FILE = "/var/lib/rancher/k3s/server/cluster-id"
_IDENTITY = re.compile(r"^[0-9a-f]{32}\Z")


def identity_plan(recorded, on_servers, record_file=""):
    """Decide the cluster's identity from the state directory's record and the servers' files.

    ``recorded`` is the state directory's id ('' when none), ``on_servers`` maps each server that
    answered to its id ('' when it has none). Returns ``{problem, identity, write_servers,
    write_record}``: ``problem`` names both identities when they differ (servers among themselves,
    or the servers and the record); else ``identity`` is the record, or the servers' id, or a new
    one, and ``write_servers`` the servers that lack it, ``write_record`` whether the state
    directory lacks it."""
    recorded = str(recorded or "").strip()
    found = dict((host, str(value or "").strip()) for host, value in sorted((on_servers or {}).items()))
    bad = sorted(h for h, v in found.items() if v and not _IDENTITY.match(v))
    if recorded and not _IDENTITY.match(recorded):
        bad.append("the record %s" % (record_file or "in the state directory"))
    if bad:
        return {"problem": "the cluster identity of %s is not a 32-digit hex id; restore the file or remove it "
                           "(a missing one is written again); nothing was changed" % ", ".join(bad),
                "identity": "", "write_servers": [], "write_record": False}
    ids = sorted(set(v for v in found.values() if v))
    if len(ids) > 1:
        holders = "; ".join("%s on %s" % (i, ", ".join(h for h, v in found.items() if v == i)) for i in ids)
        return {"problem": "the servers of this inventory belong to different clusters (%s): they are not one "
                           "cluster's servers; fix k3s_servers, nothing was changed" % holders,
                "identity": "", "write_servers": [], "write_record": False}
    if recorded and ids and ids[0] != recorded:
        holders = ", ".join(h for h, v in found.items() if v)
        return {"problem": "wrong inventory: its state directory (%s) records cluster %s, but %s belong(s) to "
                           "cluster %s. Nothing was changed. Use the inventory (and gpu_cluster_state_dir) of "
                           "that cluster, or, if these servers really are this inventory's cluster, remove the "
                           "record and re-run" % (record_file or "gpu_cluster_state_dir", recorded, holders, ids[0]),
                "identity": "", "write_servers": [], "write_record": False}
    identity = recorded or (ids[0] if ids else secrets.token_hex(16))
    return {"problem": "", "identity": identity,
            "write_servers": [h for h, v in found.items() if not v],
            "write_record": not recorded}


def probes_from_results(registered):
    """{server: {reachable, etcd, token, api}} from k3s_node's probe: registered is {'probe': results},
    a loop over the servers (item = server) of k3s_server_probe (exists: etcd directory and server token;
    api_status of /ping on 6443, -1 when nothing answered)."""
    probes = {}
    for result in (registered or {}).get("probe") or []:
        entry = probes.setdefault(result.get("item"), {"reachable": True, "etcd": False, "token": False, "api": False})
        if result.get("unreachable"):
            entry["reachable"] = False
            continue
        found = result.get("exists") or {}
        entry["etcd"], entry["token"] = bool(found.get("etcd")), bool(found.get("token"))
        entry["api"] = int(result.get("api_status", -1) or -1) > 0
    return probes


def restore_probes_from_results(registered):
    """{server: {reachable, snapshot, restored, joined}} from the restore's probe: registered is {'probe':
    results}, a loop over the servers of k3s_server_probe (exists: snapshot, the named file in the snapshot
    directory; content: restored and joined, the text of the restore markers, '' when absent)."""
    probes = {}
    for result in (registered or {}).get("probe") or []:
        entry = probes.setdefault(result.get("item"), {"reachable": True, "snapshot": False, "restored": "", "joined": ""})
        if result.get("unreachable"):
            entry["reachable"] = False
            continue
        content = result.get("content") or {}
        entry["snapshot"] = bool((result.get("exists") or {}).get("snapshot"))
        entry["restored"] = str(content.get("restored") or "").strip()
        entry["joined"] = str(content.get("joined") or "").strip()
    return probes
