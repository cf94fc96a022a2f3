"""The inventory_problems and inventory_warnings filters: read only ansible_host,
ansible_connection and gpu_cluster_* from hostvars, turn templating errors into
problems naming the host and variable, and refuse inputs that are not mappings."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError, AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.inventory_problems import FilterModule, inventory_problems, inventory_warnings, role_specs
from jinja2 import Undefined


class LazyHostVars(Mapping):
    """Like Ansible's HostVarsVars: a value is templated when read, and may fail."""

    def __init__(self, values):
        self._values = values

    def __getitem__(self, key):
        value = self._values[key]
        if isinstance(value, Exception):
            raise value
        return value

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)


GROUPS = {"all": ["cp1"], "k3s_cluster": ["cp1"], "k3s_servers": ["cp1"], "k3s_agents": []}
CP1 = {
    "ansible_host": "10.0.0.11",
    "gpu_cluster_name": "homelab",
    "gpu_cluster_node_network": "10.0.0.0/24",
    "gpu_cluster_gateway": "10.0.0.1",
    "gpu_cluster_api_vip": "10.0.0.100",
    "gpu_cluster_cluster_cidr": "10.42.0.0/16",
    "gpu_cluster_service_cidr": "10.43.0.0/16",
    "gpu_cluster_k3s_version": "v1.36.4+k3s1",
}


def test_registered_under_its_name():
    assert FilterModule().filters()["inventory_problems"] is inventory_problems


def test_sound_single_server_inventory():
    assert inventory_problems(GROUPS, {"cp1": LazyHostVars(CP1)}) == []


def test_only_collection_variables_are_read():
    broken = dict(CP1, unrelated=AnsibleError("would fail if templated"))
    assert inventory_problems(GROUPS, {"cp1": LazyHostVars(broken)}) == []


def test_templating_error_is_a_problem_naming_host_and_variable():
    broken = dict(CP1, gpu_cluster_kubeconfig=AnsibleError("'undefined_thing' is undefined"))
    problems = inventory_problems(GROUPS, {"cp1": LazyHostVars(broken)})
    assert len(problems) == 1
    assert problems[0].startswith("cp1: gpu_cluster_kubeconfig cannot be templated on the control node ('undefined_thing' is undefined)")


def test_undefined_value_is_a_problem_not_a_crash():
    """ansible-core 2.19 hands a failed template over as an Undefined marker, also inside lists."""
    broken = dict(CP1, gpu_cluster_kubeconfig=Undefined(name="gpu_cluster_name"),
                  gpu_cluster_dns_servers=["10.0.0.1", Undefined(name="dns2")])
    problems = inventory_problems(GROUPS, {"cp1": LazyHostVars(broken)})
    assert len(problems) == 2, problems
    assert all("cannot be templated on the control node" in problem for problem in problems)


def test_warnings_filter_is_registered_and_reads_ansible_host():
    assert FilterModule().filters()["inventory_warnings"] is inventory_warnings
    renamed = dict(CP1, ansible_host="old-vm.lan", gpu_cluster_node_ip="10.0.0.11")
    warnings = inventory_warnings(GROUPS, {"cp1": LazyHostVars(renamed)})
    assert warnings == [
        "cp1: ansible_host old-vm.lan names a machine called old-vm, but the Kubernetes node is registered as cp1 (the inventory name); "
        "check that ansible_host points at the VM you mean, or rename the host to old-vm"]
    assert inventory_warnings(GROUPS, {"cp1": LazyHostVars(dict(renamed, ansible_connection="containers.podman.podman"))}) == []


def test_problems_come_through():
    problems = inventory_problems(GROUPS, {"cp1": LazyHostVars(dict(CP1, gpu_cluster_k3s_version="latest"))})
    pin = yaml.safe_load((Path(__file__).resolve().parents[4] / "versions.yml").read_text())["k3s_version"]
    assert problems == ["k3s_cluster: gpu_cluster_k3s_version is 'latest', a channel, not a release; pin a K3s release like "
                        f"{pin} (the version versions.yml pins)"]


@pytest.mark.parametrize("groups,hostvars,needle", [
    (["cp1"], {}, "the input must be the groups mapping"),
    (GROUPS, ["cp1"], "hostvars must be a mapping"),
])
def test_refuses_non_mappings(groups, hostvars, needle):
    with pytest.raises(AnsibleFilterError, match=needle):
        inventory_problems(groups, hostvars)


def test_role_variables_are_checked_against_the_real_argument_specs():
    specs = role_specs()
    assert "k3s_node_ready_timeout" in specs["k3s_node"]
    assert "gpu_operator_supported_versions" in specs["gpu_operator"]
    problems = inventory_problems(GROUPS, {"cp1": LazyHostVars(dict(CP1, k3s_node_ready_timeout="soon"))})
    assert len(problems) == 1
    assert problems[0].startswith("cp1: role k3s_node: argument 'k3s_node_ready_timeout' is of type")


def test_role_variable_built_from_facts_is_left_to_the_role():
    broken = dict(CP1, k3s_node_flannel_iface=Undefined(name="ansible_facts"))
    assert inventory_problems(GROUPS, {"cp1": LazyHostVars(broken)}) == []


def test_an_undefined_vault_variable_in_a_role_variable_is_a_problem():
    """Issue 43: an undefined vault variable anywhere, a role variable's dict included, gets the same clear
    message as a gpu_cluster_* one; a role variable built from facts is left to the role."""
    broken = dict(CP1, k3s_node_etcd_s3={"bucket": "snaps", "secret_key": Undefined(name="vault_etcd_s3_secret")},
                  k3s_node_ip=AnsibleError("'ansible_facts' is undefined"))
    problems = inventory_problems(GROUPS, {"cp1": LazyHostVars(broken)})
    assert len(problems) == 1, problems
    assert problems[0].startswith("cp1: k3s_node_etcd_s3 cannot be templated on the control node (")
    assert "vault_etcd_s3_secret" in problems[0]
