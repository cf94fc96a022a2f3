# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers for what k3s-ansible users expect (issue 16): registry mirrors and credentials
(registries.yaml), the HTTP(S)/no-proxy environment, etcd snapshots to S3, the kubeconfig named
after the cluster and its merge into ~/.kube/config, the API VIP rule and node removal.

Every ``*_problems`` function returns a list of messages (empty when the value is sound) that
name the variable and say what to change; any type may arrive, a wrong one is a message.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import re

from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model, input_checks
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import DNS_LABEL as DNS_LABEL_RE, copy_data

# A registry name as containerd matches it: host[:port], or '*' for every registry.
REGISTRY_RE = re.compile(r"\*|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?")
# Characters allowed in a URL written to a systemd env file or registries.yaml (no whitespace,
# quotes, backslash, '$', '#' or control characters).
URL_CHARS_RE = re.compile(r"[A-Za-z0-9._~:/?\[\]@!&'()*+,;=%-]+")
HOST_PORT_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?")
NO_PROXY_ENTRY_RE = re.compile(r"[A-Za-z0-9.*:/\[\]_-]+")
S3_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
IPV4_SHAPED_RE = re.compile(r"[0-9]+(\.[0-9]+){3}")


def s3_bucket_ok(name):
    """Whether ``name`` is a bucket name S3 and MinIO accept (AWS S3 user guide, "General purpose bucket
    naming rules": 3-63 of a-z, 0-9, '.', '-', beginning and ending with a letter or number, no two
    adjacent periods, not formatted as an IP address, no ``xn--`` prefix, no ``-s3alias`` or ``--ol-s3``
    suffix; minio-go ``s3utils.CheckValidBucketNameStrict`` refuses the same adjacent periods and IP form)."""
    return bool(_full(S3_BUCKET_RE, name)) and ".." not in name and not IPV4_SHAPED_RE.fullmatch(name) \
        and not name.startswith(("xn--", "sthree-")) and not name.endswith(("-s3alias", "--ol-s3"))


S3_FOLDER_RE = re.compile(r"[A-Za-z0-9!_.*'()/-]+")
S3_REGION_RE = re.compile(r"[a-z0-9-]{1,32}")
S3_CREDENTIAL_RE = re.compile(r"[^\s\x00-\x1f\x7f]+")

REGISTRY_MIRROR_KEYS = ("endpoint", "rewrite")
REGISTRY_CONFIG_KEYS = ("auth", "tls")
REGISTRY_AUTH_KEYS = ("username", "password", "auth", "identity_token")
REGISTRY_TLS_KEYS = ("cert_file", "key_file", "ca_file", "insecure_skip_verify")

# k3s_node_etcd_s3 key -> config.yaml key (k3s server flags, docs.k3s.io/cli/etcd-snapshot).
ETCD_S3_KEYS = {
    "endpoint": "etcd-s3-endpoint",
    "bucket": "etcd-s3-bucket",
    "folder": "etcd-s3-folder",
    "region": "etcd-s3-region",
    "access_key": "etcd-s3-access-key",
    "secret_key": "etcd-s3-secret-key",
    "skip_ssl_verify": "etcd-s3-skip-ssl-verify",
    "insecure": "etcd-s3-insecure",
}
ETCD_S3_BOOLS = ("skip_ssl_verify", "insecure")

# What NO_PROXY always holds besides the user's entries (k3s documents .svc and .cluster.local).
NO_PROXY_ALWAYS = ("localhost", "127.0.0.1", ".svc", ".cluster.local")


def _is_str(value):
    return isinstance(value, str)


def _full(regex, value):
    return _is_str(value) and regex.fullmatch(value) is not None


# --- URLs ---------------------------------------------------------------------------------

def url_problem(value, schemes=("http", "https"), example="http://proxy.lan:3128"):
    """'' when value is a whole, well-formed URL of one of `schemes` with a host, else the advice."""
    advice = "use a URL like %s (%s, a host, an optional port; no whitespace or quotes)" % (
        example, " or ".join("%s://" % scheme for scheme in schemes))
    if not _full(URL_CHARS_RE, value):
        return advice
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return advice
    if parts.scheme not in schemes or not parts.hostname or "://" not in value:
        return advice
    if port is not None and not 0 < port < 65536:
        return advice
    host = parts.hostname
    if not _full(HOST_PORT_RE, host):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return advice
    return ""


# --- registries.yaml ----------------------------------------------------------------------

def _unknown(where, value, allowed):
    extra = sorted(str(key) for key in value if key not in allowed)
    if extra:
        return ["%s: unknown key(s) %s; allowed: %s" % (where, ", ".join(extra), ", ".join(allowed))]
    return []


def _mirror_problems(name, mirror):
    where = "k3s_node_registries.mirrors[%r]" % name
    if not isinstance(mirror, dict):
        return ["%s is not a mapping; use {endpoint: [https://mirror.lan:5000]}" % where]
    problems = _unknown(where, mirror, REGISTRY_MIRROR_KEYS)
    endpoints = mirror.get("endpoint")
    if not isinstance(endpoints, list) or not endpoints:
        problems.append("%s.endpoint must be a non-empty list of URLs (like [https://mirror.lan:5000])" % where)
    else:
        for url in endpoints:
            advice = url_problem(url, example="https://mirror.lan:5000")
            if advice:
                problems.append("%s.endpoint entry %r is not a URL; %s" % (where, url, advice))
    rewrite = mirror.get("rewrite")
    if rewrite is not None and not (isinstance(rewrite, dict) and all(_is_str(k) and _is_str(v) for k, v in rewrite.items())):
        problems.append("%s.rewrite must map regular expressions to replacements (strings)" % where)
    return problems


def _config_problems(name, config):
    where = "k3s_node_registries.configs[%r]" % name
    if not isinstance(config, dict):
        return ["%s is not a mapping; use {auth: {username: ..., password: ...}, tls: {...}}" % where]
    problems = _unknown(where, config, REGISTRY_CONFIG_KEYS)
    auth = config.get("auth")
    if auth is not None:
        if not isinstance(auth, dict):
            problems.append("%s.auth is not a mapping" % where)
        else:
            problems.extend(_unknown(where + ".auth", auth, REGISTRY_AUTH_KEYS))
            keys = set(key for key in auth if key in REGISTRY_AUTH_KEYS)
            bad = [key for key in keys if not (_is_str(auth[key]) and auth[key])]
            if bad:
                # the values are credentials: never repeat them
                problems.append("%s.auth: %s must be non-empty strings (values not shown)" % (where, ", ".join(sorted(bad))))
            if keys not in ({"username", "password"}, {"auth"}, {"identity_token"}):
                problems.append(
                    "%s.auth must hold exactly one of: username and password, auth (base64 user:password), "
                    "or identity_token; it holds %s" % (where, ", ".join(sorted(keys)) or "nothing"))
    tls = config.get("tls")
    if tls is not None:
        if not isinstance(tls, dict):
            problems.append("%s.tls is not a mapping" % where)
        else:
            problems.extend(_unknown(where + ".tls", tls, REGISTRY_TLS_KEYS))
            for key in ("cert_file", "key_file", "ca_file"):
                if key in tls and not (_is_str(tls[key]) and tls[key].startswith("/") and "\n" not in tls[key]):
                    problems.append("%s.tls.%s must be an absolute path on the node (like /etc/ssl/registry/%s.pem)"
                                    % (where, key, key.split("_", maxsplit=1)[0]))
            if "insecure_skip_verify" in tls and not isinstance(tls["insecure_skip_verify"], bool):
                problems.append("%s.tls.insecure_skip_verify must be true or false" % where)
            if ("cert_file" in tls) != ("key_file" in tls):
                problems.append("%s.tls: set cert_file and key_file together (a client certificate needs its key)" % where)
    if auth is None and tls is None:
        problems.append("%s holds neither auth nor tls; remove it or set one" % where)
    return problems


def registries_problems(value):
    """Problems of k3s_node_registries (k3s's registries.yaml format: mirrors and configs)."""
    if value is None or value == {}:
        return []
    if not isinstance(value, dict):
        return ["k3s_node_registries is not a mapping; use {mirrors: {...}, configs: {...}} as in k3s's registries.yaml"]
    problems = _unknown("k3s_node_registries", value, ("mirrors", "configs"))
    for section, check in (("mirrors", _mirror_problems), ("configs", _config_problems)):
        entries = value.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            problems.append("k3s_node_registries.%s is not a mapping of registry name -> settings" % section)
            continue
        for name, entry in entries.items():
            if not _full(REGISTRY_RE, name):
                problems.append("k3s_node_registries.%s: %r is not a registry name (host[:port], like docker.io, or '*')"
                                % (section, name))
                continue
            problems.extend(check(name, entry))
    return problems


# --- proxy environment ----------------------------------------------------------------------

def proxy_problems(http_proxy, https_proxy, no_proxy):
    """Problems of gpu_cluster_http_proxy, gpu_cluster_https_proxy (URLs) and gpu_cluster_no_proxy (list)."""
    problems = []
    for name, value in (("gpu_cluster_http_proxy", http_proxy), ("gpu_cluster_https_proxy", https_proxy)):
        if value is None or value == "":
            continue
        advice = url_problem(value)
        if advice:
            shown = "(value not shown: it may hold a password)" if _is_str(value) and "@" in value else repr(value)
            problems.append("k3s_cluster: %s is %s; %s" % (name, shown, advice))
    if no_proxy is not None:
        if not isinstance(no_proxy, list) or not all(_full(NO_PROXY_ENTRY_RE, item) for item in no_proxy):
            problems.append("k3s_cluster: gpu_cluster_no_proxy is %r; use a list of host names, domains (.lan), "
                            "addresses or CIDRs without spaces or commas (like [.lan, 10.0.0.0/24])" % (no_proxy,))
    return problems


def no_proxy_list(extra=None, cluster_cidr="", service_cidr="", node_ips=None, vip=""):
    """The NO_PROXY entries: the user's, then localhost/127.0.0.1, the cluster and service CIDRs,
    every node address, the VIP and .svc/.cluster.local; each once, in that order."""
    entries = list(extra or [])
    entries += ["localhost", "127.0.0.1"]
    entries += [cidr for cidr in (cluster_cidr, service_cidr) if cidr]
    entries += [str(address) for address in (node_ips or []) if address]
    if vip:
        entries.append(vip)
    entries += [".svc", ".cluster.local"]
    return input_checks.unique(str(entry) for entry in entries)


def proxy_env(http_proxy="", https_proxy="", no_proxy=None):
    """Environment lines for the k3s unit's env file (name -> value, in a stable order).

    Empty when no proxy is set. k3s reads HTTP_PROXY/HTTPS_PROXY/NO_PROXY; the CONTAINERD_*
    variants are what k3s passes to containerd (image pulls) - both are set, as docs.k3s.io
    (Advanced, Configuring an HTTP proxy) describes. no_proxy: the full list (no_proxy_list)."""
    if not http_proxy and not https_proxy:
        return {}
    env = {}
    joined = ",".join(no_proxy or [])
    for prefix in ("", "CONTAINERD_"):
        if http_proxy:
            env[prefix + "HTTP_PROXY"] = http_proxy
        if https_proxy:
            env[prefix + "HTTPS_PROXY"] = https_proxy
        if joined:
            env[prefix + "NO_PROXY"] = joined
    return env


# --- etcd snapshots to S3 -------------------------------------------------------------------

def etcd_s3_problems(value):
    """Problems of k3s_node_etcd_s3 (endpoint, bucket, folder, region, access_key, secret_key,
    skip_ssl_verify, insecure). Credentials are never repeated in a message."""
    if value is None or value == {}:
        return []
    if not isinstance(value, dict):
        return ["k3s_node_etcd_s3 is not a mapping; use {endpoint: s3.lan:9000, bucket: k3s-snapshots, ...}"]
    problems = _unknown("k3s_node_etcd_s3", value, tuple(ETCD_S3_KEYS))
    if "bucket" not in value:
        problems.append("k3s_node_etcd_s3: bucket is not set; name the bucket the snapshots go to")
    elif not s3_bucket_ok(value["bucket"]):
        problems.append("k3s_node_etcd_s3.bucket is %r; use an S3 bucket name (3-63 of a-z, 0-9, '.', '-', starting and "
                        "ending with a letter or digit, no two adjacent dots, not shaped like an IP address)" % (value["bucket"],))
    if "endpoint" in value and not _full(HOST_PORT_RE, value["endpoint"]):
        problems.append("k3s_node_etcd_s3.endpoint is %r; use host[:port] without a scheme (like minio.lan:9000; "
                        "insecure: true for plain http)" % (value["endpoint"],))
    if "folder" in value and not (_full(S3_FOLDER_RE, value["folder"]) and not value["folder"].startswith("/")):
        problems.append("k3s_node_etcd_s3.folder is %r; use a key prefix without spaces or a leading '/' (like cluster1/etcd)"
                        % (value["folder"],))
    if "region" in value and not _full(S3_REGION_RE, value["region"]):
        problems.append("k3s_node_etcd_s3.region is %r; use a region name (like us-east-1)" % (value["region"],))
    for key in ("access_key", "secret_key"):
        if key in value and not _full(S3_CREDENTIAL_RE, value[key]):
            problems.append("k3s_node_etcd_s3.%s must be a one-line string without spaces (value not shown)" % key)
    if ("access_key" in value) != ("secret_key" in value):
        problems.append("k3s_node_etcd_s3: set access_key and secret_key together (or neither, for an IAM role)")
    for key in ETCD_S3_BOOLS:
        if key in value and not isinstance(value[key], bool):
            problems.append("k3s_node_etcd_s3.%s is %r; use true or false" % (key, value[key]))
    return problems


def etcd_s3_config(value, role="server"):
    """The config.yaml keys for k3s_node_etcd_s3 (servers only; {} when it is empty).

    ValueError (with what to change) when the value is not sound."""
    if not value or role != "server":
        return {}
    problems = etcd_s3_problems(value)
    if problems:
        raise ValueError("; ".join(problems))
    config = {"etcd-s3": True}
    for key, flag in ETCD_S3_KEYS.items():
        if key in value:
            config[flag] = value[key]
    return config


# --- kubeconfig -----------------------------------------------------------------------------

def cluster_name_problem(name):
    """'' when name is a DNS-1123 label (a kubeconfig cluster/user/context name), else the advice."""
    if _full(DNS_LABEL_RE, name):
        return ""
    return ("%r is not a DNS-1123 label; use at most 63 of a-z, 0-9 and '-', starting and ending "
            "alphanumeric (like gpu-cluster)" % (name,))


def _only(entries, what):
    if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
        raise ValueError("the k3s admin kubeconfig should hold exactly one %s" % what)
    return entries[0]


def kubeconfig_named(kubeconfig, name, server):
    """k3s's admin kubeconfig (a dict) with its cluster, user and context named `name`, the
    cluster's server set to `server` and current-context `name`. The input is not changed."""
    problem = cluster_name_problem(name)
    if problem:
        raise ValueError("the kubeconfig name " + problem)
    if not isinstance(kubeconfig, dict):
        raise ValueError("the k3s admin kubeconfig is not a YAML mapping")
    result = copy_data(kubeconfig)
    cluster = _only(result.get("clusters"), "cluster")
    user = _only(result.get("users"), "user")
    context = _only(result.get("contexts"), "context")
    cluster["name"] = name
    cluster.setdefault("cluster", {})["server"] = server
    user["name"] = name
    context["name"] = name
    context.setdefault("context", {}).update({"cluster": name, "user": name})
    result["current-context"] = name
    return result


def kubeconfig_merge(existing, ours):
    """Merge kubeconfig `ours` (from kubeconfig_named) into `existing` (a dict, or None/{} for a
    missing or empty file): entries of clusters, users and contexts named like ours are replaced,
    every other entry is kept in place; ours are appended when new. current-context stays as it
    was, or becomes ours when there was none. Neither input is changed."""
    if existing is None or existing == "":
        existing = {}
    if not isinstance(existing, dict):
        raise ValueError("the existing kubeconfig is not a YAML mapping; move it away or fix it")
    result = copy_data(existing)
    result.setdefault("apiVersion", "v1")
    result.setdefault("kind", "Config")
    for section in ("clusters", "users", "contexts"):
        entries = result.get(section) or []
        if not isinstance(entries, list):
            raise ValueError("the existing kubeconfig's %s is not a list; fix it or move the file away" % section)
        for new in ours.get(section) or []:
            for index, old in enumerate(entries):
                if isinstance(old, dict) and old.get("name") == new.get("name"):
                    entries[index] = copy_data(new)
                    break
            else:
                entries.append(copy_data(new))
        result[section] = entries
    if not result.get("current-context"):
        result["current-context"] = ours.get("current-context")
    result.setdefault("preferences", {})
    return result


# --- API VIP and node removal ---------------------------------------------------------------

def api_vip_problem(server_count, vip):
    """'' when the API endpoint is settled: a VIP is needed only with more than one server."""
    if server_count > 1 and (vip is None or vip == ""):
        return ("k3s_cluster: gpu_cluster_api_vip is not set; with %d servers the API needs a VIP (a free "
                "address in gpu_cluster_node_network) so clients and agents survive a server failure; only a "
                "single server may leave it unset (its node IP is then the API endpoint)" % server_count)
    return ""


def remove_node_problem(node, cluster_hosts, servers, allow_small_quorum=False):
    """'' when `node` may be removed by playbooks/remove_node.yml, else why not and what to do."""
    if not _is_str(node) or not node:
        return "Name the node to remove: -e remove_node=<inventory name>"
    if node not in (cluster_hosts or []):
        return "%s is not a host of k3s_cluster; name an inventory host of the cluster (-e remove_node=...)" % node
    servers = list(servers or [])
    if node not in servers:
        return ""
    remaining = len(servers) - 1
    if remaining == 0:
        return ("%s is the last server: removing it destroys the cluster. Use playbooks/reset.yml "
                "(-e k3s_reset_confirm=true) to remove the whole cluster instead" % node)
    if remaining < 3 and not allow_small_quorum:
        return ("removing %s leaves %d server(s): etcd then survives no server failure (%s). Add a server "
                "first, or run again with -e remove_node_allow_small_quorum=true if that is what you want"
                % (node, remaining, "two members need both" if remaining == 2 else "one member"))
    return ""


def reset_limit_problem(servers_in_run, servers, allow_small_quorum=False):
    """'' when playbooks/reset.yml may reset the servers of this run, else why not (remove_node.yml's rule).

    A reset limited to some servers leaves the others running etcd with the reset ones still counted as
    members: fewer than 3 remaining survive no further failure, so that is refused unless
    allow_small_quorum, as remove_node.yml refuses it. The whole cluster (every server) is reset freely.
    """
    servers = list(servers or [])
    in_run = [server for server in servers if server in (servers_in_run or [])]
    if not in_run or len(in_run) == len(servers):
        return ""
    remaining = len(servers) - len(in_run)
    if remaining < 3 and not allow_small_quorum:
        return ("resetting %s (--limit) leaves %d server(s): etcd then survives no server failure (%s), and the "
                "reset server(s) stay etcd members until removed. Use playbooks/remove_node.yml for one node (it "
                "removes its member through the API first), reset the whole cluster (no --limit), or run again "
                "with -e k3s_reset_allow_small_quorum=true if that is what you want"
                % (", ".join(in_run), remaining, "two members need both" if remaining == 2 else "one member"))
    return ""


# --- preflight ------------------------------------------------------------------------------

def _hosts(inv, name):
    return [host for host in inv.hosts(name) if _is_str(host)]


def _where(hosts):
    return hosts[0] if len(hosts) == 1 else "%s (and %d other host(s))" % (hosts[0], len(hosts) - 1)


def inventory_problems(inventory, hostvars=None):
    """Preflight of this module's settings over a whole inventory (inventory_checks calls it):
    k3s_node_registries and k3s_node_etcd_s3 on every k3s_cluster host that sets them (one message
    per distinct problem, naming the hosts), the proxy variables, and the VIP rule (a VIP only
    with more than one server). ``inventory``: a cluster_model.Inventory (or Ansible's groups, with
    ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    cluster = input_checks.unique(_hosts(inv, "k3s_cluster") + _hosts(inv, "k3s_servers") + _hosts(inv, "k3s_agents"))
    servers = _hosts(inv, "k3s_servers")
    found = {}

    def note(host, messages):
        for message in messages:
            found.setdefault(message, []).append(host)

    values = {}
    for host in cluster:
        variables = inv.vars(host)
        if "k3s_node_registries" in variables:
            note(host, registries_problems(variables["k3s_node_registries"]))
        if host in servers and "k3s_node_etcd_s3" in variables:
            note(host, etcd_s3_problems(variables["k3s_node_etcd_s3"]))
        for name in ("gpu_cluster_http_proxy", "gpu_cluster_https_proxy", "gpu_cluster_no_proxy", "gpu_cluster_api_vip"):
            if name in variables and name not in values:
                values[name] = variables[name]
    problems = ["%s: %s" % (_where(hosts), message) for message, hosts in found.items()]
    problems.extend(proxy_problems(values.get("gpu_cluster_http_proxy"), values.get("gpu_cluster_https_proxy"),
                                   values.get("gpu_cluster_no_proxy")))
    vip = api_vip_problem(len(servers), values.get("gpu_cluster_api_vip"))
    if vip:
        problems.append(vip)
    return problems
