# Control-plane VMs: small, no passthrough, etcd on the OS disk.
resource "proxmox_virtual_environment_vm" "control_plane" {
  for_each = local.control_planes

  name      = each.key
  node_name = var.proxmox_node
  vm_id     = each.value.vm_id
  tags      = [var.cluster_name, "k3s-server"]
  on_boot   = true
  started   = true

  clone {
    vm_id     = var.template_vm_id
    node_name = var.proxmox_node
    full      = true
  }

  machine       = "q35"
  bios          = "ovmf"
  scsi_hardware = "virtio-scsi-single"

  efi_disk {
    datastore_id      = var.vm_storage
    file_format       = "raw"
    type              = "4m"
    pre_enrolled_keys = false
  }

  cpu {
    type     = "host"
    sockets  = 1
    cores    = each.value.cores
    affinity = each.value.affinity
    numa     = each.value.host_node != null
  }

  # NUMA placement (docs/performance.md): one guest node, its memory bound to the host node.
  dynamic "numa" {
    for_each = each.value.host_node != null ? [each.value.host_node] : []
    content {
      device    = "numa0"
      cpus      = "0-${each.value.cores - 1}"
      memory    = each.value.memory_mb
      hostnodes = tostring(numa.value)
      policy    = "bind"
    }
  }

  memory {
    dedicated = each.value.memory_mb
    floating  = 0
  }

  agent {
    enabled = true
  }

  operating_system {
    type = "l26"
  }

  disk {
    datastore_id = var.vm_storage
    interface    = "scsi0"
    size         = each.value.disk_gb
    iothread     = true
    discard      = "on"
    ssd          = true
  }

  network_device {
    bridge = var.bridge
    model  = "virtio"
  }

  initialization {
    datastore_id = var.vm_storage

    dns {
      domain  = var.domain != "" ? var.domain : null
      servers = var.dns_servers
    }

    ip_config {
      ipv4 {
        address = "${each.value.ip}/${local.prefix_length}"
        gateway = var.gateway
      }
    }

    user_account {
      username = var.ssh_user
      keys     = var.ssh_public_keys
    }
  }
}

# GPU worker VMs: the GPUs passed through whole (hostpci, one entry per GPU),
# all memory dedicated (no ballooning: VFIO pins guest memory for DMA), and an
# NVMe-backed virtio scratch disk the guest finds by its serial.
resource "proxmox_virtual_environment_vm" "gpu_worker" {
  for_each = local.gpu_workers

  name      = each.key
  node_name = var.proxmox_node
  vm_id     = each.value.vm_id
  tags      = [var.cluster_name, "k3s-agent", "gpu"]
  on_boot   = true
  started   = true

  clone {
    vm_id     = var.template_vm_id
    node_name = var.proxmox_node
    full      = true
  }

  machine       = "q35"
  bios          = "ovmf"
  scsi_hardware = "virtio-scsi-single"

  efi_disk {
    datastore_id      = var.vm_storage
    file_format       = "raw"
    type              = "4m"
    pre_enrolled_keys = false
  }

  cpu {
    type     = "host"
    sockets  = 1
    cores    = each.value.cores
    affinity = each.value.affinity
    numa     = each.value.host_node != null
  }

  # NUMA placement (docs/performance.md): one guest node holding every vCPU and all memory,
  # bound to the host node of the worker's GPUs.
  dynamic "numa" {
    for_each = each.value.host_node != null ? [each.value.host_node] : []
    content {
      device    = "numa0"
      cpus      = "0-${each.value.cores - 1}"
      memory    = each.value.memory_mb
      hostnodes = tostring(numa.value)
      policy    = "bind"
    }
  }

  # 1 GiB pages are reserved at boot (vfio_passthrough): keep them when the VM stops, the
  # kernel could not allocate them again once memory is fragmented.
  memory {
    dedicated      = each.value.memory_mb
    floating       = 0
    hugepages      = each.value.hugepages
    keep_hugepages = each.value.hugepages == "1024"
  }

  agent {
    enabled = true
  }

  operating_system {
    type = "l26"
  }

  disk {
    datastore_id = var.vm_storage
    interface    = "scsi0"
    size         = each.value.disk_gb
    iothread     = true
    discard      = "on"
    ssd          = true
  }

  # Scratch: virtio-blk with a fixed serial -> /dev/disk/by-id/virtio-<serial>.
  disk {
    datastore_id = var.scratch_storage
    interface    = "virtio0"
    size         = each.value.scratch_disk_gb
    serial       = var.scratch_disk_serial
    iothread     = true
    discard      = "on"
    file_format  = "raw"
  }

  dynamic "hostpci" {
    for_each = each.value.gpu_devices
    content {
      device  = "hostpci${hostpci.key}"
      mapping = hostpci.value.mapping
      id      = hostpci.value.id
      pcie    = true
      rombar  = true
      xvga    = false
    }
  }

  network_device {
    bridge = var.bridge
    model  = "virtio"
  }

  initialization {
    datastore_id = var.vm_storage

    dns {
      domain  = var.domain != "" ? var.domain : null
      servers = var.dns_servers
    }

    ip_config {
      ipv4 {
        address = "${each.value.ip}/${local.prefix_length}"
        gateway = var.gateway
      }
    }

    user_account {
      username = var.ssh_user
      keys     = var.ssh_public_keys
    }
  }

  lifecycle {
    precondition {
      condition     = length(each.value.gpu_devices) == each.value.gpus
      error_message = "GPU worker ${each.key} has ${length(each.value.gpu_devices)} GPU(s) in gpu_mappings/gpu_addresses but its size asks for ${each.value.gpus}: list one mapping (or address) per GPU, or set gpus."
    }
  }
}

# The Ansible inventory of what was built, in the contract's shape.
resource "local_file" "inventory" {
  filename        = var.inventory_path != "" ? var.inventory_path : "${path.module}/generated/inventory.yml"
  content         = templatefile("${path.module}/inventory.yml.tftpl", local.inventory_vars)
  file_permission = "0644"
}
