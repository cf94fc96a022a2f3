"""The CIS steps of k3s_setup: bad settings become AnsibleFilterError messages naming the step, never tracebacks."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.components import FilterModule as ComponentFilters
from ansible_collections.cps.gpu_cluster.plugins.filter.k3s_setup import FilterModule

K3S = FilterModule().filters()["k3s_setup"]
COMPONENTS = ComponentFilters().filters()["components"]
SETTINGS = {"admission_config_file": "/etc/rancher/k3s/pod-security-admission.yaml",
            "audit_policy_file": "/etc/rancher/k3s/audit-policy.yaml",
            "audit_log_path": "/var/lib/rancher/k3s/server/logs/audit.log"}


def test_cis_config_filter_renders_into_every_server_config():
    cis = K3S("server", "cis_config", SETTINGS)
    node = K3S({
        "role": "server", "node_ip": "10.0.0.12", "flannel_iface": "ens18",
        "server_url": "https://10.0.0.100:6443", "node_name": "cp2", "cis": cis,
        "extra": {"kube-apiserver-arg": ["request-timeout=300s"]}}, "config")
    assert node["protect-kernel-defaults"] is True
    assert "admission-control-config-file=/etc/rancher/k3s/pod-security-admission.yaml" in node["kube-apiserver-arg"]
    assert node["kube-apiserver-arg"][-1] == "request-timeout=300s"
    assert node["node-name"] == "cp2"


@pytest.mark.parametrize("phase, value, step, args, fragment", [
    (K3S, "server", "cis_config", (dict(SETTINGS, audit_log_maxage=-1),), r"k3s_setup\('cis_config'\): .*audit_log_maxage"),
    (K3S, "server", "cis_config", (dict(SETTINGS, unknown=1),), "unknown"),
    (K3S, ["GPU"], "admission_config", (), r"k3s_setup\('admission_config'\): .*not a namespace name"),
    (K3S, [], "admission_config", ("open",), "must be one of"),
    (K3S, [{"level": "Everything"}], "audit_policy", (), "needs a level"),
    (COMPONENTS, "root", "pod_security_labels", (), r"components\('pod_security_labels'\): .*must be one of"),
])
def test_bad_input_is_a_filter_error(phase, value, step, args, fragment):
    with pytest.raises(AnsibleFilterError, match=fragment):
        phase(value, step, *args)


def test_node_name_problem_filter():
    assert K3S("cp1", "node_name_problem") == ""
    assert "DNS-1123" in K3S("cp_1", "node_name_problem")
