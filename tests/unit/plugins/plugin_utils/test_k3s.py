"""k3s module_utils: token, config.yaml dict, interfaces, checksums, versions, labels/taints."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_token
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components, k3s


def test_generated_tokens_are_random_and_safe():
    tokens = {k3s_token.generate_token() for _index in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert len(token) == 64
        assert "%" not in token
        assert k3s_token.token_problem(token) == ""


def test_generate_token_refuses_short_entropy():
    with pytest.raises(ValueError):
        k3s_token.generate_token(8)


@pytest.mark.parametrize("token, fragment", [
    ("", "empty"),
    ("abcdefgh%abcdefghij", "'%'"),
    ("abc def ghijklmnopq", "A-Z a-z 0-9"),
    ("K10abc::server:abcdefgh", "A-Z a-z 0-9"),
    ('abcdefghijklmnop"q', "A-Z a-z 0-9"),
    ("short", "16-256"),
    (None, "empty"),
])
def test_unsafe_tokens_are_named(token, fragment):
    assert fragment in k3s_token.token_problem(token)


BASE = dict(node_ip="10.0.0.11", flannel_iface="ens18", tls_san=["10.0.0.100", "cp1", "10.0.0.11", "cp1"],
            cluster_cidr="10.42.0.0/16", service_cidr="10.43.0.0/16")


def test_first_server_config():
    config = k3s.node_config("server", cluster_init=True, **BASE)
    assert config["cluster-init"] is True
    assert "server" not in config
    assert config["tls-san"] == ["10.0.0.100", "10.0.0.11", "cp1"]
    assert config["secrets-encryption"] is True
    assert config["write-kubeconfig-mode"] == "0600"
    assert config["etcd-snapshot-schedule-cron"] == "0 */6 * * *"
    assert config["etcd-snapshot-retention"] == 20
    assert config["node-ip"] == "10.0.0.11"
    assert config["flannel-iface"] == "ens18"
    assert config["cluster-cidr"] == "10.42.0.0/16"
    assert config["service-cidr"] == "10.43.0.0/16"
    assert "node-label" not in config and "node-taint" not in config
    assert "token" not in config


def test_joining_server_config():
    config = k3s.node_config("server", server_url="https://10.0.0.100:6443", **BASE)
    assert config["server"] == "https://10.0.0.100:6443"
    assert "cluster-init" not in config


def test_gpu_agent_config():
    config = k3s.node_config("agent", node_ip="10.0.0.21", flannel_iface="ens18",
                             server_url="https://10.0.0.100:6443", labels=["gpu=true"],
                             taints=["nvidia.com/gpu=true:NoSchedule"])
    assert config == {
        "server": "https://10.0.0.100:6443",
        "node-ip": "10.0.0.21",
        "flannel-iface": "ens18",
        "node-label": ["gpu=true"],
        "node-taint": ["nvidia.com/gpu=true:NoSchedule"],
    }


def test_app_agent_has_no_labels_or_taints():
    config = k3s.node_config("agent", node_ip="10.0.0.31", flannel_iface="ens18",
                             server_url="https://10.0.0.100:6443", labels=[], taints=[])
    assert "node-label" not in config and "node-taint" not in config
    assert "secrets-encryption" not in config and "cluster-init" not in config


def test_labels_as_dict_are_sorted_and_extra_wins():
    config = k3s.node_config("agent", node_ip="1.2.3.4", flannel_iface="e", server_url="https://x:6443",
                             labels={"b": "2", "a": "1"}, extra={"kubelet-arg": ["max-pods=200"]})
    assert config["node-label"] == ["a=1", "b=2"]
    assert config["kubelet-arg"] == ["max-pods=200"]


@pytest.mark.parametrize("kwargs", [
    dict(role="agent", cluster_init=True),
    dict(role="server", cluster_init=True, server_url="https://x:6443"),
    dict(role="server"),
    dict(role="master", cluster_init=True),
])
def test_contradictory_configs_are_refused(kwargs):
    with pytest.raises(ValueError):
        k3s.node_config(node_ip="1.2.3.4", flannel_iface="e", **kwargs)


FACTS = {
    "interfaces": ["lo", "ens18", "vmbr-0"],
    "lo": {"device": "lo", "ipv4": {"address": "127.0.0.1"}},
    "ens18": {"device": "ens18", "ipv4": {"address": "10.0.0.21"}},
    "vmbr_0": {"device": "vmbr-0", "ipv4": {"address": "192.168.1.5"},
               "ipv4_secondaries": [{"address": "10.0.0.100"}]},
}


@pytest.mark.parametrize("address, iface", [
    ("10.0.0.21", "ens18"), ("10.0.0.100", "vmbr-0"), ("10.9.9.9", ""), ("127.0.0.1", "lo"),
])
def test_interface_for_ip(address, iface):
    assert k3s.interface_for_ip(FACTS, address) == iface


def test_duplicate_hostnames():
    assert k3s.duplicate_hostnames({"cp1": "debian", "cp2": "cp2", "wk1": "Debian", "x": ""}) == {
        "debian": ["cp1", "wk1"]}
    assert k3s.duplicate_hostnames({"cp1": "cp1", "cp2": "cp2"}) == {}


SUMS = ("a" * 64 + "  k3s\n" + "b" * 64 + "  k3s-airgap-images-amd64.tar.zst\n"
        + "c" * 64 + " *k3s-arm64\n")


def test_sha256_for():
    assert k3s.sha256_for(SUMS, "k3s") == "a" * 64
    assert k3s.sha256_for(SUMS, "k3s-arm64") == "c" * 64
    with pytest.raises(ValueError):
        k3s.sha256_for(SUMS, "k3s-armhf")


@pytest.mark.parametrize("arch, name, rel", [
    ("x86_64", "k3s", "amd64"), ("amd64", "k3s", "amd64"), ("aarch64", "k3s-arm64", "arm64"),
])
def test_binary_names(arch, name, rel):
    assert k3s.binary_name(arch) == name
    assert k3s.release_arch(arch) == rel


def test_unknown_arch():
    with pytest.raises(ValueError):
        k3s.binary_name("s390x")


@pytest.mark.parametrize("current, wanted, down", [
    ("v1.33.5+k3s1", "v1.33.4+k3s1", True),
    ("v1.33.5+k3s1", "v1.33.5+k3s1", False),
    ("v1.33.5+k3s1", "v1.33.5+k3s2", False),
    ("v1.33.5+k3s2", "v1.33.5+k3s1", True),
    ("v1.31.6+k3s1", "v1.33.5+k3s1", False),
    ("v1.34.0-rc1+k3s1", "v1.34.0+k3s1", False),
    ("v1.34.0+k3s1", "v1.34.0-rc1+k3s1", True),
    ("v1.9.0+k3s1", "v1.10.0+k3s1", False),
])
def test_is_downgrade(current, wanted, down):
    assert k3s.is_downgrade(current, wanted) is down


def test_bad_version():
    with pytest.raises(ValueError):
        k3s.parse_version("latest")


def test_version_from_output():
    out = "k3s version v1.33.5+k3s1 (6cb0ee2e)\ngo version go1.24.6\n"
    assert k3s.version_from_output(out) == "v1.33.5+k3s1"
    assert k3s.version_from_output("") == ""


def test_labels_and_taints():
    assert k3s.label_dict(["gpu=true", "node-role.kubernetes.io/infra=true"]) == {
        "gpu": "true", "node-role.kubernetes.io/infra": "true"}
    assert k3s.taint_dicts(["nvidia.com/gpu=true:NoSchedule", "dedicated:NoExecute"]) == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]
    with pytest.raises(ValueError):
        k3s.taint_dicts(["gpu=true:Never"])


# --- issue 11: version gate, token rules, bootstrap decision -------------------------------

FULL = "K10" + "0f" * 32 + "::server:cluster-secret-0123456789"


@pytest.mark.parametrize("current, wanted, fragment", [
    ("", "v1.33.5+k3s1", ""),                          # no k3s yet
    ("v1.33.5+k3s1", "v1.33.5+k3s1", ""),              # same
    ("v1.33.5+k3s1", "v1.33.6+k3s1", ""),              # patch
    ("v1.33.5+k3s1", "v1.33.5+k3s2", ""),              # k3s revision
    ("v1.33.5+k3s1", "v1.34.1+k3s1", ""),              # next minor
    ("v1.33.5+k3s1", "v1.32.9+k3s1", "does not support downgrades"),
    ("v1.33.5+k3s2", "v1.33.5+k3s1", "does not support downgrades"),
    ("v1.31.6+k3s1", "v1.34.1+k3s1", "skips minor versions"),
    ("v1.33.5+k3s1", "v2.0.0+k3s1", "skips minor versions"),
])
def test_version_problem(current, wanted, fragment):
    problem = k3s.version_problem(current, wanted)
    if not fragment:
        assert problem == ""
    else:
        assert fragment in problem and current in problem and wanted in problem


def test_version_problem_names_what_to_change_and_overrides():
    down = k3s.version_problem("v1.33.5+k3s1", "v1.32.9+k3s1")
    assert "gpu_cluster_k3s_version" in down and "k3s_install_allow_downgrade=true" in down
    skip = k3s.version_problem("v1.31.6+k3s1", "v1.34.1+k3s1")
    assert "one minor at a time" in skip and "v1.32.x" in skip and "k3s_install_allow_skip_minor=true" in skip
    assert k3s.version_problem("v1.33.5+k3s1", "v1.32.9+k3s1", allow_downgrade=True) == ""
    assert k3s.version_problem("v1.31.6+k3s1", "v1.34.1+k3s1", allow_skip_minor=True) == ""


@pytest.mark.parametrize("servers, wanted", [
    ({}, "v1.34.1+k3s1"),                                                  # no server known
    ({"cp1": "", "cp2": ""}, "v1.34.1+k3s1"),                              # none runs k3s yet
    ({"cp1": "v1.33.5+k3s1", "cp2": "v1.33.5+k3s1"}, "v1.33.5+k3s1"),      # the cluster's version
    ({"cp1": "v1.33.5+k3s1", "cp2": ""}, "v1.33.5+k3s1"),                  # cp2 down
    ({"cp1": "v1.33.5+k3s1"}, "v1.32.9+k3s1"),                             # older: the gate's downgrade
])
def test_join_version_accepted(servers, wanted):
    assert k3s.join_version_problem(servers, wanted) == ""


def test_join_version_newer_than_the_servers_refused_naming_what_to_change():
    problem = k3s.join_version_problem({"cp1": "v1.33.5+k3s1", "cp2": "v1.33.5+k3s1", "cp3": ""}, "v1.33.6+k3s1")
    assert problem == ("the servers run k3s v1.33.5+k3s1 and gpu_cluster_k3s_version is v1.33.6+k3s1: a node must "
                       "not run a newer k3s than the servers. Run playbooks/upgrade.yml first, or set "
                       "gpu_cluster_k3s_version to v1.33.5+k3s1 to join at the version the cluster runs.")
    assert "newer k3s" in k3s.join_version_problem({"cp1": "v1.33.5+k3s1"}, "v1.33.5+k3s2")


def test_join_version_refused_halfway_through_an_upgrade():
    problem = k3s.join_version_problem({"cp1": "v1.34.1+k3s1", "cp2": "v1.33.5+k3s1", "cp3": "v1.33.10+k3s1"},
                                       "v1.34.1+k3s1")
    # the versions in version order, not text order
    assert problem == ("the servers run different k3s versions (v1.33.5+k3s1, v1.33.10+k3s1, v1.34.1+k3s1): "
                       "finish the upgrade with playbooks/upgrade.yml before adding nodes.")


def test_current_version_prefers_what_the_node_runs():
    assert k3s.current_version("v1.33.5+k3s1", "k3s version v1.34.1+k3s1 (abc)") == "v1.33.5+k3s1"
    assert k3s.current_version("", "k3s version v1.34.1+k3s1 (abc)\ngo version go1.24") == "v1.34.1+k3s1"
    assert k3s.current_version("error: connection refused", "k3s version v1.34.1+k3s1 (x)") == "v1.34.1+k3s1"
    assert k3s.current_version("", "") == ""


def test_full_token_form_is_accepted_and_has_a_secret():
    assert k3s_token.token_problem(FULL) == ""
    assert k3s_token.token_problem(FULL + "\n") == ""
    assert k3s_token.token_problem("K10zz::server:x") != ""
    assert k3s_token.token_secret(FULL) == "cluster-secret-0123456789"
    assert k3s_token.token_secret(" short-token-0123456789\n") == "short-token-0123456789"


def test_token_plan():
    # generated once, then kept
    token, generated = k3s_token.token_plan(None)
    assert generated and len(token) == 64
    assert k3s_token.token_plan(token + "\n") == (token, False)
    # given: written; whitespace ignored
    assert k3s_token.token_plan(None, " given-token-0123456789\n") == ("given-token-0123456789", False)
    assert k3s_token.token_plan("given-token-0123456789", "given-token-0123456789\n") == ("given-token-0123456789", False)
    # same secret in the full form: kept as stored
    assert k3s_token.token_plan("cluster-secret-0123456789", FULL) == ("cluster-secret-0123456789", False)
    # recovered from the running server
    assert k3s_token.token_plan(None, None, FULL + "\n", initialised=True) == (FULL, False)


@pytest.mark.parametrize("stored, given, running", [
    ("old-token-0123456789", "brand-value-0123456789", None),
    (None, "brand-value-0123456789", FULL),
    ("cluster-secret-0123456789", "K10" + "0f" * 32 + "::server:another-secret-0123", None),
])
def test_token_plan_refuses_a_changed_token(stored, given, running):
    with pytest.raises(ValueError) as info:
        k3s_token.token_plan(stored, given, running, initialised=True)
    assert "k3s token rotate" in str(info.value) and "k3s_token" in str(info.value)
    assert "brand-value" not in str(info.value) and "another-secret" not in str(info.value)


def test_token_plan_refuses_to_generate_for_an_initialised_cluster():
    with pytest.raises(ValueError, match="already initialised"):
        k3s_token.token_plan(None, None, None, initialised=True)
    with pytest.raises(ValueError, match="k3s_token"):
        k3s_token.token_plan(None, "with%percent0123456789")


SERVERS = ["cp1", "cp2", "cp3"]


def test_bootstrap_fresh_cluster_first_server_inits():
    plan = k3s.bootstrap_plan(SERVERS, "cp1", {})
    assert plan == {"cluster_init": "cp1", "api_server": "cp1", "token_server": "cp1", "initialised": [],
                    "problem": ""}


def test_bootstrap_rebuilt_first_server_joins_a_healthy_one():
    probes = {"cp1": {"reachable": True},
              "cp2": {"etcd": True, "token": True, "api": True},
              "cp3": {"etcd": True, "token": True, "api": True}}
    plan = k3s.bootstrap_plan(SERVERS, "cp1", probes)
    assert plan["cluster_init"] == ""
    assert plan["api_server"] == "cp2" and plan["token_server"] == "cp2"
    assert plan["initialised"] == ["cp2", "cp3"]


def test_bootstrap_running_cluster_keeps_cluster_init_on_its_first_server():
    probes = {s: {"etcd": True, "token": True, "api": True} for s in SERVERS}
    plan = k3s.bootstrap_plan(SERVERS, "cp1", probes)
    assert plan["cluster_init"] == "cp1" and plan["api_server"] == "cp1"


def test_bootstrap_first_server_down_day2_goes_through_the_next_healthy():
    probes = {"cp1": {"reachable": False},
              "cp2": {"etcd": True, "token": True, "api": False},
              "cp3": {"etcd": True, "token": True, "api": True}}
    plan = k3s.bootstrap_plan(SERVERS, "cp1", probes)
    assert plan["api_server"] == "cp3" and plan["token_server"] == "cp2" and plan["cluster_init"] == ""


def test_bootstrap_mid_build_first_server_initialised_others_not():
    probes = {"cp1": {"etcd": True, "token": True, "api": True}}
    plan = k3s.bootstrap_plan(SERVERS, "cp1", probes)
    assert plan["cluster_init"] == "cp1" and plan["token_server"] == "cp1"


def test_bootstrap_rebuilt_first_server_with_its_peers_unreachable_is_refused():
    # unreachable is not absent: cp2 and cp3 may still run the cluster
    probes = {"cp1": {"reachable": True}, "cp2": {"reachable": False}, "cp3": {"reachable": False}}
    plan = k3s.bootstrap_plan(SERVERS, "cp1", probes)
    assert plan["cluster_init"] == "cp1" and plan["initialised"] == []
    assert "cp1 would start a new cluster (cluster-init), but cp2, cp3 could not be reached" in plan["problem"]
    assert "remove them from k3s_servers" in plan["problem"]


@pytest.mark.parametrize("probes", [
    {},  # a fresh cluster
    {"cp1": {"etcd": True, "api": True}, "cp2": {"reachable": False}},  # cp1 runs it: a peer down is fine
    {"cp1": {"reachable": False}, "cp2": {"etcd": True}, "cp3": {"etcd": True}},  # cp2 runs it: cp1 joins
])
def test_bootstrap_no_problem_when_no_second_cluster_can_start(probes):
    assert k3s.bootstrap_plan(SERVERS, "cp1", probes)["problem"] == ""


def _restore(probes, name="snap-1", backups=None, s3=False, off=("cp1", "cp2", "cp3"), token=True):  # noqa: PLR0917 - the plan's order
    return k3s.restore_plan(SERVERS, "cp1", probes, name, backups, s3, list(off), token)


UP = {"reachable": True}


def test_restore_on_the_first_server_holding_the_snapshot():
    plan = _restore({"cp1": UP, "cp2": {**UP, "snapshot": True}, "cp3": {**UP, "snapshot": True}})
    assert plan == {"restore_server": "cp2", "source": "local", "backup": "", "stop": ["cp2", "cp1", "cp3"],
                    "rejoin": ["cp1", "cp3"], "down": [], "problem": ""}


def test_restore_with_the_first_server_down():
    plan = _restore({"cp1": {"reachable": False}, "cp2": UP, "cp3": {**UP, "snapshot": True}})
    assert plan["restore_server"] == "cp3" and plan["down"] == ["cp1"]
    assert plan["rejoin"] == ["cp2"] and plan["stop"] == ["cp3", "cp2"]


def test_restore_from_a_backup_or_s3_on_the_first_reachable_server():
    probes = {"cp1": {"reachable": False}, "cp2": UP, "cp3": UP}
    plan = _restore(probes, backups=["/b/20261101T000000Z/cp1/snapshots/snap-1", "/b/20261102T000000Z/cp1/snapshots/snap-1"])
    assert (plan["restore_server"], plan["source"]) == ("cp2", "backup")
    assert plan["backup"] == "/b/20261102T000000Z/cp1/snapshots/snap-1"  # the newest copy
    plan = _restore(probes, s3=True)
    assert (plan["restore_server"], plan["source"], plan["backup"]) == ("cp2", "s3", "")


def test_restore_refused_before_anything_stops():
    plan = _restore({"cp1": UP, "cp2": {"reachable": False}, "cp3": UP})
    assert "snapshot snap-1 is on none of the reachable servers (cp1, cp3)" in plan["problem"]
    assert "nothing was stopped" in plan["problem"] and "bring cp2 back" in plan["problem"]
    assert plan["stop"] == [] and plan["restore_server"] == ""
    plan = _restore({s: {"reachable": False} for s in SERVERS})
    assert "no server could be reached" in plan["problem"] and plan["stop"] == []
    for bad in ("", "../x", "a/b", "x\n", None, 3, "-rf"):
        plan = _restore({"cp1": {**UP, "snapshot": True}}, name=bad)
        assert "is not a snapshot file name" in plan["problem"] and plan["stop"] == []


def test_restore_resumed_after_an_interruption_does_not_reset_again():
    probes = {"cp1": {**UP, "snapshot": True}, "cp2": {**UP, "restored": "snap-1", "snapshot": True},
              "cp3": {**UP, "joined": "snap-1"}}
    plan = _restore(probes)
    assert plan["restore_server"] == "cp2"  # where the reset already happened, not cp1
    assert plan["stop"] == ["cp1"] and plan["rejoin"] == ["cp1"]
    # a marker of another snapshot is no resume
    probes["cp2"]["restored"] = "older"
    probes["cp3"]["joined"] = "older"
    plan = _restore(probes)
    assert plan["restore_server"] == "cp1" and plan["stop"] == ["cp1", "cp2", "cp3"]


def test_restore_refused_while_a_server_that_does_not_answer_is_not_known_to_be_off():
    """Issue 42: a server that is only unreachable keeps k3s enabled and its old etcd data; two of three
    returning would hold a majority of the old cluster beside the restored one."""
    probes = {"cp1": {"reachable": False}, "cp2": {"reachable": False}, "cp3": {**UP, "snapshot": True}}
    plan = _restore(probes, off=[])
    assert plan["problem"].startswith("cp1, cp2 could not be reached") and "Nothing was stopped" in plan["problem"]
    assert '"k3s_snapshot_restore_servers_off": ["cp1", "cp2"]' in plan["problem"]
    assert plan["stop"] == [] and plan["restore_server"] == ""
    plan = _restore(probes, off=["cp1"])
    assert plan["problem"].startswith("cp2 could not be reached") and plan["stop"] == []
    plan = _restore(probes, off=["cp1", "cp2"])
    assert plan["problem"] == "" and plan["restore_server"] == "cp3" and plan["down"] == ["cp1", "cp2"]


def test_restore_refused_without_the_clusters_token():
    plan = _restore({"cp1": {**UP, "snapshot": True}, "cp2": UP, "cp3": UP}, token=False)
    assert "server token is not known" in plan["problem"] and plan["stop"] == []


# --- the kubelet's label restrictions (k8s.io/kubelet/pkg/apis/well_known_labels.go) -------------

@pytest.mark.parametrize("label, allowed", [
    ("gpu=true", True),
    ("nvidia.com/gpu.product=A100", True),
    ("kubernetes.io/hostname=wk-gpu1", True),
    ("topology.kubernetes.io/zone=rack1", True),
    ("node.kubernetes.io/instance-type=big", True),
    ("team.node.kubernetes.io/owner=ml", True),
    ("kubelet.kubernetes.io/anything=x", True),
    ("node-role.kubernetes.io/infra=true", False),
    ("node-role.kubernetes.io/gpu=true", False),
    ("node-restriction.kubernetes.io/pool=a", False),
    ("kubernetes.io/role=gpu", False),
    ("example.k8s.io/x=y", False),
    ("k8s.io/x=y", False),
    ("notkubernetes.io/x=y", True),
])
def test_kubelet_label_restrictions(label, allowed):
    assert k3s.kubelet_may_set_label(label) is allowed
    assert k3s.refused_node_labels([label]) == ([] if allowed else [label])


def test_node_config_refuses_labels_the_kubelet_refuses_from_any_layer():
    with pytest.raises(ValueError, match=r"node-role\.kubernetes\.io/infra=true.*k3s_node_api_labels"):
        k3s.node_config("agent", "10.0.0.31", "eth0", server_url="https://10.0.0.10:6443",
                        labels=["node-role.kubernetes.io/infra=true"])
    with pytest.raises(ValueError, match=r"node-role\.kubernetes\.io/gpu=true"):
        k3s.node_config("agent", "10.0.0.31", "eth0", server_url="https://10.0.0.10:6443",
                        labels=["gpu=true"], extra={"node-label": ["node-role.kubernetes.io/gpu=true"]})


# --- the cluster's identity (the wrong inventory is refused) ---------------------------------------

A, B = "a" * 32, "b" * 32


def test_identity_first_converge_makes_one_and_writes_it_everywhere():
    plan = k3s.identity_plan("", {"cp1": "", "cp2": ""})
    assert plan["problem"] == "" and len(plan["identity"]) == 32
    assert plan["write_servers"] == ["cp1", "cp2"] and plan["write_record"] is True
    assert k3s.identity_plan("", {"cp1": ""})["identity"] != plan["identity"]


@pytest.mark.parametrize("recorded, servers, identity, write_servers, write_record", [
    (A, {"cp1": A, "cp2": A}, A, [], False),                 # day 2
    ("", {"cp1": A, "cp2": ""}, A, ["cp2"], True),           # record lost, rebuilt cp2
    (A, {"cp1": "", "cp2": ""}, A, ["cp1", "cp2"], False),   # every server rebuilt (restore from S3)
    (A + "\n", {"cp1": A + "\n"}, A, [], False),
])
def test_identity_kept(recorded, servers, identity, write_servers, write_record):
    plan = k3s.identity_plan(recorded, servers)
    assert plan == {"problem": "", "identity": identity, "write_servers": write_servers, "write_record": write_record}


def test_identity_of_another_cluster_is_refused_naming_both():
    plan = k3s.identity_plan(A, {"cp1": B, "cp2": B, "cp3": ""}, "/srv/homelab/.gpu-cluster/cluster-id")
    assert plan["identity"] == "" and plan["write_servers"] == []
    assert plan["problem"].startswith("wrong inventory: its state directory (/srv/homelab/.gpu-cluster/cluster-id) "
                                      f"records cluster {A}, but cp1, cp2 belong(s) to cluster {B}")
    assert "Nothing was changed" in plan["problem"]


def test_identity_servers_of_two_clusters_and_damaged_files_are_refused():
    assert f"{A} on cp1; {B} on cp2" in k3s.identity_plan("", {"cp1": A, "cp2": B})["problem"]
    assert "cp1" in k3s.identity_plan("", {"cp1": "garbage"})["problem"]
    assert "the record" in k3s.identity_plan("x", {"cp1": A})["problem"]


def test_probes_from_the_server_probe_loop():
    """bootstrap's probe as k3s_node's probe.yml registers it: one k3s_server_probe run per server (exists:
    etcd, token; api_status of /ping: 401 is an API that answers, -1 none), an unreachable server."""
    registered = {"probe": [
        {"item": "cp1", "exists": {"etcd": True, "token": True}, "content": {}, "api_status": 401},
        {"item": "cp2", "exists": {"etcd": False, "token": False}, "content": {}, "api_status": -1},
        {"item": "cp3", "unreachable": True, "msg": "could not be reached"},
    ]}
    assert k3s.probes_from_results(registered) == {
        "cp1": {"reachable": True, "etcd": True, "token": True, "api": True},
        "cp2": {"reachable": True, "etcd": False, "token": False, "api": False},
        "cp3": {"reachable": False, "etcd": False, "token": False, "api": False},
    }
    # a server skipped by the loop's condition (not the batch's first host) says nothing; nothing registered
    assert k3s.probes_from_results({"probe": [{"item": "cp1", "skipped": True}]})["cp1"]["api"] is False
    assert k3s.probes_from_results(None) == {} and k3s.probes_from_results({"probe": None}) == {}


def test_restore_probes_from_the_server_probe_loop():
    """The restore's probe as etcd_snapshot.yml registers it: k3s_server_probe per server (exists: snapshot;
    content: the restore markers as text, '' when absent), an unreachable server."""
    registered = {"probe": [
        {"item": "cp1", "exists": {"snapshot": True}, "content": {"restored": "snap-1\n", "joined": "", "token": "t"}},
        {"item": "cp2", "exists": {"snapshot": False}, "content": {"restored": "", "joined": "snap-1\n", "token": ""}},
        {"item": "cp3", "unreachable": True},
    ]}
    assert k3s.restore_probes_from_results(registered) == {
        "cp1": {"reachable": True, "snapshot": True, "restored": "snap-1", "joined": ""},
        "cp2": {"reachable": True, "snapshot": False, "restored": "", "joined": "snap-1"},
        "cp3": {"reachable": False, "snapshot": False, "restored": "", "joined": ""},
    }


def test_a_newer_version_outside_upgrade_yml_is_refused_pointing_to_it():
    """Issue 42: raising the pin and running k3s.yml or site.yml replaced the binary on every node at
    once, with no snapshot and no drain; only upgrade.yml may (k3s docs upgrades/manual.md: one node
    at a time, servers first)."""
    for wanted in ("v1.33.6+k3s1", "v1.34.1+k3s1"):
        problem = k3s.version_problem("v1.33.5+k3s1", wanted, upgrading=False)
        assert "playbooks/upgrade.yml" in problem and "no etcd snapshot and no drain" in problem
    assert k3s.version_problem("v1.33.5+k3s1", "v1.33.5+k3s1", upgrading=False) == ""
    assert k3s.version_problem("", "v1.34.1+k3s1", upgrading=False) == ""  # a new node installs the pin
    assert k3s.version_problem("v1.33.5+k3s1", "v1.34.1+k3s1", upgrading=True) == ""


def test_agents_are_not_upgraded_past_the_servers_a_limit_leaves_out():
    """Issue 42: upgrade.yml --limit <agent> checks the servers first (k3s docs upgrades/manual.md)."""
    new = "v1.34.1+k3s1"
    problem = k3s.agent_upgrade_problem({"cp1": "v1.33.5+k3s1", "cp2": new}, new)
    assert "cp1 runs v1.33.5+k3s1" in problem and "cp2" not in problem and "servers first" in problem
    assert "unknown version" in k3s.agent_upgrade_problem({"cp1": ""}, new)
    assert k3s.agent_upgrade_problem({"cp1": new, "cp2": "v1.34.2+k3s1"}, new) == ""
    # servers in the run upgrade first: no problem
    assert k3s.agent_upgrade_problem({"cp1": "v1.33.5+k3s1"}, new, ["cp1", "wk1"]) == ""


def test_the_uninstall_guard_checks_the_local_storage_path_the_node_uses():
    """Issue 42: the guard read only k3s's default; a node configured with default-local-storage-path
    (k3s pkg/cli/server/server.go: default <data-dir>/storage) inside the removed trees lost its data."""
    trees = ["/var/lib/kubelet", "/var/lib/rancher/k3s", "/run/k3s"]
    default = ["/var/lib/rancher/k3s/storage"]
    inside = "default-local-storage-path: /var/lib/rancher/k3s/volumes\n"
    assert k3s.local_storage_dirs([inside], default, trees) == [*default, "/var/lib/rancher/k3s/volumes"]
    # a drop-in read later wins (pkg/configfilearg)
    later = "default-local-storage-path: /var/lib/rancher/k3s/other\n"
    assert k3s.local_storage_dirs([inside, later], default, trees)[-1] == "/var/lib/rancher/k3s/other"
    # outside the removed trees nothing is deleted: the guard stays as it was
    assert k3s.local_storage_dirs(["default-local-storage-path: /srv/volumes\n"], default, trees) == default
    assert k3s.local_storage_dirs(["", "not: [yaml", "server: https://x:6443\n"], default, trees) == default


# Issue 43: Python's \d matches every script's decimal digits and int() reads them ("v1.3٦.4" became 1.36.4);
# k3s and Kubernetes parse versions with Go's regexp, where \d is 0-9 only (regexp/syntax: "\d digits
# (== [0-9])"), and the release tags are ASCII.
@pytest.mark.parametrize(("version", "in_major"), [
    ("v1.3\u0666.4+k3s1", False), ("v\u0661.36.4+k3s1", True), ("v1.36.\uff14+k3s1", False), ("v1.36.4+k3s\u0967", False)])
def test_a_version_with_other_scripts_digits_is_not_a_k3s_version(version, in_major):
    with pytest.raises(ValueError):
        k3s.parse_version(version)
    if in_major:  # components.parse_version reads a leading major.minor (a prefix): a foreign digit in the major
        with pytest.raises(ValueError):
            components.parse_version(version)


def test_ascii_versions_still_parse():
    assert k3s.parse_version("v1.36.4+k3s1") == (1, 36, 4, 10 ** 6, 1)
    assert components.parse_version("v26.7.0") == (26, 7, 0)
