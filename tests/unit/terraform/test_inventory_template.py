"""inventory.yml.tftpl rendered with the variables Terraform would pass gives
an inventory with the contract's groups and variables: for the homelab it
resolves, host by host, to exactly what inventories/homelab resolves to, and
so does a 1 control plane + 1 GPU worker cluster."""

from __future__ import annotations

import copy

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model
from terraform_helpers import SSH_KEY, groups_of, inventory_list, render_template, resolve, tfvars_from_inventory

GROUPS = ["proxmox_hosts", "k3s_cluster", "k3s_servers", "k3s_agents", "gpu_workers", "infra_nodes", "app_nodes"]


def render_inventory(tfvars: dict, tmp_path) -> dict:
    """Render the template for these Terraform variables and resolve it with ansible-inventory."""
    text = render_template(resolve(tfvars)["inventory_vars"])
    path = tmp_path / "inventory.yml"
    path.write_text(text)
    yaml.safe_load(text)  # plain YAML, no Jinja left
    return inventory_list(path)


def only(inventory_json: dict, hosts: set[str]) -> dict:
    """An `ansible-inventory --list` dump reduced to some hosts."""
    trimmed = copy.deepcopy(inventory_json)
    for name, data in trimmed.items():
        if name != "_meta" and "hosts" in data:
            data["hosts"] = [h for h in data["hosts"] if h in hosts]
    trimmed["_meta"]["hostvars"] = {h: v for h, v in trimmed["_meta"]["hostvars"].items() if h in hosts}
    return trimmed


def assert_same_inventory(rendered: dict, expected: dict):
    rendered_groups, expected_groups = groups_of(rendered), groups_of(expected)
    for group in GROUPS:
        assert group in rendered_groups, f"group {group} missing from the generated inventory"
        assert sorted(rendered_groups[group]) == sorted(expected_groups.get(group, [])), group
    assert rendered["_meta"]["hostvars"] == expected["_meta"]["hostvars"]


def test_homelab_round_trip(homelab_list, homelab_tfvars, tmp_path):
    assert_same_inventory(render_inventory(homelab_tfvars, tmp_path), homelab_list)


def test_one_server_one_worker_round_trip(homelab_list, tmp_path):
    small = only(homelab_list, {"pve1", "cp1", "wk-gpu1"})
    tfvars = tfvars_from_inventory(small)
    assert set(tfvars["control_planes"]) == {"cp1"} and set(tfvars["gpu_workers"]) == {"wk-gpu1"}
    assert_same_inventory(render_inventory(tfvars, tmp_path), small)


def test_homelab_tfvars(homelab_tfvars):
    assert homelab_tfvars["proxmox_endpoint"] == "https://10.0.0.2:8006/api2/json"
    assert homelab_tfvars["template_vm_id"] == 9000
    assert homelab_tfvars["scratch_storage"] == "nvme-scratch"
    assert homelab_tfvars["control_planes"] == {"cp1": {"ip": "10.0.0.11"}, "cp2": {"ip": "10.0.0.12"}, "cp3": {"ip": "10.0.0.13"}}
    assert homelab_tfvars["control_plane_size"] == {"cores": 4, "memory_mb": 16384, "disk_gb": 100}
    assert homelab_tfvars["gpu_workers"]["wk-gpu3"] == {
        "ip": "10.0.0.23", "preset": "large", "cores": 16, "memory_mb": 131072, "disk_gb": 500,
        "scratch_disk_gb": 1024, "gpus": 2, "gpu_model": "NVIDIA A100 80GB PCIe", "gpu_mappings": ["a100-4", "a100-5"]}
    assert homelab_tfvars["scratch_disk_serial"] == "scratch"
    assert homelab_tfvars["ssh_user"] == "debian"
    cluster_wide = homelab_tfvars["inventory_vars"]["all"]
    assert cluster_wide["gpu_cluster_k3s_version"] == "v1.36.4+k3s1"
    assert not [k for k in cluster_wide if k.startswith(("gpu_cluster_vm_", "gpu_cluster_proxmox_"))]
    assert homelab_tfvars["inventory_vars"]["proxmox_hosts"]["ansible_user"] == "root"
    assert homelab_tfvars["inventory_vars"]["proxmox_hosts"]["gpu_cluster_gpu_pci_ids"] == ["10de:20b5"]


def test_generated_names_raw_addresses_and_presets(tmp_path):
    """No explicit maps: one cp and one 'medium' worker by count; a second
    render gives a worker its GPU by raw PCI address and overrides its cores."""
    base = {"proxmox_node": "pve9", "proxmox_host_address": "192.168.5.2", "template_vm_id": 9001,
            "scratch_storage": "fast", "cluster_name": "tiny", "node_network": "192.168.5.0/24",
            "gateway": "192.168.5.1", "dns_servers": ["192.168.5.1"], "ssh_public_keys": [SSH_KEY],
            "control_plane_count": 1, "gpu_worker_count": 1, "gpu_worker_preset": "medium",
            "gpu_pci_mappings": ["rtx-0"]}
    rendered = render_inventory(base, tmp_path)
    hostvars = rendered["_meta"]["hostvars"]
    assert groups_of(rendered)["k3s_servers"] == ["cp1"] and groups_of(rendered)["gpu_workers"] == ["wk-gpu1"]
    assert hostvars["cp1"]["ansible_host"] == "192.168.5.11" and hostvars["cp1"]["ansible_user"] == "debian"
    worker = hostvars["wk-gpu1"]
    assert worker["ansible_host"] == "192.168.5.21"
    assert (worker["gpu_cluster_vm_cores"], worker["gpu_cluster_gpu_count"], worker["gpu_cluster_gpu_pci_mappings"]) == (16, 1, ["rtx-0"])
    assert worker["gpu_cluster_scratch_device"] == "/dev/disk/by-id/virtio-scratch"
    assert hostvars["pve9"]["gpu_cluster_proxmox_template_id"] == 9001
    assert hostvars["pve9"]["ansible_user"] == "root", "Proxmox VE is administered as root"

    worker = {"ip": "192.168.5.40", "preset": "small", "cores": 12, "gpu_addresses": ["0000:01:00.0"]}
    by_address = dict(base, gpu_workers={"gpu-a": worker})
    resolved = resolve(by_address)
    assert resolved["gpu_workers"]["gpu-a"]["gpu_devices"] == [{"mapping": None, "id": "0000:01:00.0"}]
    worker = render_inventory(by_address, tmp_path)["_meta"]["hostvars"]["gpu-a"]
    assert (worker["gpu_cluster_vm_cores"], worker["gpu_cluster_vm_memory_mb"]) == (12, 65536)
    assert "gpu_cluster_gpu_pci_mappings" not in worker, "raw addresses are no Proxmox mapping names"


@pytest.mark.parametrize(("template", "variables", "expected"), [
    ("a:\n%{ for k, v in m ~}\n  ${k}: ${jsonencode(v)}\n%{ endfor ~}\nb\n", {"m": {"y": [1], "x": {"b": 1, "a": None}}},
     'a:\n  x: {"a":null,"b":1}\n  y: [1]\nb\n'),
    ("%{ for k, v in m ~}   \n\n${v}\n%{ endfor ~}   \n\nz", {"m": {"k": "v"}}, "\nv\n\nz"),
    ("${jsonencode(s)}", {"s": "<&>é"}, '"\\u003c\\u0026\\u003eé"'),
    ("x: %{ for k, v in m }${k}=${v},%{ endfor }", {"m": {}}, "x: "),
])
def test_renderer_matches_terraform(template, variables, expected):
    """Outputs taken from `terraform console` (templatefile) on the same input."""
    assert render_template(variables, template) == expected


@pytest.mark.parametrize("template", ["%{ if x }y%{ endif }", "${upper(x)}", "%{~ for k, v in m }%{ endfor }", "${x.y}"])
def test_renderer_refuses_what_it_does_not_know(template):
    with pytest.raises((ValueError, KeyError)):
        render_template({"x": "a", "m": {}}, template)


def test_mixed_workers_round_trip_without_loss(homelab_list, tmp_path):
    """Per host, the GPU model, count, PCI mappings and sizes survive inventory -> Terraform variables
    -> generated inventory, also where workers differ (before, the model came from the first worker
    only and was written back for all). Judged on the variables and on the cluster model of both."""
    mixed = copy.deepcopy(homelab_list)
    hostvars = mixed["_meta"]["hostvars"]
    hostvars["wk-gpu3"].update(gpu_cluster_gpu_model="NVIDIA GeForce RTX 4090", gpu_cluster_gpu_count=1,
                               gpu_cluster_gpu_pci_mappings=["rtx4090-0"], gpu_cluster_vm_preset="medium",
                               gpu_cluster_vm_cores=12, gpu_cluster_vm_memory_mb=65536)
    hostvars["wk-gpu4"].update(gpu_cluster_gpu_model="NVIDIA H100 80GB HBM3", gpu_cluster_vm_disk_gb=800,
                               gpu_cluster_scratch_disk_gb=2048)
    tfvars = tfvars_from_inventory(mixed)
    assert tfvars["gpu_workers"]["wk-gpu3"]["gpu_model"] == "NVIDIA GeForce RTX 4090"
    assert tfvars["gpu_workers"]["wk-gpu4"]["gpu_model"] == "NVIDIA H100 80GB HBM3"
    rendered = render_inventory(tfvars, tmp_path)
    for host in ("wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"):
        for name in ("gpu_cluster_gpu_model", "gpu_cluster_gpu_count", "gpu_cluster_gpu_pci_mappings", "gpu_cluster_vm_preset",
                     "gpu_cluster_vm_cores", "gpu_cluster_vm_memory_mb", "gpu_cluster_vm_disk_gb", "gpu_cluster_scratch_disk_gb"):
            assert rendered["_meta"]["hostvars"][host][name] == hostvars[host][name], (host, name)
    keys = ("name", "gpu_count", "gpu_model", "gpu_pci_mappings", "vcpus", "memory_mb", "allocatable")

    def model_of(inventory):
        nodes = cluster_model.build(groups_of(inventory), inventory["_meta"]["hostvars"])["nodes"]
        return [{key: node[key] for key in keys} for node in nodes]
    assert model_of(rendered) == model_of(mixed)
    assert {n["name"]: n["gpu_model"] for n in model_of(rendered)}["wk-gpu3"] == "NVIDIA GeForce RTX 4090"
