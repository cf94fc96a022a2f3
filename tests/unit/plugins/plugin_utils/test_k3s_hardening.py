"""k3s_hardening: the K3s CIS profile keys, the Pod Security admission configuration, the audit
policy, node names, and how node_config merges them with extra keys."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s, k3s_hardening

REPO = Path(__file__).resolve().parents[4]
SCHEMAS = REPO / "tests" / "fixtures" / "k3s"
PATHS = dict(admission_config_file="/etc/rancher/k3s/pod-security-admission.yaml",
             audit_policy_file="/etc/rancher/k3s/audit-policy.yaml",
             audit_log_path="/var/lib/rancher/k3s/server/logs/audit.log")
BASE = dict(node_ip="10.0.0.11", flannel_iface="ens18", tls_san=["cp1"],
            cluster_cidr="10.42.0.0/16", service_cidr="10.43.0.0/16")
# The K3s CIS hardening guide (v1.29 and newer), as config.yaml keys.
GUIDE_CIPHERS = ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
                 "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
                 "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305")


def schema(name):
    return json.loads((SCHEMAS / name).read_text())


def test_server_cis_keys_follow_the_guide():
    config = k3s_hardening.cis_config("server", **PATHS)
    assert config["protect-kernel-defaults"] is True
    assert config["kubelet-arg"] == ["streaming-connection-idle-timeout=5m", "tls-cipher-suites=" + GUIDE_CIPHERS]
    assert config["kube-apiserver-arg"] == [
        "admission-control-config-file=/etc/rancher/k3s/pod-security-admission.yaml",
        "audit-policy-file=/etc/rancher/k3s/audit-policy.yaml",
        "audit-log-path=/var/lib/rancher/k3s/server/logs/audit.log",
        "audit-log-maxage=30",
        "audit-log-maxbackup=10",
        "audit-log-maxsize=100",
        "tls-cipher-suites=" + GUIDE_CIPHERS,
        "service-account-extend-token-expiration=false",
    ]
    assert config["kube-controller-manager-arg"] == ["terminated-pod-gc-threshold=100"]


def test_agent_cis_keys_are_the_kubelet_ones_only():
    config = k3s_hardening.cis_config("agent", admission_config_file="", audit_policy_file="", audit_log_path="",
                                      streaming_connection_idle_timeout="4m30s")
    assert set(config) == {"protect-kernel-defaults", "kubelet-arg"}
    assert config["kubelet-arg"][0] == "streaming-connection-idle-timeout=4m30s"


def test_rotation_settings_are_used():
    config = k3s_hardening.cis_config("server", audit_log_maxage=7, audit_log_maxbackup="3", audit_log_maxsize=50, **PATHS)
    assert {"audit-log-maxage=7", "audit-log-maxbackup=3", "audit-log-maxsize=50"} <= set(config["kube-apiserver-arg"])


@pytest.mark.parametrize("kwargs, fragment", [
    ({"role": "master"}, "role must be"),
    ({"streaming_connection_idle_timeout": "5 minutes"}, "duration like 5m"),
    ({"streaming_connection_idle_timeout": "5m\n"}, "duration like 5m"),
    ({"audit_log_maxage": 0}, "audit_log_maxage must be a positive"),
    ({"audit_log_maxsize": "100MB"}, "audit_log_maxsize must be a positive"),
    ({"audit_log_maxbackup": True}, "audit_log_maxbackup must be a positive"),
    ({"audit_log_path": "logs/audit.log"}, "audit_log_path must be an absolute path"),
    ({"admission_config_file": "/etc/x\n--foo"}, "admission_config_file must be an absolute path"),
])
def test_bad_cis_settings_are_named(kwargs, fragment):
    role = kwargs.get("role", "server")
    settings = dict(PATHS, **{key: value for key, value in kwargs.items() if key != "role"})
    with pytest.raises(ValueError, match=fragment):
        k3s_hardening.cis_config(role, **settings)


def test_admission_config_defaults_to_restricted_and_validates():
    config = k3s_hardening.pod_security_admission_config("restricted", ["team-a", "kube-system"])
    jsonschema.validate(config, schema("admission-configuration.schema.json"))
    plugin = config["plugins"][0]
    assert plugin["name"] == "PodSecurity"
    defaults = plugin["configuration"]["defaults"]
    assert defaults == {"enforce": "restricted", "enforce-version": "latest", "audit": "restricted",
                        "audit-version": "latest", "warn": "restricted", "warn-version": "latest"}
    # kube-system is always exempt, once; the list is sorted so the file is stable
    assert plugin["configuration"]["exemptions"]["namespaces"] == ["kube-system", "team-a"]


def broken(good, path, value):
    """A copy of ``good`` with ``value`` at ``path`` (keys and indexes)."""
    copy_ = json.loads(json.dumps(good))
    target = copy_
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy_


def test_admission_schema_catches_mistakes():
    """The schema is strict: a typo, an unknown level or a duplicate fails (it can fail)."""
    good = k3s_hardening.pod_security_admission_config()
    validator = jsonschema.Draft202012Validator(schema("admission-configuration.schema.json"))
    assert not list(validator.iter_errors(good))
    for path, value in [
        (("plugins", 0, "configuration", "defaults", "enforce"), "strict"),
        (("plugins", 0, "configuration", "defaults", "warn-version"), "1.33"),
        (("plugins", 0, "configuration", "exemptions", "namespaces"), ["kube-system", "kube-system"]),
        (("plugins", 0, "configuration", "exemptions", "namespace"), ["x"]),
        (("plugins", 0, "configuration", "apiVersion"), "pod-security.admission.config.k8s.io/v1beta2"),
        (("apiVersion",), "apiserver.k8s.io/v1"),
    ]:
        assert list(validator.iter_errors(broken(good, path, value))), path


@pytest.mark.parametrize("level, namespaces, version, fragment", [
    ("strict", [], "latest", "must be one of privileged, baseline, restricted"),
    ("restricted", ["Team_A"], "latest", "'Team_A' is not a namespace name"),
    ("restricted", ["ns\n"], "latest", "is not a namespace name"),
    ("restricted", "gpu-operator", "latest", "must be a list"),
    ("restricted", [["a"]], "latest", "is not a namespace name"),
    ("restricted", [], "1.33", "'latest' or v1.<minor>"),
])
def test_bad_admission_settings_are_named(level, namespaces, version, fragment):
    with pytest.raises(ValueError, match=fragment):
        k3s_hardening.pod_security_admission_config(level, namespaces, version)


def test_pod_security_labels():
    assert k3s_hardening.pod_security_labels("baseline") == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "baseline",
        "pod-security.kubernetes.io/warn": "baseline",
    }
    with pytest.raises(ValueError):
        k3s_hardening.pod_security_labels("root")


def test_default_audit_policy_validates_and_never_logs_bodies():
    policy = k3s_hardening.audit_policy()
    jsonschema.validate(policy, schema("audit-policy.schema.json"))
    levels = [rule["level"] for rule in policy["rules"]]
    assert levels[-1] == "Metadata" and set(levels) <= {"None", "Metadata"}
    assert policy["omitStages"] == ["RequestReceived"]


def test_custom_audit_rules_replace_the_default_and_are_checked():
    rules = [{"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods"]}]}, {"level": "Metadata"}]
    policy = k3s_hardening.audit_policy(rules)
    assert policy["rules"] == rules
    jsonschema.validate(policy, schema("audit-policy.schema.json"))
    with pytest.raises(ValueError, match="audit rule #0 needs a level"):
        k3s_hardening.audit_policy([{"level": "All"}])
    broken = k3s_hardening.audit_policy([{"level": "Metadata", "resource": []}])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema("audit-policy.schema.json"))


@pytest.mark.parametrize("name, ok", [
    ("wk-gpu1", True), ("cp1.lan", True), ("a", True),
    ("k3s_ha-cp1", False), ("CP1", False), ("-cp1", False), ("cp1-", False), ("cp1\n", False),
    ("", False), (None, False), ("a" * 254, False),
])
def test_node_names(name, ok):
    assert (k3s_hardening.node_name_problem(name) == "") is ok


def test_node_names_from_hostvars():
    hostvars = {"wk-gpu1": {"gpu_cluster_node_name": "gpu-node-1"}, "wk-gpu2": {}}
    assert k3s_hardening.node_names(["wk-gpu1", "wk-gpu2", "absent"], hostvars) == ["gpu-node-1", "wk-gpu2", "absent"]


def test_kubelet_sysctls_match_the_prereq_defaults():
    """k3s_prereq sets exactly what protect-kernel-defaults checks (else the kubelet exits)."""
    defaults = yaml.safe_load((REPO / "roles" / "k3s_prereq" / "defaults" / "main.yml").read_text())
    assert defaults["k3s_prereq_cis_sysctls"] == k3s_hardening.KUBELET_PROTECTED_SYSCTLS
    guide = {"vm.panic_on_oom": 0, "vm.overcommit_memory": 1, "kernel.panic": 10, "kernel.panic_on_oops": 1}
    assert guide.items() <= k3s_hardening.KUBELET_PROTECTED_SYSCTLS.items()


def test_node_config_with_node_name_and_cis():
    cis = k3s_hardening.cis_config("server", **PATHS)
    config = k3s.node_config("server", cluster_init=True, node_name="cp1", cis=cis, **BASE)
    assert config["node-name"] == "cp1"
    assert config["protect-kernel-defaults"] is True
    assert config["kube-apiserver-arg"] == cis["kube-apiserver-arg"]
    assert config["secrets-encryption"] is True


def test_node_config_refuses_a_bad_node_name():
    with pytest.raises(ValueError, match="DNS-1123"):
        k3s.node_config("agent", server_url="https://10.0.0.100:6443", node_name="k3s_ha-gpu1", **BASE)


def test_extra_adds_arguments_to_the_cis_ones_and_replaces_scalars():
    cis = k3s_hardening.cis_config("agent", admission_config_file="", audit_policy_file="", audit_log_path="")
    extra = {"kubelet-arg": ["max-pods=200"], "protect-kernel-defaults": False, "etcd-s3-secret-key": "s3cr3t"}
    config = k3s.node_config("agent", server_url="https://10.0.0.100:6443", cis=cis, extra=extra, **BASE)
    assert config["kubelet-arg"] == cis["kubelet-arg"] + ["max-pods=200"]
    assert config["protect-kernel-defaults"] is False  # extra wins for a scalar key
    assert config["etcd-s3-secret-key"] == "s3cr3t"


def test_without_cis_nothing_of_the_profile_is_set():
    config = k3s.node_config("agent", server_url="https://10.0.0.100:6443", node_name="wk-gpu1", **BASE)
    for key in ("protect-kernel-defaults", "kubelet-arg", "kube-apiserver-arg"):
        assert key not in config
    assert config["node-name"] == "wk-gpu1"


def test_extra_must_be_a_dict():
    with pytest.raises(ValueError, match="must be a dict"):
        k3s.node_config("agent", server_url="https://10.0.0.100:6443", extra=["kubelet-arg=x"], **BASE)


def test_merge_config_appends_a_single_argument_and_skips_duplicates():
    merged = k3s_hardening.merge_config({"kubelet-arg": ["a=1"]}, {"kubelet-arg": "b=2"})
    assert merged == {"kubelet-arg": ["a=1", "b=2"]}
    assert k3s_hardening.merge_config(merged, {"kubelet-arg": ["a=1"]}) == merged
    assert k3s_hardening.merge_config({}, {"kube-apiserver-arg": ["x=1"]}) == {"kube-apiserver-arg": ["x=1"]}


def test_limited_resources_add_the_resource_quota_plugin_and_validate():
    config = k3s_hardening.pod_security_admission_config("restricted", [], limited_resources=[
        "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "nvidia.com/gpu.shared"])
    jsonschema.validate(config, schema("admission-configuration.schema.json"))
    assert [p["name"] for p in config["plugins"]] == ["PodSecurity", "ResourceQuota"]
    assert config["plugins"][1]["configuration"] == {
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "ResourceQuotaConfiguration",
        "limitedResources": [{"apiGroup": "", "resource": "pods",
                              "matchContains": ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"]}]}
    # without the CIS profile: the ResourceQuota entry alone; nothing limited: no plugin at all
    alone = k3s_hardening.admission_config(["nvidia.com/gpu.shared"])
    jsonschema.validate(alone, schema("admission-configuration.schema.json"))
    assert [p["name"] for p in alone["plugins"]] == ["ResourceQuota"]
    assert k3s_hardening.admission_config([])["plugins"] == []
    # nothing limited: the Pod Security configuration as before, byte for byte
    assert k3s_hardening.pod_security_admission_config("restricted", [], limited_resources=[]) == \
        k3s_hardening.pod_security_admission_config("restricted", [])


def test_the_schema_refuses_a_wrong_resource_quota_entry():
    validator = jsonschema.Draft202012Validator(schema("admission-configuration.schema.json"))
    good = k3s_hardening.admission_config(["nvidia.com/gpu.shared"])
    for path, value in [
        (("plugins", 0, "configuration", "kind"), "Configuration"),
        (("plugins", 0, "configuration", "limitedResource"), []),
        (("plugins", 0, "configuration", "limitedResources", 0, "resources"), "pods"),
    ]:
        assert list(validator.iter_errors(broken(good, path, value))), path
    del good["plugins"][0]["configuration"]["limitedResources"][0]["resource"]
    assert list(validator.iter_errors(good))


@pytest.mark.parametrize("names", [["gpu"], ["nvidia.com/gpu\n"], ["nvidia.com/"], [7]])
def test_bad_limited_resources_are_named(names):
    with pytest.raises(ValueError, match="is not an extended resource name"):
        k3s_hardening.admission_config(names)
