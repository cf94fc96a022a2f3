output "control_planes" {
  description = "Control-plane VMs by name: VM id and IP."
  value = {
    for name, vm in proxmox_virtual_environment_vm.control_plane : name => {
      vm_id = vm.vm_id
      ip    = local.control_planes[name].ip
    }
  }
}

output "gpu_workers" {
  description = "GPU worker VMs by name: VM id, IP, preset and the GPUs passed through."
  value = {
    for name, vm in proxmox_virtual_environment_vm.gpu_worker : name => {
      vm_id       = vm.vm_id
      ip          = local.gpu_workers[name].ip
      preset      = local.gpu_workers[name].preset
      gpu_devices = local.gpu_workers[name].gpu_devices
    }
  }
}

output "hosts" {
  description = "Every VM's IP by host name (control planes and GPU workers)."
  value = merge(
    { for name, vm in local.control_planes : name => vm.ip },
    { for name, vm in local.gpu_workers : name => vm.ip },
  )
}

output "inventory_path" {
  description = "Path of the generated Ansible inventory."
  value       = local_file.inventory.filename
}

output "inventory" {
  description = "The generated Ansible inventory (YAML)."
  value       = local_file.inventory.content
}
