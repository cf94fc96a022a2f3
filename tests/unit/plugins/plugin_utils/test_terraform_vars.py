"""module_utils.terraform_vars: the inventory -> terraform/proxmox variables mapping."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.terraform_vars import shared_variables, terraform_vars

ALL = {"gpu_cluster_name": "c", "gpu_cluster_node_network": "10.1.0.0/24", "gpu_cluster_gateway": "10.1.0.1",
       "gpu_cluster_dns_servers": ["10.1.0.1"], "gpu_cluster_k3s_version": "v1.33.5+k3s1"}


def inventory():
    groups = {"all": ["pve", "s1", "w1"], "proxmox_hosts": ["pve"], "k3s_servers": ["s1"], "gpu_workers": ["w1"],
              "k3s_cluster": ["s1", "w1"], "k3s_agents": ["w1"]}
    hostvars = {
        "pve": dict(ALL, ansible_host="10.1.0.2", ansible_user="root", gpu_cluster_proxmox_node="pve",
                    gpu_cluster_proxmox_template_id=9000, gpu_cluster_proxmox_scratch_storage="nvme",
                    gpu_cluster_gpu_pci_ids=["10de:2330"]),
        "s1": dict(ALL, ansible_host="s1.example", gpu_cluster_node_ip="10.1.0.11", ansible_user="debian",
                   gpu_cluster_vm_cores=2),
        "w1": dict(ALL, ansible_host="10.1.0.21", ansible_user="debian", gpu_cluster_gpu_count=1,
                   gpu_cluster_gpu_pci_mappings=["h100-0"], gpu_cluster_gpu_model="NVIDIA H100 PCIe",
                   gpu_cluster_scratch_device="/dev/disk/by-id/virtio-fast1"),
    }
    return groups, hostvars


def test_maps_the_inventory():
    groups, hostvars = inventory()
    result = terraform_vars(groups, hostvars, ["ssh-ed25519 AAAA k"])
    assert result["proxmox_node"] == "pve" and result["proxmox_host_address"] == "10.1.0.2"
    assert result["template_vm_id"] == 9000 and result["scratch_storage"] == "nvme"
    assert "proxmox_endpoint" not in result, "unset inventory variables leave the module's default"
    assert result["control_planes"] == {"s1": {"ip": "10.1.0.11"}}, "gpu_cluster_node_ip wins over ansible_host"
    assert result["control_plane_size"] == {"cores": 2}
    assert result["gpu_workers"] == {"w1": {"ip": "10.1.0.21", "gpus": 1, "gpu_model": "NVIDIA H100 PCIe", "gpu_mappings": ["h100-0"]}}
    assert result["gpu_model"] == "NVIDIA H100 PCIe" and result["scratch_disk_serial"] == "fast1"
    assert result["ssh_user"] == "debian" and result["ssh_public_keys"] == ["ssh-ed25519 AAAA k"]
    assert result["inventory_vars"]["all"] == ALL
    assert result["inventory_vars"]["proxmox_hosts"] == {
        "ansible_user": "root", "gpu_cluster_proxmox_node": "pve", "gpu_cluster_proxmox_template_id": 9000,
        "gpu_cluster_proxmox_scratch_storage": "nvme", "gpu_cluster_gpu_pci_ids": ["10de:2330"]}


def test_shared_variables_need_the_same_value_everywhere():
    hostvars = {"a": {"gpu_cluster_x": 1, "gpu_cluster_y": 1, "other": 1}, "b": {"gpu_cluster_x": 1, "gpu_cluster_y": 2}}
    assert shared_variables(["a", "b"], hostvars) == {"gpu_cluster_x": 1}
    assert shared_variables([], hostvars) == {}


@pytest.mark.parametrize(("group", "message"), [
    ("proxmox_hosts", "no host in proxmox_hosts"),
    ("k3s_servers", "no host in k3s_servers"),
])
def test_refuses_an_inventory_without(group, message):
    groups, hostvars = inventory()
    groups[group] = []
    with pytest.raises(ValueError, match=message):
        terraform_vars(groups, hostvars, [])


SECRETS = {"gpu_cluster_rancher_bootstrap_password": "rancher-bootstrap-0xA1",
           "gpu_cluster_fleet_git_password": "fleet-token-0xB2",
           "gpu_cluster_jupyterhub_oauth": {"client_id": "hub", "client_secret": "oauth-secret-0xC3"},
           "gpu_cluster_rancher_tls_key": "-----BEGIN PRIVATE KEY-----\nkey-0xD4\n-----END PRIVATE KEY-----\n"}


def test_no_secret_reaches_terraform():
    """Issue 27: every cluster-wide gpu_cluster_* value went to Terraform (-var: printed by a failed
    plan, kept in its plan and state) and into the generated inventory in clear. A secret now goes
    as a reference to its vault variable (docs/gitops.md's vault_<name> convention)."""
    groups, hostvars = inventory()
    for host in hostvars:
        hostvars[host].update(SECRETS)
    hostvars["pve"]["gpu_cluster_proxmox_api_token_secret"] = "pve-token-0xE5"
    result = terraform_vars(groups, hostvars, ["ssh-ed25519 AAAA k"])
    text = repr(result)
    for secret in ("0xA1", "0xB2", "0xC3", "0xD4", "0xE5"):
        assert secret not in text
    shared = result["inventory_vars"]["all"]
    assert shared["gpu_cluster_rancher_bootstrap_password"] == "{{ vault_gpu_cluster_rancher_bootstrap_password | default('') }}"
    assert shared["gpu_cluster_jupyterhub_oauth"] == "{{ vault_gpu_cluster_jupyterhub_oauth }}"
    assert result["inventory_vars"]["proxmox_hosts"]["gpu_cluster_proxmox_api_token_secret"] == (
        "{{ vault_gpu_cluster_proxmox_api_token_secret | default('') }}")
    assert shared["gpu_cluster_name"] == "c"  # the rest as it is


def test_refuses_a_worker_whose_gpus_are_on_another_proxmox_host():
    """terraform/proxmox creates every VM on var.proxmox_node (the first Proxmox host): w1's GPUs on pve2
    would be a PCI mapping with no entry for pve's node, which Proxmox refuses when the VM starts. Refused
    before Terraform runs (issue 43; placement per host is issue 46)."""
    groups, hostvars = inventory()
    groups = dict(groups, all=["pve", "pve2", "s1", "w1"], proxmox_hosts=["pve", "pve2"])
    hostvars["pve"]["gpu_cluster_gpu_pci_devices"] = [{"name": "a100-0", "address": "0000:17:00.0"}]
    hostvars["pve2"] = dict(ALL, ansible_host="10.1.0.3", gpu_cluster_gpu_pci_ids=["10de:2331"],
                            gpu_cluster_gpu_pci_devices=[{"name": "h100-0", "address": "0000:17:00.0"}])
    with pytest.raises(ValueError, match=r"^w1: its GPUs are on pve2 \(gpu_cluster_gpu_pci_mappings\), but provision.yml "
                                         r"creates every VM on pve, the first host of proxmox_hosts"):
        terraform_vars(groups, hostvars, ["ssh-ed25519 AAAA k"])
    # its GPUs on the first host: planned as with one host
    hostvars["pve"]["gpu_cluster_gpu_pci_devices"] = [{"name": "h100-0", "address": "0000:17:00.0"}]
    hostvars["pve2"]["gpu_cluster_gpu_pci_devices"] = [{"name": "h100-9", "address": "0000:17:00.0"}]
    assert terraform_vars(groups, hostvars, ["ssh-ed25519 AAAA k"])["gpu_workers"]["w1"]["ip"] == "10.1.0.21"
