"""The k3s_hardening filters: bad settings become AnsibleFilterError messages, never tracebacks."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.k3s import FilterModule as K3sFilters
from ansible_collections.cps.gpu_cluster.plugins.filter.k3s_hardening import FilterModule

FILTERS = FilterModule().filters()
SETTINGS = {"admission_config_file": "/etc/rancher/k3s/pod-security-admission.yaml",
            "audit_policy_file": "/etc/rancher/k3s/audit-policy.yaml",
            "audit_log_path": "/var/lib/rancher/k3s/server/logs/audit.log"}


def test_cis_config_filter_renders_into_every_server_config():
    cis = FILTERS["k3s_cis_config"]("server", SETTINGS)
    node = K3sFilters().filters()["k3s_node_config"]({
        "role": "server", "node_ip": "10.0.0.12", "flannel_iface": "ens18",
        "server_url": "https://10.0.0.100:6443", "node_name": "cp2", "cis": cis,
        "extra": {"kube-apiserver-arg": ["request-timeout=300s"]}})
    assert node["protect-kernel-defaults"] is True
    assert "admission-control-config-file=/etc/rancher/k3s/pod-security-admission.yaml" in node["kube-apiserver-arg"]
    assert node["kube-apiserver-arg"][-1] == "request-timeout=300s"
    assert node["node-name"] == "cp2"


@pytest.mark.parametrize("name, args, fragment", [
    ("k3s_cis_config", ("server", dict(SETTINGS, audit_log_maxage=-1)), "audit_log_maxage"),
    ("k3s_cis_config", ("server", dict(SETTINGS, unknown=1)), "unknown"),
    ("k3s_pod_security_admission_config", (["GPU"],), "not a namespace name"),
    ("k3s_pod_security_admission_config", ([], "open"), "must be one of"),
    ("k3s_audit_policy", ([{"level": "Everything"}],), "needs a level"),
    ("pod_security_labels", ("root",), "must be one of"),
])
def test_bad_input_is_a_filter_error(name, args, fragment):
    with pytest.raises(AnsibleFilterError, match=fragment):
        FILTERS[name](*args)


def test_node_name_problem_filter():
    assert FILTERS["k3s_node_name_problem"]("cp1") == ""
    assert "DNS-1123" in FILTERS["k3s_node_name_problem"]("cp_1")
