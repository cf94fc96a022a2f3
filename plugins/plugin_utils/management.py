# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic of the management phase: cert-manager, Rancher or Fleet, the GitRepo, bundle order.

The decisions the ``management`` role and ``render.yml`` act on, as pure functions:

* chart values of cert-manager (CRDs installed by the chart), Rancher (hostname, replicas from the
  cluster's size, TLS from cert-manager or a user certificate) and Fleet;
* the Fleet ``GitRepo`` that applies ``<gpu_cluster_name>/<component>`` bundles of the
  cluster-maintenance repository to the local cluster, and the credentials Secret it references
  (created on the cluster, never rendered into Git);
* the ``dependsOn`` graph between bundles: a table (component -> components it needs) plus rules
  read from a component's content (it asks for GPUs, it uses a StorageClass another bundle provides,
  it uses cert-manager objects), restricted to the bundles that exist, so absent or unknown bundles
  never make a ``dependsOn`` that matches nothing (Fleet would wait on it forever).

Every bundle is labelled ``gpu-cluster.cps/bundle: <component>`` and ``gpu-cluster.cps/cluster:
<cluster>``; ``dependsOn`` selects by those labels, so it does not depend on the name Fleet derives
from the GitRepo and the path.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, input_checks
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import (
    copy_data,
    DNS_LABEL, DNS_NAME, GO_DURATION as DURATION, go_duration_seconds)

BUNDLE_LABEL = "gpu-cluster.cps/bundle"
CLUSTER_LABEL = "gpu-cluster.cps/cluster"
FLEET_API = "fleet.cattle.io/v1alpha1"
CERT_MANAGER_API = "cert-manager.io/v1"
# The Fleet workspace whose GitRepos deploy to the cluster Fleet runs in (named "local").
LOCAL_WORKSPACE = "fleet-local"
LOCAL_CLUSTER = "local"
RANCHER_NAMESPACE = "cattle-system"
RANCHER_TLS_SECRET = "tls-rancher-ingress"
RANCHER_BOOTSTRAP_SECRET = "bootstrap-secret"
TLS_SOURCES = ("rancher", "letsEncrypt", "secret")
MODES = ("rancher", "fleet")
GPU_RESOURCE = re.compile(r"^nvidia\.com/(gpu|mig-)")

# component -> the components it needs first (absent ones are dropped). Bundles of other features
# join by name: jupyterhub (the notebook platform), gpu-pools and monitoring (GPU pools issue).
BUNDLE_DEPENDENCIES = {
    "rancher": ["cert-manager"],
    "jupyterhub": ["nfs-subdir-external-provisioner", "fast-scratch", "gpu-operator", "cert-manager"],
    "gpu-pools": ["gpu-operator"],
    "monitoring": ["nfs-subdir-external-provisioner", "gpu-operator"],
    "kube-prometheus-stack": ["nfs-subdir-external-provisioner", "gpu-operator"],
    "fast-scratch": [],
    "local-path-not-default": [],
    "nfs-subdir-external-provisioner": [],
    "gpu-operator": [],
    "cert-manager": [],
    "cluster-ca": ["cert-manager"],
    # PrometheusRule and ServiceMonitor are CRDs of kube-prometheus-stack (the monitoring bundle)
    "gpu-alerts": ["monitoring"],
    "llm-monitoring": ["monitoring"],
    # log aggregation (cluster_logs): the collector pushes to Loki; Grafana's data source is in monitoring
    "loki": ["monitoring"],
    "log-collector": ["loki"],
    # backups beyond etcd (backups): the node agent reads the volumes the storage components provide
    "velero": ["nfs-subdir-external-provisioner", "fast-scratch"],
}
GPU_PROVIDER = "gpu-operator"
CERT_MANAGER = "cert-manager"


# ---------------------------------------------------------------- chart values

def cert_manager_values(replicas=1, extra=None):
    """cert-manager chart values: CRDs installed (and kept) by the chart, ``replicas`` controllers."""
    replicas = int(replicas)
    values = {
        "crds": {"enabled": True, "keep": True},
        "replicaCount": replicas,
        "webhook": {"replicaCount": replicas},
        "cainjector": {"replicaCount": replicas},
    }
    return _merge(values, extra or {})


def rancher_replicas(servers):
    """3 Rancher replicas on an HA cluster (3 or more servers), 1 otherwise."""
    return 3 if int(servers) >= 3 else 1


def rancher_values(hostname, servers, *, tls_source="rancher", ingress_class="traefik",
                   letsencrypt_email="", extra=None):
    """Rancher chart values. No bootstrap password: Rancher reads it from the ``bootstrap-secret``
    Secret the role creates (so it is in no values file and no Fleet bundle)."""
    problems = rancher_problems(hostname, tls_source, letsencrypt_email)
    if problems:
        raise ValueError("; ".join(problems))
    values = {
        "hostname": hostname,
        "replicas": rancher_replicas(servers),
        "ingress": {"ingressClassName": ingress_class or "",
                    "tls": {"source": tls_source, "secretName": RANCHER_TLS_SECRET}},
    }
    if tls_source == "letsEncrypt":
        values["letsEncrypt"] = {"email": letsencrypt_email, "ingress": {"class": ingress_class or ""}}
    return _merge(values, extra or {})


def rancher_problems(hostname, tls_source, letsencrypt_email=""):
    """What is wrong with the Rancher settings, each naming the variable to change."""
    problems = []
    if not isinstance(hostname, str) or not DNS_NAME.match(hostname):
        problems.append("gpu_cluster_rancher_hostname %r must be a DNS name (e.g. rancher.homelab.lan) that "
                        "resolves to the cluster's ingress" % (hostname,))
    if tls_source not in TLS_SOURCES:
        problems.append("gpu_cluster_rancher_tls_source %r must be one of %s" % (tls_source, ", ".join(TLS_SOURCES)))
    if tls_source == "letsEncrypt" and not letsencrypt_email:
        problems.append("gpu_cluster_rancher_tls_source letsEncrypt needs gpu_cluster_rancher_letsencrypt_email")
    return problems


def fleet_values(extra=None):
    """Values of the standalone ``fleet`` chart (the chart's defaults serve a single local cluster)."""
    return _merge({}, extra or {})


# ---------------------------------------------------------------- components

PRIVILEGED_LABELS = {"pod-security.kubernetes.io/%s" % mode: "privileged" for mode in ("enforce", "audit", "warn")}
RESTRICTED_LABELS = {"pod-security.kubernetes.io/%s" % mode: "restricted" for mode in ("enforce", "audit", "warn")}


def management_components(settings):
    """The management components in install order, from the role's settings (a dict)::

        mode: rancher | fleet
        cluster_ca: true                 # the cluster-ca component (self-signed root, CA ClusterIssuer)
        servers: 3                       # k3s servers: HA (>= 3) gets 3 Rancher replicas
        ingress_class: traefik
        cert_manager: {repo, version, namespace, values}
        rancher: {repo, version, hostname, tls_source, letsencrypt_email, values}
        fleet: {repo, version, namespace, values}

    ``rancher``: cert-manager, cluster-ca, rancher. ``fleet``: cert-manager, cluster-ca, fleet-crd, fleet. cert-manager's
    namespace is ``restricted`` (its pods meet it); Rancher's and Fleet's are ``privileged``
    (Rancher's hardening guide exempts them from Pod Security admission).
    """
    mode = settings.get("mode")
    if mode not in MODES:
        raise ValueError("gpu_cluster_management_mode %r must be one of %s" % (mode, ", ".join(MODES)))
    servers = int(settings.get("servers") or 1)
    cm = settings.get("cert_manager") or {}
    components = [{
        "name": "cert-manager", "namespace": cm.get("namespace") or "cert-manager",
        "namespace_labels": dict(RESTRICTED_LABELS),
        "chart": {"repo": cm.get("repo"), "name": "cert-manager", "version": cm.get("version"),
                  "release": "cert-manager",
                  "values": cert_manager_values(2 if servers >= 3 else 1, cm.get("values"))},
    }]
    if settings.get("cluster_ca", True):
        # The cluster's own CA (self-signed root, CA ClusterIssuer): a separate bundle, since its
        # objects need cert-manager's CRDs and webhook, which the cert-manager bundle brings.
        components.append({"name": "cluster-ca", "namespace": components[0]["namespace"],
                           "manifests": [self_signed_issuer(), *ca_certificate(namespace=components[0]["namespace"])]})
    if mode == "rancher":
        rancher = settings.get("rancher") or {}
        components.append({
            "name": "rancher", "namespace": RANCHER_NAMESPACE, "namespace_labels": dict(PRIVILEGED_LABELS),
            "chart": {"repo": rancher.get("repo"), "name": "rancher", "version": rancher.get("version"),
                      "release": "rancher",
                      "values": rancher_values(rancher.get("hostname"), servers,
                                               tls_source=rancher.get("tls_source") or "rancher",
                                               ingress_class=settings.get("ingress_class") or "",
                                               letsencrypt_email=rancher.get("letsencrypt_email") or "",
                                               extra=rancher.get("values"))},
        })
    else:
        fleet = settings.get("fleet") or {}
        namespace = fleet.get("namespace") or "cattle-fleet-system"
        for name, values in (("fleet-crd", {}), ("fleet", fleet_values(fleet.get("values")))):
            component = {"name": name, "namespace": namespace,
                         "chart": {"repo": fleet.get("repo"), "name": name, "version": fleet.get("version"),
                                   "release": name, "values": values}}
            if name == "fleet-crd":
                component["namespace_labels"] = dict(PRIVILEGED_LABELS)
            components.append(component)
    return components


def fleet_bundled_components(components):
    """The management components Fleet keeps up to date from Git: all but Fleet itself
    (``fleet-crd``/``fleet`` cannot upgrade the agent that applies them)."""
    return [c for c in components if c["name"] not in ("fleet", "fleet-crd")]


# ---------------------------------------------------------------- GitRepo

def gitrepo_problems(repo, branch, cluster, polling_interval="60s", name="cluster-maintenance"):
    """What is wrong with the GitRepo settings, each naming the variable to change."""
    problems = []
    for problem in (input_checks.git_url_problem("gpu_cluster_fleet_repo", repo),
                    input_checks.ref_problem("gpu_cluster_fleet_branch", branch)):
        if problem:
            problems.append(problem)
    if not isinstance(cluster, str) or not DNS_LABEL.match(cluster):
        problems.append("gpu_cluster_name %r must be a DNS label (it is the bundle directory)" % (cluster,))
    if not isinstance(polling_interval, str) or not DURATION.match(polling_interval):
        problems.append("gpu_cluster_fleet_polling_interval %r must be a duration such as 60s or 5m"
                        % (polling_interval,))
    elif not go_duration_seconds(polling_interval):
        # Fleet reads a zero interval as "not set" and polls every 15 s (fleet's gitjob controller,
        # getPollingIntervalDuration: PollingInterval.Duration == 0 -> defaultPollingSyncInterval)
        problems.append("gpu_cluster_fleet_polling_interval %r is zero, which Fleet takes for its default of 15s; "
                        "give how often Fleet polls the repository, such as 60s or 5m" % (polling_interval,))
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        problems.append("gpu_cluster_fleet_gitrepo_name %r must be a DNS label" % (name,))
    return problems


def gitrepo(repo, branch, cluster, *, name="cluster-maintenance", polling_interval="60s",
            client_secret_name="", namespace=LOCAL_WORKSPACE):
    """The Fleet ``GitRepo``: every ``<cluster>/<component>`` directory (path glob) of ``branch`` to
    the local cluster, polled every ``polling_interval``, credentials from ``client_secret_name``."""
    problems = gitrepo_problems(repo, branch, cluster, polling_interval, name)
    if problems:
        raise ValueError("; ".join(problems))
    spec = {
        "repo": repo,
        "branch": branch,
        "paths": ["%s/*" % cluster],
        "pollingInterval": polling_interval,
        "targets": [{"name": LOCAL_CLUSTER, "clusterName": LOCAL_CLUSTER}],
    }
    if client_secret_name:
        spec["clientSecretName"] = client_secret_name
    return {"apiVersion": FLEET_API, "kind": "GitRepo",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {CLUSTER_LABEL: cluster, "app.kubernetes.io/managed-by": "cps.gpu_cluster"}},
            "spec": spec}


def git_credentials_secret(name, *, username="", password="", ssh_private_key="", known_hosts="",
                           namespace=LOCAL_WORKSPACE):
    """The Secret the GitRepo's ``clientSecretName`` names: basic-auth (user + token) or ssh-auth.

    Built only for the cluster (``kubernetes.core.k8s`` with ``no_log``); never rendered to disk.
    Values go in ``data`` (base64), not ``stringData``: applied without server-side apply, so no
    last-applied annotation copies them, and a second run compares equal (idempotent).
    """
    if ssh_private_key and (username or password):
        raise ValueError("set either gpu_cluster_fleet_git_ssh_private_key or gpu_cluster_fleet_git_username/"
                         "gpu_cluster_fleet_git_password, not both")
    meta = {"name": name, "namespace": namespace}
    if ssh_private_key:
        data = {"ssh-privatekey": ssh_private_key}
        if known_hosts:
            data["known_hosts"] = known_hosts
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/ssh-auth",
                "metadata": meta, "data": _b64(data)}
    if not (username and password):
        raise ValueError("a Git credentials Secret needs gpu_cluster_fleet_git_username and "
                         "gpu_cluster_fleet_git_password (a token), or gpu_cluster_fleet_git_ssh_private_key")
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
            "metadata": meta, "data": _b64({"username": username, "password": password})}


def bootstrap_password_secret(password, namespace=RANCHER_NAMESPACE):
    """The ``bootstrap-secret`` Rancher reads its first admin password from (pkg/data/management)."""
    if not isinstance(password, str) or len(password) < 12:
        raise ValueError("gpu_cluster_rancher_bootstrap_password must be a vaulted string of at least "
                         "12 characters (Rancher's minimum password length)")
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": RANCHER_BOOTSTRAP_SECRET, "namespace": namespace},
            "data": _b64({"bootstrapPassword": password})}


def tls_secret(certificate, key, namespace=RANCHER_NAMESPACE, name=RANCHER_TLS_SECRET):
    """The user's certificate for Rancher's ingress (``ingress.tls.source: secret``)."""
    if "BEGIN CERTIFICATE" not in str(certificate) or "PRIVATE KEY" not in str(key):
        raise ValueError("gpu_cluster_rancher_tls_certificate and gpu_cluster_rancher_tls_key must be PEM "
                         "(a certificate chain and its private key)")
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace},
            "data": _b64({"tls.crt": certificate, "tls.key": key})}


def self_signed_issuer(name="gpu-cluster-selfsigned"):
    """A self-signed ClusterIssuer: the root of the cluster's own CA for internal certificates."""
    return {"apiVersion": CERT_MANAGER_API, "kind": "ClusterIssuer",
            "metadata": {"name": name}, "spec": {"selfSigned": {}}}


def ca_certificate(name="gpu-cluster-ca", namespace="cert-manager", issuer="gpu-cluster-selfsigned"):
    """The cluster CA's Certificate (issued by the self-signed issuer) and the ClusterIssuer that signs
    with it, which other components (JupyterHub, LLM endpoints) may name for their TLS."""
    return [
        {"apiVersion": CERT_MANAGER_API, "kind": "Certificate",
         "metadata": {"name": name, "namespace": namespace},
         "spec": {"isCA": True, "commonName": name, "secretName": name,
                  "duration": "87600h", "renewBefore": "720h",
                  "privateKey": {"algorithm": "ECDSA", "size": 256},
                  "issuerRef": {"name": issuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}}},
        {"apiVersion": CERT_MANAGER_API, "kind": "ClusterIssuer",
         "metadata": {"name": name}, "spec": {"ca": {"secretName": name}}},
    ]


# ---------------------------------------------------------------- bundle order

def _walk(node):
    """Every (key, value) of nested dicts and lists."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _content(component):
    return [component.get("manifests") or [], (component.get("chart") or {}).get("values") or {}]


def asks_for_gpus(component):
    """True when a component requests an NVIDIA resource or the ``nvidia`` RuntimeClass."""
    if component.get("name") == GPU_PROVIDER:
        return False
    for key, value in _walk(_content(component)):
        if isinstance(key, str) and GPU_RESOURCE.match(key):
            return True
        if key == "runtimeClassName" and value == "nvidia":
            return True
    return False


def storage_classes_provided(component):
    """Names of the StorageClasses a component creates (manifests, or a chart's ``storageClass``)."""
    names = set()
    for manifest in component.get("manifests") or []:
        if isinstance(manifest, dict) and manifest.get("kind") == "StorageClass":
            names.add(manifest["metadata"]["name"])
    sc = ((component.get("chart") or {}).get("values") or {}).get("storageClass")
    if isinstance(sc, dict) and sc.get("create", True) and sc.get("name"):
        names.add(sc["name"])
    return names


def storage_classes_used(component):
    """StorageClass names a component refers to (``storageClassName``/``storageClass`` strings)."""
    return {value for key, value in _walk(_content(component))
            if key in ("storageClassName", "storageClass") and isinstance(value, str) and value}


def uses_cert_manager(component):
    """True when a component holds cert-manager objects or asks cert-manager for a certificate."""
    if component.get("name") == CERT_MANAGER:
        return False
    for manifest in component.get("manifests") or []:
        if isinstance(manifest, dict) and str(manifest.get("apiVersion", "")).startswith("cert-manager.io/"):
            return True
    return any(isinstance(key, str) and key.startswith("cert-manager.io/")
               for key, _value in _walk(_content(component)))


def bundle_dependencies(component, present):
    """The names of the bundles ``component`` must wait for, among the ``present`` components (a list
    of component dicts, or bare names of bundles already rendered), sorted: the table's entries, the
    GPU Operator for GPU users, the provider of each StorageClass used, cert-manager for certificate
    users. Absent ones are left out."""
    name = component["name"]
    by_name = {}
    for entry in present or []:
        other = {"name": entry} if isinstance(entry, str) else entry
        if other.get("name") != name and (other["name"] not in by_name or len(other) > 1):
            by_name[other["name"]] = other
    wanted = set(BUNDLE_DEPENDENCIES.get(name, []))
    if asks_for_gpus(component):
        wanted.add(GPU_PROVIDER)
    if uses_cert_manager(component):
        wanted.add(CERT_MANAGER)
    used = storage_classes_used(component) - storage_classes_provided(component)
    for other in by_name.values():
        if used & storage_classes_provided(other):
            wanted.add(other["name"])
    return sorted(n for n in wanted if n in by_name)


def bundle_selector(name, cluster):
    """A ``dependsOn`` entry selecting bundle ``name`` of ``cluster`` by its labels."""
    return {"selector": {"matchLabels": {BUNDLE_LABEL: name, CLUSTER_LABEL: cluster}}}


def ordered_component(component, present, cluster):
    """``component`` with the Fleet labels of its bundle and its ``dependsOn`` (the component's own
    entries first, then one selector per :func:`bundle_dependencies`)."""
    # Plain copies first (copy.deepcopy of Ansible's lazy containers fails inside a filter).
    result = _plain(component)
    present = _plain(list(present or []))
    labels = dict(result.get("fleet_labels") or {})
    labels[BUNDLE_LABEL] = component["name"]
    if cluster:
        labels[CLUSTER_LABEL] = cluster
    result["fleet_labels"] = labels
    depends = [_scoped_to(entry, cluster) for entry in result.get("fleet_depends_on") or []]
    for name in bundle_dependencies(result, present):
        entry = bundle_selector(name, cluster) if cluster else {"selector": {"matchLabels": {BUNDLE_LABEL: name}}}
        if entry not in depends:
            depends.append(entry)
    if depends:
        result["fleet_depends_on"] = depends
    return result


def _scoped_to(entry, cluster):
    """One of the component's own ``dependsOn`` entries, limited to the bundles of ``cluster``: a
    label selector without the cluster label gets it (every bundle rendered here carries it, and two
    clusters may share one Fleet repository and workspace). Other entries are kept as they are."""
    selector = entry.get("selector") if isinstance(entry, dict) else None
    match = selector.get("matchLabels") if isinstance(selector, dict) else None
    if not cluster or not isinstance(match, dict) or not match or CLUSTER_LABEL in match:
        return entry
    scoped = copy_data(entry)
    scoped["selector"]["matchLabels"] = dict(match, **{CLUSTER_LABEL: cluster})
    return scoped


def _selector_matches(selector, labels):
    match = (selector or {}).get("matchLabels") or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def bundle_order_problems(bundles):
    """Problems of a rendered set of bundles ``{name: fleet.yaml dict}``: a ``dependsOn`` that names or
    selects no other bundle, a bundle depending on itself, a dependency cycle."""
    problems = []
    edges = {}
    for name, fleet in sorted(bundles.items()):
        edges[name] = set()
        for index, dep in enumerate((fleet or {}).get("dependsOn") or []):
            if dep.get("name"):
                targets = {dep["name"]} & set(bundles)
            else:
                targets = {other for other, ofleet in bundles.items()
                           if _selector_matches(dep.get("selector"), (ofleet or {}).get("labels") or {})}
            if not targets:
                problems.append("bundle %s: dependsOn[%d] %r matches no bundle" % (name, index, dep))
            if name in targets:
                problems.append("bundle %s: dependsOn[%d] selects the bundle itself" % (name, index))
            edges[name] |= targets - {name}
    problems.extend("dependency cycle: %s" % " -> ".join(cycle) for cycle in _cycles(edges))
    return problems


def _cycles(edges):
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt):], nxt])
            elif not state.get(nxt):
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if not state.get(node):
            visit(node, [node])
    return found


def install_order(bundles):
    """Bundle names in an order that respects ``dependsOn`` (Kahn's algorithm, ties by name)."""
    edges = {}
    for name, fleet in bundles.items():
        edges[name] = set()
        for dep in (fleet or {}).get("dependsOn") or []:
            edges[name] |= {o for o, of in bundles.items()
                            if o != name and (dep.get("name") == o or
                                              _selector_matches(dep.get("selector"), (of or {}).get("labels") or {}))}
    order, done = [], set()
    while len(order) < len(edges):
        ready = sorted(n for n in edges if n not in done and edges[n] <= done)
        if not ready:
            raise ValueError("dependency cycle among %s" % ", ".join(sorted(set(edges) - done)))
        order.append(ready[0])
        done.add(ready[0])
    return order


# ---------------------------------------------------------------- helpers

def management_problems(settings, secrets_needed=True):
    """Every problem of the management settings (empty when switched off or usable), each naming the
    inventory variable to change. ``settings`` holds no secret, only what is set::

        enabled, mode, cluster, rancher_hostname, tls_source, letsencrypt_email,
        bootstrap_password_length, tls_pair_set, gitrepo_url, gitrepo_branch, gitrepo_name,
        polling_interval, git_basic_auth_set, git_basic_auth_complete, git_ssh_key_set

    ``secrets_needed`` false (preflight of the whole inventory, render.yml) leaves out the checks
    of the vaulted values, which only the phase that writes them needs.
    """
    if not _flag(settings.get("enabled")):
        return []
    problems = []
    mode = settings.get("mode")
    if mode not in MODES:
        problems.append("gpu_cluster_management_mode %r must be one of %s" % (mode, ", ".join(MODES)))
    if mode == "rancher":
        tls_source = settings.get("tls_source") or "rancher"
        problems.extend(rancher_problems(settings.get("rancher_hostname"), tls_source,
                                         settings.get("letsencrypt_email") or ""))
        if secrets_needed and int(settings.get("bootstrap_password_length") or 0) < 12:
            problems.append("gpu_cluster_rancher_bootstrap_password must be set (vaulted, at least 12 characters)")
        if secrets_needed and tls_source == "secret" and not _flag(settings.get("tls_pair_set")):
            problems.append("gpu_cluster_rancher_tls_source secret needs gpu_cluster_rancher_tls_certificate "
                            "and gpu_cluster_rancher_tls_key (vaulted PEM)")
    if settings.get("gitrepo_url"):
        problems.extend(gitrepo_problems(settings.get("gitrepo_url"), settings.get("gitrepo_branch"),
                                         settings.get("cluster"), settings.get("polling_interval") or "60s",
                                         settings.get("gitrepo_name") or "cluster-maintenance"))
        if secrets_needed and _flag(settings.get("git_basic_auth_set")) and not _flag(settings.get("git_ssh_key_set")) \
                and "git_basic_auth_complete" in settings and not _flag(settings.get("git_basic_auth_complete")):
            problems.append("gpu_cluster_fleet_git_username needs gpu_cluster_fleet_git_password (a vaulted token), "
                            "and the other way round")
        if _flag(settings.get("git_basic_auth_set")) and _flag(settings.get("git_ssh_key_set")):
            problems.append("set either gpu_cluster_fleet_git_ssh_private_key or gpu_cluster_fleet_git_username/"
                            "gpu_cluster_fleet_git_password, not both")
    elif not settings.get("cluster"):
        problems.append("gpu_cluster_name must be set")
    return problems


INVENTORY_SETTINGS = {
    "enabled": "gpu_cluster_management_enabled",
    "mode": "gpu_cluster_management_mode",
    "cluster": "gpu_cluster_name",
    "rancher_hostname": "gpu_cluster_rancher_hostname",
    "tls_source": "gpu_cluster_rancher_tls_source",
    "letsencrypt_email": "gpu_cluster_rancher_letsencrypt_email",
    "gitrepo_url": "gpu_cluster_fleet_repo",
    "gitrepo_branch": "gpu_cluster_fleet_branch",
    "gitrepo_name": "gpu_cluster_fleet_gitrepo_name",
    "polling_interval": "gpu_cluster_fleet_polling_interval",
}
INVENTORY_DEFAULTS = {"mode": "rancher", "tls_source": "rancher", "gitrepo_branch": "main",
                      "gitrepo_name": "cluster-maintenance", "polling_interval": "60s"}


# Settings preflight judges by presence only (a vaulted value is never read into a message).
INVENTORY_PRESENCE = {
    "git_ssh_key_set": ("gpu_cluster_fleet_git_ssh_private_key",),
    "git_basic_auth_set": ("gpu_cluster_fleet_git_username", "gpu_cluster_fleet_git_password"),
}


def management_inventory_problems(inventory, hostvars=None):
    """Preflight of the whole inventory: the management settings' shape (no vaulted value is read into
    a message; the Git credentials count as set or not, issue 43: an SSH key and a password both).
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    present = frozenset(name for names in INVENTORY_PRESENCE.values() for name in names)
    # one pass, each setting from the first host that sets it
    found = cluster_model.inventory(inventory, hostvars).values(frozenset(INVENTORY_SETTINGS.values()) | present)
    settings = dict(INVENTORY_DEFAULTS)
    for key, name in INVENTORY_SETTINGS.items():
        if name in found:
            settings[key] = found[name]
    for key, names in INVENTORY_PRESENCE.items():
        settings[key] = any(found.get(name) not in (None, "") for name in names)
    return management_problems(settings, secrets_needed=False)


MASKED = "<masked>"
SECRET_KEY = re.compile(r"(token|secret|password|passwd|private-?key|access-key|secret-key)$", re.I)
SECRET_ARG = re.compile(r"^(--?)?([A-Za-z0-9_.-]*(token|secret|password|access-key|secret-key))=(.*)$", re.I)


def mask_secrets(node):
    """A copy of a config (k3s ``config.yaml``) for review: the value of every key naming a secret
    (token, secret, password, private key, access key) is ``<masked>``, also in ``key=value`` list
    items (``kube-apiserver-arg``), so a rendered file can be shared and diffed."""
    if isinstance(node, dict):
        return {key: (MASKED if isinstance(key, str) and SECRET_KEY.search(key) and value not in (None, "", [], {})
                      and not isinstance(value, bool) else mask_secrets(value))
                for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [mask_secrets(value) for value in node]
    if isinstance(node, str):
        match = SECRET_ARG.match(node)
        if match:
            return "%s%s=%s" % (match.group(1) or "", match.group(2), MASKED)
    return node


def _b64(data):
    return {key: base64.b64encode(str(value).encode("utf-8")).decode("ascii") for key, value in data.items()}


def _plain(node):
    """A plain copy of nested dicts and lists (templated values resolved, containers rebuilt)."""
    if isinstance(node, dict):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain(value) for value in node]
    return node


def _flag(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def _merge(base, override):
    result = copy_data(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = copy_data(value)
    return result
