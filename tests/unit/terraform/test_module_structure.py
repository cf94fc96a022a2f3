"""terraform/proxmox parsed with python-hcl2 (a real HCL2 parser): the structure
the issue asks for, without a terraform binary or provider."""

from __future__ import annotations

import re

import pytest
import yaml
from terraform_helpers import MODULE, PRESETS, REPO, SSH_KEY, blocks, load_module, resolve, resources, unquote

VM = "proxmox_virtual_environment_vm"
TEMPLATE_NAME = re.compile(r"\$\{\s*(?:jsonencode\()?([A-Za-z_][A-Za-z0-9_]*)\)?\s*\}|%\{\s*for\s+\w+\s*,\s*\w+\s+in\s+(\w+)")


@pytest.fixture(scope="module")
def parsed():
    return load_module()


@pytest.fixture(scope="module")
def variables(parsed):
    return blocks(parsed, "variable")


@pytest.fixture(scope="module")
def vms(parsed):
    found = resources(parsed)
    return {"control_plane": found[(VM, "control_plane")], "gpu_worker": found[(VM, "gpu_worker")]}


def test_every_file_parses(parsed):
    assert {"versions.tf", "variables.tf", "locals.tf", "main.tf", "outputs.tf"} <= set(parsed)


def test_provider_pinned_and_no_secrets(parsed):
    terraform = parsed["versions.tf"]["terraform"][0]
    providers = terraform["required_providers"][0]
    assert unquote(providers["proxmox"]["source"]) == "bpg/proxmox"
    for name in ("proxmox", "local"):
        assert re.fullmatch(r"= \d+\.\d+\.\d+", unquote(providers[name]["version"])), f"{name} must be pinned to one version"
    provider = blocks(parsed, "provider")["proxmox"]
    assert not {"api_token", "password", "username", "ssh"} & set(provider), "credentials come from the environment"
    assert "/api2/json" in provider["endpoint"], "gpu_cluster_proxmox_api_url's /api2/json is cut off for the provider"
    for path in MODULE.iterdir():
        text = path.read_text() if path.is_file() else ""
        assert not re.search(r"PVEAPIToken=|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text), path.name


def test_every_variable_typed_described_validated(variables):
    assert len(variables) > 20
    for name, body in variables.items():
        assert body.get("type"), f"variable {name} has no type"
        assert len(unquote(body.get("description", ""))) > 10, f"variable {name} has no description"
        if body["type"] != "bool":
            assert body.get("validation"), f"variable {name} has no validation block"
            for rule in body["validation"]:
                assert f"var.{name}" in rule["condition"], f"{name}: a validation must test the variable itself"
                assert len(unquote(rule["error_message"])) > 20, f"{name}: the error message must say what to set"


def test_no_secret_variables(variables):
    assert not [name for name in variables if re.search(r"token|secret|password", name)]


def test_presets_resolve(variables):
    presets = variables["presets"]["default"]
    assert presets == PRESETS, "terraform_helpers.PRESETS mirrors the module's default"
    assert set(presets) == {"small", "medium", "large"}
    for name, preset in presets.items():
        assert set(preset) == {"cores", "memory_mb", "disk_gb", "scratch_disk_gb", "gpus"}, name
        assert all(isinstance(v, int) and v > 0 for v in preset.values()), name
    assert unquote(variables["gpu_worker_preset"]["default"]) in presets
    # the homelab names preset "large" and its sizes are that preset's
    homelab = yaml.safe_load((REPO / "inventories/homelab/group_vars/gpu_workers.yml").read_text())
    large = presets[homelab["gpu_cluster_vm_preset"]]
    assert (large["cores"], large["memory_mb"], large["disk_gb"], large["scratch_disk_gb"], large["gpus"]) == (
        homelab["gpu_cluster_vm_cores"], homelab["gpu_cluster_vm_memory_mb"], homelab["gpu_cluster_vm_disk_gb"],
        homelab["gpu_cluster_scratch_disk_gb"], homelab["gpu_cluster_gpu_count"])


def test_defaults_are_the_issue_sizes(variables):
    assert variables["control_plane_count"]["default"] == 3
    assert variables["gpu_worker_count"]["default"] == 4
    size_type = variables["control_plane_size"]["type"]
    for field, value in (("cores", 4), ("memory_mb", 16384), ("disk_gb", 100)):
        assert f"{field} = optional(number, {value})" in size_type


@pytest.mark.parametrize("kind", ["control_plane", "gpu_worker"])
def test_vm_hardware(vms, kind):
    vm = vms[kind]
    assert vm["for_each"] == f"${{local.{kind}s}}"
    assert unquote(vm["machine"]) == "q35"
    assert unquote(vm["bios"]) == "ovmf"
    assert vm["efi_disk"][0]["datastore_id"] == "${var.vm_storage}"
    assert vm["clone"][0]["vm_id"] == "${var.template_vm_id}"
    assert unquote(vm["cpu"][0]["type"]) == "host"
    memory = vm["memory"][0]
    assert memory["floating"] == 0, "ballooning off: VFIO pins all guest memory"
    assert memory["dedicated"] == "${each.value.memory_mb}"
    assert vm["agent"][0]["enabled"] is True
    init = vm["initialization"][0]
    assert init["ip_config"][0]["ipv4"][0]["address"] == '"${each.value.ip}/${local.prefix_length}"'
    assert init["ip_config"][0]["ipv4"][0]["gateway"] == "${var.gateway}"
    assert init["user_account"][0]["keys"] == "${var.ssh_public_keys}"
    assert init["user_account"][0]["username"] == "${var.ssh_user}"
    assert vm["network_device"][0]["bridge"] == "${var.bridge}"


def test_gpu_worker_passthrough(vms):
    dynamic = {label: body for block in vms["gpu_worker"]["dynamic"] for label, body in block.items()}
    hostpci = dynamic['"hostpci"']
    assert hostpci["for_each"] == "${each.value.gpu_devices}"
    content = hostpci["content"][0]
    assert unquote(content["device"]) == "hostpci${hostpci.key}"
    assert content["mapping"] == "${hostpci.value.mapping}"
    assert content["id"] == "${hostpci.value.id}"
    assert (content["pcie"], content["rombar"], content["xvga"]) == (True, True, False)
    assert "hostpci" not in vms["control_plane"]
    assert '"hostpci"' not in {label for block in vms["control_plane"].get("dynamic", []) for label in block}
    precondition = vms["gpu_worker"]["lifecycle"][0]["precondition"][0]
    assert precondition["condition"] == "${length(each.value.gpu_devices) == each.value.gpus}"


def test_scratch_disk_has_stable_serial(vms, variables):
    disks = vms["gpu_worker"]["disk"]
    scratch = [d for d in disks if d.get("datastore_id") == "${var.scratch_storage}"]
    assert len(scratch) == 1
    assert unquote(scratch[0]["interface"]).startswith("virtio"), "virtio-blk: /dev/disk/by-id/virtio-<serial>"
    assert scratch[0]["serial"] == "${var.scratch_disk_serial}"
    assert scratch[0]["size"] == "${each.value.scratch_disk_gb}"
    homelab = yaml.safe_load((REPO / "inventories/homelab/group_vars/gpu_workers.yml").read_text())
    assert homelab["gpu_cluster_scratch_device"] == "/dev/disk/by-id/virtio-" + unquote(variables["scratch_disk_serial"]["default"])
    assert [d["datastore_id"] for d in vms["control_plane"]["disk"]] == ["${var.vm_storage}"]


def test_inventory_written_from_template(parsed):
    local_file = resources(parsed)[("local_file", "inventory")]
    assert local_file["content"] == '${templatefile("${path.module}/inventory.yml.tftpl", local.inventory_vars)}'
    inventory_vars = parsed["locals.tf"]["locals"][0]["inventory_vars"]
    text = (MODULE / "inventory.yml.tftpl").read_text()
    bound = {n for pair in re.findall(r"%\{\s*for\s+(\w+)\s*,\s*(\w+)\s+in", text) for n in pair}
    used = {a or b for a, b in TEMPLATE_NAME.findall(text)} - bound
    assert used == set(inventory_vars), "the template reads exactly the variables locals.tf passes"
    # the Python mirror produces the same variable names
    mirror = resolve({"proxmox_node": "pve1", "proxmox_host_address": "10.0.0.2", "template_vm_id": 9000,
                      "scratch_storage": "nvme", "cluster_name": "c", "node_network": "10.0.0.0/24",
                      "gateway": "10.0.0.1", "dns_servers": ["10.0.0.1"], "ssh_public_keys": [SSH_KEY]})
    assert set(mirror["inventory_vars"]) == set(inventory_vars)


def test_outputs(parsed):
    outputs = blocks(parsed, "output")
    assert {"control_planes", "gpu_workers", "hosts", "inventory_path", "inventory"} <= set(outputs)
    assert all(unquote(o.get("description", "")) for o in outputs.values())


def test_every_homelab_worker_gets_its_hostpci_entries(homelab_tfvars):
    resolved = resolve(homelab_tfvars)
    assert set(resolved["gpu_workers"]) == {"wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"}
    given = []
    for name, worker in resolved["gpu_workers"].items():
        # the dynamic block expanded as Terraform would: one hostpciN per device
        entries = {f"hostpci{i}": device for i, device in enumerate(worker["gpu_devices"])}
        assert len(entries) == worker["gpus"] == 2, name
        assert [d["mapping"] for d in entries.values()] == homelab_tfvars["gpu_workers"][name]["gpu_mappings"]
        given += [d["mapping"] for d in entries.values()]
    assert sorted(given) == [f"a100-{i}" for i in range(8)]


def test_generated_workers_share_the_mapping_pool():
    resolved = resolve({"proxmox_node": "pve1", "proxmox_host_address": "10.0.0.2", "template_vm_id": 9000,
                        "scratch_storage": "nvme", "cluster_name": "c", "node_network": "192.168.7.0/24",
                        "gateway": "192.168.7.1", "dns_servers": ["192.168.7.1"], "ssh_public_keys": [SSH_KEY],
                        "gpu_pci_mappings": [f"g{i}" for i in range(8)]})
    assert [w["ip"] for w in resolved["gpu_workers"].values()] == [f"192.168.7.{21 + i}" for i in range(4)]
    assert [[d["mapping"] for d in w["gpu_devices"]] for w in resolved["gpu_workers"].values()] == [
        ["g0", "g1"], ["g2", "g3"], ["g4", "g5"], ["g6", "g7"]]
    assert [c["vm_id"] for c in resolved["control_planes"].values()] == [201, 202, 203]
