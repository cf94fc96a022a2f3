"""k3s_parity: registries.yaml validation, proxy environment, etcd S3 keys, kubeconfig naming and
merge, the API VIP rule, node removal, and the preflight hook (issue 16, k3s-ansible parity)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s_parity as kp
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.inventory_checks import inventory_problems

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "kubeconfig"


# --- URLs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "http://proxy.lan:3128", "https://proxy.lan", "http://user:pa55@10.0.0.5:3128/", "http://[fd00::5]:3128",
    "http://PROXY.example.com:8080",
])
def test_good_proxy_urls(url):
    assert kp.url_problem(url) == ""


@pytest.mark.parametrize("url", [
    "proxy.lan:3128", "ftp://proxy.lan", "http://", "http://proxy.lan:3128\n", " http://proxy.lan",
    "http://proxy lan", "http://proxy.lan:99999", "http://proxy.lan:port", 'http://pro"xy', None, 3128,
    "http://-proxy.lan", "http:/proxy.lan", "http://proxy.lan:3128$x",
])
def test_bad_proxy_urls(url):
    assert "use a URL like" in kp.url_problem(url)


# --- registries.yaml ------------------------------------------------------------------------

GOOD_REGISTRIES = {
    "mirrors": {
        "docker.io": {"endpoint": ["https://mirror.lan:5000", "https://registry-1.docker.io"]},
        "*": {"endpoint": ["https://cache.lan"]},
        "registry.lan:5000": {"endpoint": ["http://registry.lan:5000"], "rewrite": {"^(.*)$": "lib/$1"}},
    },
    "configs": {
        "mirror.lan:5000": {"auth": {"username": "pull", "password": "s3cret-pw"},
                            "tls": {"ca_file": "/etc/ssl/mirror-ca.pem"}},
        "ghcr.io": {"auth": {"auth": "dXNlcjpwdw=="}},
        "quay.io": {"auth": {"identity_token": "tok"}},
        "registry.lan:5000": {"tls": {"insecure_skip_verify": True, "cert_file": "/etc/c.pem", "key_file": "/etc/k.pem"}},
    },
}


def test_good_registries_have_no_problems():
    assert kp.registries_problems(GOOD_REGISTRIES) == []
    assert kp.registries_problems({}) == []
    assert kp.registries_problems(None) == []


def _broken(change):
    value = copy.deepcopy(GOOD_REGISTRIES)
    change(value)
    return kp.registries_problems(value)


@pytest.mark.parametrize("change, needle", [
    (lambda v: v.update(mirror={}), "unknown key(s) mirror"),
    (lambda v: v.update(mirrors=["docker.io"]), "mirrors is not a mapping"),
    (lambda v: v["mirrors"]["docker.io"].update(endpoint="https://mirror.lan"), "endpoint must be a non-empty list"),
    (lambda v: v["mirrors"]["docker.io"].update(endpoint=[]), "endpoint must be a non-empty list"),
    (lambda v: v["mirrors"]["docker.io"].update(endpoint=["mirror.lan:5000"]), "endpoint entry 'mirror.lan:5000' is not a URL"),
    (lambda v: v["mirrors"]["docker.io"].update(endpoints=["https://m"]), "unknown key(s) endpoints"),
    (lambda v: v["mirrors"]["docker.io"].update(rewrite=["x"]), "rewrite must map"),
    (lambda v: v["mirrors"].update({"bad name": {"endpoint": ["https://m"]}}), "'bad name' is not a registry name"),
    (lambda v: v["mirrors"].update({"docker.io": "https://m"}), "is not a mapping; use {endpoint"),
    (lambda v: v["configs"]["ghcr.io"].update(auth={"username": "u"}), "exactly one of: username and password"),
    (lambda v: v["configs"]["ghcr.io"].update(auth={"username": "u", "password": "p", "auth": "x"}), "exactly one of"),
    (lambda v: v["configs"]["ghcr.io"].update(auth={}), "it holds nothing"),
    (lambda v: v["configs"]["ghcr.io"].update(auth={"username": "u", "password": ""}), "password must be non-empty strings"),
    (lambda v: v["configs"]["ghcr.io"].update(auth={"user": "u", "password": "p"}), "unknown key(s) user"),
    (lambda v: v["configs"]["ghcr.io"].update(auth="u:p"), "auth is not a mapping"),
    (lambda v: v["configs"]["quay.io"].update(tls={"ca_file": "ca.pem"}), "tls.ca_file must be an absolute path"),
    (lambda v: v["configs"]["quay.io"].update(tls={"insecure_skip_verify": "yes"}), "insecure_skip_verify must be true or false"),
    (lambda v: v["configs"]["quay.io"].update(tls={"cert_file": "/c.pem"}), "set cert_file and key_file together"),
    (lambda v: v["configs"]["quay.io"].update(tls={"verify": False}), "unknown key(s) verify"),
    (lambda v: v["configs"].update({"x.io": {}}), "holds neither auth nor tls"),
])
def test_registry_problems_are_named(change, needle):
    problems = _broken(change)
    assert any(needle in problem for problem in problems), problems


def test_registry_messages_never_show_credentials():
    value = copy.deepcopy(GOOD_REGISTRIES)
    value["configs"]["ghcr.io"]["auth"] = {"username": "u", "password": 12345, "auth": "c2VjcmV0"}
    text = " ".join(kp.registries_problems(value))
    assert "12345" not in text and "c2VjcmV0" not in text


def test_registries_of_the_wrong_type():
    assert "not a mapping" in kp.registries_problems(["docker.io"])[0]


# --- proxy environment ----------------------------------------------------------------------

def test_no_proxy_list_holds_the_cluster_and_is_unique():
    entries = kp.no_proxy_list([".lan", "10.0.0.11"], "10.42.0.0/16", "10.43.0.0/16",
                               ["10.0.0.11", "10.0.0.12", "", "10.0.0.11"], "10.0.0.100")
    assert entries == [".lan", "10.0.0.11", "localhost", "127.0.0.1", "10.42.0.0/16", "10.43.0.0/16",
                       "10.0.0.12", "10.0.0.100", ".svc", ".cluster.local"]


def test_no_proxy_list_without_vip_or_extra():
    assert kp.no_proxy_list(None, "10.42.0.0/16", "", ["10.0.0.11"], "") == [
        "localhost", "127.0.0.1", "10.42.0.0/16", "10.0.0.11", ".svc", ".cluster.local"]


def test_proxy_env_sets_k3s_and_containerd_variables():
    env = kp.proxy_env("http://proxy.lan:3128", "http://proxy.lan:3129", ["localhost", ".svc"])
    assert env == {
        "HTTP_PROXY": "http://proxy.lan:3128", "HTTPS_PROXY": "http://proxy.lan:3129", "NO_PROXY": "localhost,.svc",
        "CONTAINERD_HTTP_PROXY": "http://proxy.lan:3128", "CONTAINERD_HTTPS_PROXY": "http://proxy.lan:3129",
        "CONTAINERD_NO_PROXY": "localhost,.svc",
    }
    assert list(env)[:3] == ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]


def test_proxy_env_with_one_proxy_only():
    env = kp.proxy_env("", "https://proxy.lan", ["localhost"])
    assert env == {"HTTPS_PROXY": "https://proxy.lan", "NO_PROXY": "localhost",
                   "CONTAINERD_HTTPS_PROXY": "https://proxy.lan", "CONTAINERD_NO_PROXY": "localhost"}


def test_no_proxy_alone_writes_nothing():
    assert kp.proxy_env("", "", ["localhost"]) == {}
    assert kp.proxy_env() == {}


def test_proxy_problems():
    assert kp.proxy_problems("http://proxy.lan:3128", None, [".lan", "10.0.0.0/24"]) == []
    assert kp.proxy_problems(None, "", None) == []
    problems = kp.proxy_problems("proxy.lan:3128", "http://u:pw@proxy lan", "a,b")
    assert len(problems) == 3
    assert "gpu_cluster_http_proxy is 'proxy.lan:3128'" in problems[0]
    assert "value not shown" in problems[1] and "pw" not in problems[1]
    assert "gpu_cluster_no_proxy" in problems[2]
    assert kp.proxy_problems(None, None, ["a b"]) and kp.proxy_problems(None, None, [".lan", 3])


# --- etcd snapshots to S3 -------------------------------------------------------------------

S3 = {"endpoint": "minio.lan:9000", "bucket": "k3s-snapshots", "folder": "homelab/etcd", "region": "us-east-1",
      "access_key": "AKIAEXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG", "skip_ssl_verify": False, "insecure": True}


def test_etcd_s3_config_keys():
    assert kp.etcd_s3_config(S3) == {
        "etcd-s3": True, "etcd-s3-endpoint": "minio.lan:9000", "etcd-s3-bucket": "k3s-snapshots",
        "etcd-s3-folder": "homelab/etcd", "etcd-s3-region": "us-east-1", "etcd-s3-access-key": "AKIAEXAMPLE",
        "etcd-s3-secret-key": "wJalrXUtnFEMI/K7MDENG", "etcd-s3-skip-ssl-verify": False, "etcd-s3-insecure": True}
    assert kp.etcd_s3_config({"bucket": "snaps"}) == {"etcd-s3": True, "etcd-s3-bucket": "snaps"}


def test_etcd_s3_only_on_servers_and_when_set():
    assert kp.etcd_s3_config(S3, "agent") == {}
    assert kp.etcd_s3_config({}) == {}
    assert kp.etcd_s3_config(None) == {}


@pytest.mark.parametrize("change, needle", [
    ({"bucket": None}, "bucket is None"),
    ({"bucket": "Bad_Bucket"}, "use an S3 bucket name"),
    ({"endpoint": "https://minio.lan:9000"}, "without a scheme"),
    ({"folder": "/etcd"}, "without spaces or a leading '/'"),
    ({"region": "US East"}, "use a region name"),
    ({"insecure": "true"}, "insecure is 'true'; use true or false"),
    ({"secret_key": "two words"}, "secret_key must be a one-line string"),
    ({"bucket_name": "x"}, "unknown key(s) bucket_name"),
])
def test_etcd_s3_problems(change, needle):
    value = dict(S3, **change)
    problems = kp.etcd_s3_problems(value)
    assert any(needle in problem for problem in problems), problems
    with pytest.raises(ValueError):
        kp.etcd_s3_config(value)


def test_etcd_s3_needs_a_bucket_and_both_keys():
    assert "bucket is not set" in kp.etcd_s3_problems({"endpoint": "s3.lan"})[0]
    assert "set access_key and secret_key together" in " ".join(kp.etcd_s3_problems({"bucket": "abc", "access_key": "x"}))
    assert kp.etcd_s3_problems("s3://x") == ["k3s_node_etcd_s3 is not a mapping; use {endpoint: s3.lan:9000, bucket: k3s-snapshots, ...}"]


def test_etcd_s3_messages_never_show_the_secret():
    text = " ".join(kp.etcd_s3_problems(dict(S3, secret_key="my secret", access_key="AK ID")))
    assert "my secret" not in text and "AK ID" not in text


# --- kubeconfig -----------------------------------------------------------------------------

def _k3s_yaml():
    return yaml.safe_load((FIXTURES / "k3s.yaml").read_text())


def test_kubeconfig_named_after_the_cluster():
    original = _k3s_yaml()
    named = kp.kubeconfig_named(original, "homelab", "https://10.0.0.100:6443")
    assert [c["name"] for c in named["clusters"]] == ["homelab"]
    assert named["clusters"][0]["cluster"]["server"] == "https://10.0.0.100:6443"
    assert named["clusters"][0]["cluster"]["certificate-authority-data"] == original["clusters"][0]["cluster"]["certificate-authority-data"]
    assert [u["name"] for u in named["users"]] == ["homelab"]
    assert named["users"][0]["user"] == original["users"][0]["user"]
    assert named["contexts"] == [{"name": "homelab", "context": {"cluster": "homelab", "user": "homelab"}}]
    assert named["current-context"] == "homelab"
    assert "default" not in yaml.safe_dump(named).replace("certificate", "")
    assert original["clusters"][0]["name"] == "default"  # input untouched


@pytest.mark.parametrize("name", ["Homelab", "home_lab", "", "-x", "a" * 64, None])
def test_kubeconfig_name_must_be_a_dns_label(name):
    with pytest.raises(ValueError, match="DNS-1123 label"):
        kp.kubeconfig_named(_k3s_yaml(), name, "https://10.0.0.100:6443")


def test_kubeconfig_named_refuses_an_unexpected_file():
    with pytest.raises(ValueError, match="exactly one cluster"):
        kp.kubeconfig_named({"clusters": [], "users": [{}], "contexts": [{}]}, "x", "https://a:6443")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        kp.kubeconfig_named("text", "x", "https://a:6443")


def test_merge_replaces_only_our_entries_and_keeps_the_rest():
    existing = yaml.safe_load((FIXTURES / "existing-config.yaml").read_text())
    ours = kp.kubeconfig_named(_k3s_yaml(), "homelab", "https://10.0.0.100:6443")
    merged = kp.kubeconfig_merge(existing, ours)
    assert [c["name"] for c in merged["clusters"]] == ["kind-dev", "homelab"]
    assert merged["clusters"][0] == existing["clusters"][0]
    assert merged["clusters"][1] == ours["clusters"][0]
    assert [u["name"] for u in merged["users"]] == ["kind-dev", "homelab"]
    assert "token" not in merged["users"][1]["user"]  # the old user is gone, not mixed in
    assert merged["contexts"][1] == {"name": "homelab", "context": {"cluster": "homelab", "user": "homelab"}}
    assert merged["current-context"] == "kind-dev"
    assert existing["users"][1]["user"] == {"token": "old-token-of-a-rebuilt-cluster"}  # input untouched
    assert kp.kubeconfig_merge(merged, ours) == merged  # idempotent


def test_merge_appends_a_new_cluster():
    existing = yaml.safe_load((FIXTURES / "existing-config.yaml").read_text())
    ours = kp.kubeconfig_named(_k3s_yaml(), "gpu-cluster", "https://10.0.0.11:6443")
    merged = kp.kubeconfig_merge(existing, ours)
    assert [c["name"] for c in merged["clusters"]] == ["kind-dev", "homelab", "gpu-cluster"]
    assert [c["name"] for c in merged["contexts"]] == ["kind-dev", "homelab", "gpu-cluster"]


@pytest.mark.parametrize("existing", [None, "", {}])
def test_merge_into_nothing_gives_our_kubeconfig(existing):
    ours = kp.kubeconfig_named(_k3s_yaml(), "homelab", "https://10.0.0.100:6443")
    merged = kp.kubeconfig_merge(existing, ours)
    assert merged["current-context"] == "homelab"
    assert merged["apiVersion"] == "v1" and merged["kind"] == "Config"
    for section in ("clusters", "users", "contexts"):
        assert merged[section] == ours[section]


def test_merge_refuses_a_broken_file():
    ours = kp.kubeconfig_named(_k3s_yaml(), "homelab", "https://10.0.0.100:6443")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        kp.kubeconfig_merge(["x"], ours)
    with pytest.raises(ValueError, match="clusters is not a list"):
        kp.kubeconfig_merge({"clusters": {"a": 1}}, ours)


# --- VIP and node removal -------------------------------------------------------------------

def test_vip_needed_only_with_more_than_one_server():
    assert kp.api_vip_problem(1, None) == ""
    assert kp.api_vip_problem(1, "") == ""
    assert kp.api_vip_problem(3, "10.0.0.100") == ""
    message = kp.api_vip_problem(3, None)
    assert "with 3 servers the API needs a VIP" in message and "single server may leave it unset" in message
    assert kp.api_vip_problem(3, "")


SERVERS = ["cp1", "cp2", "cp3"]


@pytest.mark.parametrize("node, servers, allow, needle", [
    ("wk1", SERVERS, False, ""),
    ("cp3", [*SERVERS, "cp4", "cp5"], False, ""),
    ("cp3", SERVERS, True, ""),
    ("cp3", SERVERS, False, "leaves 2 server(s)"),
    ("cp2", ["cp1", "cp2"], False, "leaves 1 server(s)"),
    ("cp1", ["cp1"], True, "is the last server"),
    ("nope", SERVERS, False, "is not a host of k3s_cluster"),
    ("", SERVERS, False, "-e remove_node="),
    (None, SERVERS, False, "-e remove_node="),
])
def test_remove_node_problem(node, servers, allow, needle):
    problem = kp.remove_node_problem(node, [*servers, "wk1"], servers, allow)
    if needle:
        assert needle in problem
    else:
        assert problem == ""


# --- preflight hook -------------------------------------------------------------------------

def _inventory(servers=3, **all_vars):
    names = [f"cp{i}" for i in range(1, servers + 1)]
    groups = {"all": [*names, "wk1"], "k3s_cluster": [*names, "wk1"], "k3s_servers": names, "k3s_agents": ["wk1"]}
    hostvars = {host: dict(all_vars) for host in groups["all"]}
    return groups, hostvars


def test_preflight_hook_accepts_a_sound_inventory():
    groups, hostvars = _inventory(gpu_cluster_api_vip="10.0.0.100", gpu_cluster_http_proxy="http://proxy.lan:3128",
                                  gpu_cluster_no_proxy=[".lan"], k3s_node_registries=GOOD_REGISTRIES, k3s_node_etcd_s3=S3)
    assert kp.inventory_problems(groups, hostvars) == []


def test_preflight_hook_names_every_problem_once():
    groups, hostvars = _inventory(gpu_cluster_http_proxy="proxy.lan", k3s_node_registries={"mirrors": []},
                                  k3s_node_etcd_s3={"bucket": "x"})
    problems = kp.inventory_problems(groups, hostvars)
    assert any(p.startswith("cp1 (and 3 other host(s)): k3s_node_registries.mirrors") for p in problems), problems
    assert any(p.startswith("cp1 (and 2 other host(s)): k3s_node_etcd_s3.bucket") for p in problems), problems
    assert any("gpu_cluster_http_proxy is 'proxy.lan'" in p for p in problems)
    assert any("with 3 servers the API needs a VIP" in p for p in problems)
    assert len(problems) == 4


def test_etcd_s3_on_agents_is_not_checked():
    groups, hostvars = _inventory(servers=1)
    hostvars["wk1"]["k3s_node_etcd_s3"] = {"bucket": "x"}
    assert kp.inventory_problems(groups, hostvars) == []


def test_single_server_without_vip_passes_the_whole_preflight():
    """inventory_checks no longer requires the VIP itself: one server without it is sound."""
    groups, hostvars = _inventory(servers=1)
    problems = inventory_problems(groups, hostvars)
    assert not any("gpu_cluster_api_vip" in p for p in problems), problems
    groups, hostvars = _inventory(servers=3)
    problems = inventory_problems(groups, hostvars)
    assert [p for p in problems if "gpu_cluster_api_vip" in p] == [kp.api_vip_problem(3, None)]


def test_a_reset_limited_to_servers_follows_remove_nodes_quorum_rule():
    """Issue 42: reset.yml --limit <one server> leaves etcd with two members (and the reset one still
    counted): refused as remove_node.yml refuses it, unless allowed; the whole cluster is reset freely."""
    servers = ["cp1", "cp2", "cp3"]
    problem = kp.reset_limit_problem(["cp2", "wk1"], servers)
    assert "resetting cp2 (--limit) leaves 2 server(s)" in problem and "remove_node.yml" in problem
    assert "k3s_reset_allow_small_quorum=true" in problem
    assert kp.reset_limit_problem(["cp2"], servers, allow_small_quorum=True) == ""
    assert kp.reset_limit_problem([*servers, "wk1"], servers) == ""  # the whole cluster
    assert kp.reset_limit_problem(["wk1"], servers) == ""  # agents only
    assert kp.reset_limit_problem(["cp5"], [*servers, "cp4", "cp5"]) == ""  # four remain


# Issue 43: S3 bucket names as S3 and MinIO take them (AWS S3 user guide, "General purpose bucket naming
# rules"; minio-go pkg/s3utils CheckValidBucketNameStrict): no two adjacent periods, not shaped like an
# IP address, no xn-- prefix or -s3alias suffix; dots elsewhere are fine.
@pytest.mark.parametrize(("bucket", "accepted"), [
    ("k3s-etcd", True), ("my.bucket.name", True), ("a1b", True), ("docexamplebucket1", True),
    ("my..bucket", False), ("192.168.5.4", False), ("10.0.0.1", False), ("xn--bucket", False),
    ("bucket-s3alias", False), ("ab", False), ("-bucket", False), ("bucket.", False), ("a" * 64, False),
])
def test_s3_bucket_names(bucket, accepted):
    assert kp.s3_bucket_ok(bucket) is accepted
    problems = kp.etcd_s3_problems(dict(S3, bucket=bucket))
    assert any("use an S3 bucket name" in p for p in problems) is not accepted, problems
