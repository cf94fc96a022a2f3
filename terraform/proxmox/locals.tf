# Every VM resolved from the variables: names, IPs, VM ids, sizes (preset,
# then per-worker overrides) and the GPUs each worker gets. Only variables
# are read here, so `terraform console` can evaluate all of it without a
# provider, and the generated inventory is known at plan time.
locals {
  prefix_length = split("/", var.node_network)[1]

  # Control planes: the explicit map, or cp1..cpN at host numbers 11.. .
  control_plane_source = length(var.control_planes) > 0 ? var.control_planes : tomap({
    for i in range(var.control_plane_count) : "cp${i + 1}" => {
      ip    = cidrhost(var.node_network, 11 + i)
      vm_id = null
    }
  })

  control_planes = {
    for index, name in sort(keys(local.control_plane_source)) : name => {
      ip        = local.control_plane_source[name].ip
      vm_id     = coalesce(local.control_plane_source[name].vm_id, var.vm_id_base + 1 + index)
      cores     = var.control_plane_size.cores
      memory_mb = var.control_plane_size.memory_mb
      disk_gb   = var.control_plane_size.disk_gb
      # NUMA placement (docs/performance.md): pinned CPUs and the host node of the memory, or null.
      affinity  = contains(keys(var.placement), name) ? var.placement[name].affinity : null
      host_node = contains(keys(var.placement), name) ? var.placement[name].host_node : null
    }
  }

  # GPU workers: the explicit map, or wk-gpu1..N at host numbers 21.., each
  # taking its preset's number of mappings from the gpu_pci_mappings pool.
  generated_gpu_count = var.presets[var.gpu_worker_preset].gpus
  gpu_worker_source = length(var.gpu_workers) > 0 ? var.gpu_workers : tomap({
    for i in range(var.gpu_worker_count) : "wk-gpu${i + 1}" => {
      ip              = cidrhost(var.node_network, 21 + i)
      preset          = null
      cores           = null
      memory_mb       = null
      disk_gb         = null
      scratch_disk_gb = null
      gpus            = null
      gpu_model       = null
      gpu_mappings = [
        for j in range(local.generated_gpu_count) : var.gpu_pci_mappings[i * local.generated_gpu_count + j]
        if i * local.generated_gpu_count + j < length(var.gpu_pci_mappings)
      ]
      gpu_addresses = []
      vm_id         = null
    }
  })

  gpu_worker_preset = {
    for name, worker in local.gpu_worker_source : name => coalesce(worker.preset, var.gpu_worker_preset)
  }

  gpu_workers = {
    for index, name in sort(keys(local.gpu_worker_source)) : name => {
      ip              = local.gpu_worker_source[name].ip
      vm_id           = coalesce(local.gpu_worker_source[name].vm_id, var.vm_id_base + 11 + index)
      preset          = local.gpu_worker_preset[name]
      cores           = coalesce(local.gpu_worker_source[name].cores, var.presets[local.gpu_worker_preset[name]].cores)
      memory_mb       = coalesce(local.gpu_worker_source[name].memory_mb, var.presets[local.gpu_worker_preset[name]].memory_mb)
      disk_gb         = coalesce(local.gpu_worker_source[name].disk_gb, var.presets[local.gpu_worker_preset[name]].disk_gb)
      scratch_disk_gb = coalesce(local.gpu_worker_source[name].scratch_disk_gb, var.presets[local.gpu_worker_preset[name]].scratch_disk_gb)
      gpus            = coalesce(local.gpu_worker_source[name].gpus, var.presets[local.gpu_worker_preset[name]].gpus)
      gpu_model       = coalesce(local.gpu_worker_source[name].gpu_model, var.gpu_model)
      gpu_mappings    = local.gpu_worker_source[name].gpu_mappings
      # One hostpci entry per GPU: by PCI resource mapping name, or by raw address.
      gpu_devices = concat(
        [for m in local.gpu_worker_source[name].gpu_mappings : { mapping = m, id = null }],
        [for a in local.gpu_worker_source[name].gpu_addresses : { mapping = null, id = a }],
      )
      # NUMA placement (docs/performance.md): pinned CPUs, the host node of the GPUs and the
      # memory, and the huge page size (the plan's, else the module-wide hugepages), or null.
      affinity  = contains(keys(var.placement), name) ? var.placement[name].affinity : null
      host_node = contains(keys(var.placement), name) ? var.placement[name].host_node : null
      hugepages = (contains(keys(var.placement), name) ? var.placement[name].hugepages : "") != "" ? var.placement[name].hugepages : (var.hugepages != "" ? var.hugepages : null)
    }
  }

  scratch_device = "/dev/disk/by-id/virtio-${var.scratch_disk_serial}"

  # The generated inventory: the contract's groups, with the collection
  # variables Terraform knows merged under what inventory_vars adds.
  inventory_vars = {
    all_vars = merge(
      {
        gpu_cluster_name         = var.cluster_name
        gpu_cluster_node_network = var.node_network
        gpu_cluster_gateway      = var.gateway
        gpu_cluster_dns_servers  = var.dns_servers
        ansible_user             = var.ssh_user
      },
      { for k, v in { gpu_cluster_domain = var.domain } : k => v if v != "" },
      lookup(var.inventory_vars, "all", {}),
    )
    proxmox_vars = merge(
      {
        ansible_user                        = "root"
        gpu_cluster_proxmox_node            = var.proxmox_node
        gpu_cluster_proxmox_storage         = var.vm_storage
        gpu_cluster_proxmox_scratch_storage = var.scratch_storage
        gpu_cluster_proxmox_template_id     = var.template_vm_id
        gpu_cluster_proxmox_bridge          = var.bridge
      },
      { for k, v in { gpu_cluster_proxmox_api_url = var.proxmox_endpoint } : k => v if v != "" },
      lookup(var.inventory_vars, "proxmox_hosts", {}),
    )
    proxmox_hosts = {
      (var.proxmox_node) = { ansible_host = var.proxmox_host_address }
    }
    k3s_cluster_vars = lookup(var.inventory_vars, "k3s_cluster", {})
    k3s_server_vars = merge(
      {
        gpu_cluster_vm_cores     = var.control_plane_size.cores
        gpu_cluster_vm_memory_mb = var.control_plane_size.memory_mb
        gpu_cluster_vm_disk_gb   = var.control_plane_size.disk_gb
      },
      lookup(var.inventory_vars, "k3s_servers", {}),
    )
    k3s_servers = {
      for name, vm in local.control_planes : name => { ansible_host = vm.ip }
    }
    k3s_agent_vars = lookup(var.inventory_vars, "k3s_agents", {})
    gpu_worker_vars = merge(
      {
        gpu_cluster_gpu_model      = var.gpu_model
        gpu_cluster_scratch_device = local.scratch_device
      },
      lookup(var.inventory_vars, "gpu_workers", {}),
    )
    gpu_workers = {
      for name, vm in local.gpu_workers : name => merge(
        {
          ansible_host                = vm.ip
          gpu_cluster_vm_preset       = vm.preset
          gpu_cluster_vm_cores        = vm.cores
          gpu_cluster_vm_memory_mb    = vm.memory_mb
          gpu_cluster_vm_disk_gb      = vm.disk_gb
          gpu_cluster_scratch_disk_gb = vm.scratch_disk_gb
          gpu_cluster_gpu_count       = vm.gpus
          gpu_cluster_gpu_model       = vm.gpu_model
        },
        { for k, v in { gpu_cluster_gpu_pci_mappings = vm.gpu_mappings } : k => v if length(v) > 0 },
      )
    }
  }
}
