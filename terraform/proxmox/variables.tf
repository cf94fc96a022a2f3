# ---------------------------------------------------------------------------
# Proxmox VE: where the VMs go. Credentials come from the environment only
# (PROXMOX_VE_API_TOKEN), never from a variable.
# ---------------------------------------------------------------------------
variable "proxmox_endpoint" {
  type        = string
  description = "Proxmox VE API URL (https://<host>:8006/ or .../api2/json); empty: the provider reads PROXMOX_VE_ENDPOINT."
  default     = ""

  validation {
    condition     = var.proxmox_endpoint == "" || can(regex("^https?://[^/]+", var.proxmox_endpoint))
    error_message = "proxmox_endpoint must be an http(s) URL such as https://10.0.0.2:8006/api2/json, or empty to use PROXMOX_VE_ENDPOINT."
  }
}

variable "proxmox_insecure" {
  type        = bool
  description = "Accept the Proxmox VE API's self-signed TLS certificate."
  default     = false
}

variable "proxmox_node" {
  type        = string
  description = "Name of the Proxmox VE node that runs the VMs (and holds the GPUs)."

  validation {
    condition     = can(regex("^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$", var.proxmox_node))
    error_message = "proxmox_node must be a Proxmox node name (letters, digits and '-'), e.g. pve1."
  }
}

variable "proxmox_host_address" {
  type        = string
  description = "Address Ansible uses to reach the Proxmox host (ansible_host of the proxmox_hosts group in the generated inventory)."

  validation {
    condition     = length(trimspace(var.proxmox_host_address)) > 0
    error_message = "proxmox_host_address must be the Proxmox host's IP or DNS name, e.g. 10.0.0.2."
  }
}

variable "template_vm_id" {
  type        = number
  description = "VM id of the Debian/Ubuntu cloud-init template every VM is cloned from (UEFI, cloud-init drive, qemu-guest-agent)."

  validation {
    condition     = var.template_vm_id >= 100 && var.template_vm_id <= 999999999 && floor(var.template_vm_id) == var.template_vm_id
    error_message = "template_vm_id must be a Proxmox VM id: an integer from 100 to 999999999."
  }
}

variable "vm_storage" {
  type        = string
  description = "Proxmox storage for the OS disks, EFI disks and cloud-init drives."
  default     = "local-lvm"

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9_.-]*$", var.vm_storage))
    error_message = "vm_storage must be a Proxmox storage id, e.g. local-lvm."
  }
}

variable "scratch_storage" {
  type        = string
  description = "Proxmox storage on the NVMe drives for the GPU workers' scratch disks."

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9_.-]*$", var.scratch_storage))
    error_message = "scratch_storage must be a Proxmox storage id, e.g. nvme-scratch."
  }
}

variable "bridge" {
  type        = string
  description = "Linux bridge the VMs' network interface attaches to."
  default     = "vmbr0"

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,14}$", var.bridge))
    error_message = "bridge must be a Linux bridge name of at most 15 characters, e.g. vmbr0."
  }
}

variable "vm_id_base" {
  type        = number
  description = "First VM id: control planes get vm_id_base + 1.., GPU workers vm_id_base + 11.. (unless a VM sets vm_id)."
  default     = 200

  validation {
    condition     = var.vm_id_base >= 100 && floor(var.vm_id_base) == var.vm_id_base
    error_message = "vm_id_base must be an integer of at least 100."
  }
}

variable "hugepages" {
  type        = string
  description = "Back the GPU workers' memory with huge pages: \"2\" (2 MiB), \"1024\" (1 GiB) or \"any\"; empty for none. Needs huge pages reserved on the host."
  default     = ""

  validation {
    condition     = contains(["", "2", "1024", "any"], var.hugepages)
    error_message = "hugepages must be \"\", \"2\", \"1024\" or \"any\"."
  }
}

variable "placement" {
  type = map(object({
    affinity  = string
    host_node = number
    hugepages = optional(string, "")
  }))
  description = "NUMA placement per VM name (GPU worker or control plane), computed by the numa_placement planner (docs/performance.md): host CPUs the vCPUs are pinned to (cpu affinity, kernel list format), the host NUMA node the memory is bound to, and the huge page size of its memory (\"1024\", \"2\" or \"\"). Empty: no pinning."
  default     = {}

  validation {
    condition     = alltrue([for p in values(var.placement) : can(regex("^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$", p.affinity))])
    error_message = "Every placement affinity must be a host CPU list such as 2-9,50-57 (the kernel's list format)."
  }

  validation {
    condition     = alltrue([for p in values(var.placement) : p.host_node >= 0 && floor(p.host_node) == p.host_node])
    error_message = "Every placement host_node must be a host NUMA node number (0, 1, ...)."
  }

  validation {
    condition     = alltrue([for p in values(var.placement) : contains(["", "2", "1024"], p.hugepages)])
    error_message = "Every placement hugepages must be \"1024\" (1 GiB), \"2\" (2 MiB) or \"\" (none)."
  }
}

# ---------------------------------------------------------------------------
# Cluster network and access
# ---------------------------------------------------------------------------
variable "cluster_name" {
  type        = string
  description = "Name of the cluster (gpu_cluster_name): VM tags and the generated inventory."

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.cluster_name))
    error_message = "cluster_name must be a DNS label: lowercase letters, digits and '-', e.g. homelab."
  }
}

variable "domain" {
  type        = string
  description = "DNS search domain of the VMs (gpu_cluster_domain); empty for none."
  default     = ""

  validation {
    condition     = var.domain == "" || can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", var.domain))
    error_message = "domain must be a lowercase DNS name such as homelab.lan, or empty."
  }
}

variable "node_network" {
  type        = string
  description = "Network of the VMs in CIDR form (gpu_cluster_node_network); its prefix length is given to every static IP."

  validation {
    condition     = can(cidrnetmask(var.node_network)) && can(regex("^[0-9.]+/[0-9]+$", var.node_network))
    error_message = "node_network must be an IPv4 network in CIDR form, e.g. 10.0.0.0/24."
  }
}

variable "gateway" {
  type        = string
  description = "Default gateway of the VMs (gpu_cluster_gateway)."

  validation {
    condition     = can(regex("^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$", var.gateway))
    error_message = "gateway must be an IPv4 address, e.g. 10.0.0.1."
  }
}

variable "dns_servers" {
  type        = list(string)
  description = "Resolvers given to the VMs through cloud-init (gpu_cluster_dns_servers)."

  validation {
    condition     = length(var.dns_servers) > 0 && alltrue([for s in var.dns_servers : can(regex("^[0-9a-fA-F:.]+$", s))])
    error_message = "dns_servers must be a non-empty list of IP addresses, e.g. [\"10.0.0.1\"]."
  }
}

variable "ssh_user" {
  type        = string
  description = "User cloud-init creates on every VM (ansible_user of the VMs in the generated inventory)."
  default     = "debian"

  validation {
    condition     = can(regex("^[a-z_][a-z0-9_-]{0,31}$", var.ssh_user))
    error_message = "ssh_user must be a Linux user name, e.g. debian."
  }
}

variable "ssh_public_keys" {
  type        = list(string)
  description = "SSH public keys cloud-init installs for ssh_user."

  validation {
    condition     = length(var.ssh_public_keys) > 0 && alltrue([for k in var.ssh_public_keys : can(regex("^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9@.-]+) [A-Za-z0-9+/=]+", k))])
    error_message = "ssh_public_keys must hold at least one OpenSSH public key line (ssh-ed25519 AAAA..., ssh-rsa AAAA..., ecdsa-sha2-...)."
  }
}

# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------
variable "presets" {
  type = map(object({
    cores           = number
    memory_mb       = number
    disk_gb         = number
    scratch_disk_gb = number
    gpus            = number
  }))
  description = "GPU worker size presets, like a cloud GPU node pool's machine types: vCPUs, memory (MiB), OS disk and NVMe scratch disk (GB), GPUs."
  default = {
    small  = { cores = 8, memory_mb = 65536, disk_gb = 200, scratch_disk_gb = 512, gpus = 1 }
    medium = { cores = 16, memory_mb = 131072, disk_gb = 500, scratch_disk_gb = 1024, gpus = 1 }
    large  = { cores = 16, memory_mb = 131072, disk_gb = 500, scratch_disk_gb = 1024, gpus = 2 }
  }

  validation {
    condition = alltrue([for p in values(var.presets) :
      p.cores >= 1 && p.memory_mb >= 1024 && p.disk_gb >= 10 && p.scratch_disk_gb >= 0 && p.gpus >= 0
    ])
    error_message = "Every preset needs cores >= 1, memory_mb >= 1024, disk_gb >= 10, scratch_disk_gb >= 0 and gpus >= 0."
  }

  validation {
    condition     = alltrue([for name in ["small", "medium", "large"] : contains(keys(var.presets), name)])
    error_message = "presets must define at least small, medium and large."
  }
}

variable "control_plane_size" {
  type = object({
    cores     = optional(number, 4)
    memory_mb = optional(number, 16384)
    disk_gb   = optional(number, 100)
  })
  description = "Size of every control-plane VM: vCPUs, memory (MiB), OS disk (GB)."
  default     = {}

  validation {
    condition     = var.control_plane_size.cores >= 1 && var.control_plane_size.memory_mb >= 2048 && var.control_plane_size.disk_gb >= 10
    error_message = "control_plane_size needs cores >= 1, memory_mb >= 2048 (etcd) and disk_gb >= 10."
  }
}

# ---------------------------------------------------------------------------
# The VMs
# ---------------------------------------------------------------------------
variable "control_plane_count" {
  type        = number
  description = "How many control-plane VMs (cp1..cpN) to create when control_planes is empty: 1, or an odd number for etcd quorum."
  default     = 3

  validation {
    condition     = var.control_plane_count >= 1 && var.control_plane_count % 2 == 1
    error_message = "control_plane_count must be odd (1 without HA, 3 or 5 for HA): etcd needs a majority."
  }
}

variable "control_planes" {
  type = map(object({
    ip    = string
    vm_id = optional(number)
  }))
  description = "Control-plane VMs by host name, each with its static IP; empty: control_plane_count VMs cp1.. at host numbers 11.. of node_network."
  default     = {}

  validation {
    condition     = length(var.control_planes) == 0 || length(var.control_planes) % 2 == 1
    error_message = "control_planes must hold an odd number of VMs (1, 3 or 5): etcd needs a majority."
  }

  validation {
    condition     = alltrue([for name in keys(var.control_planes) : can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", name))])
    error_message = "Every control-plane name must be a DNS label (lowercase letters, digits and '-'): it becomes the Kubernetes node name."
  }
}

variable "gpu_worker_count" {
  type        = number
  description = "How many GPU worker VMs (wk-gpu1..N) to create when gpu_workers is empty."
  default     = 4

  validation {
    condition     = var.gpu_worker_count >= 0 && floor(var.gpu_worker_count) == var.gpu_worker_count
    error_message = "gpu_worker_count must be a non-negative integer."
  }
}

variable "gpu_worker_preset" {
  type        = string
  description = "Preset of the GPU workers that do not name one."
  default     = "large"

  validation {
    condition     = contains(["small", "medium", "large"], var.gpu_worker_preset)
    error_message = "gpu_worker_preset must be small, medium or large."
  }
}

variable "gpu_pci_mappings" {
  type        = list(string)
  description = "Pool of Proxmox PCI resource mapping names handed out in order to the generated GPU workers (when gpu_workers is empty), as many per worker as its preset's gpus."
  default     = []

  validation {
    condition     = alltrue([for m in var.gpu_pci_mappings : can(regex("^[A-Za-z][A-Za-z0-9_-]*$", m))]) && length(distinct(var.gpu_pci_mappings)) == length(var.gpu_pci_mappings)
    error_message = "gpu_pci_mappings must list distinct Proxmox PCI mapping ids (a letter, then letters, digits, '_' or '-'), e.g. [\"a100-0\", \"a100-1\"]."
  }
}

variable "gpu_workers" {
  type = map(object({
    ip              = string
    preset          = optional(string)
    cores           = optional(number)
    memory_mb       = optional(number)
    disk_gb         = optional(number)
    scratch_disk_gb = optional(number)
    gpus            = optional(number)
    gpu_model       = optional(string)
    gpu_mappings    = optional(list(string), [])
    gpu_addresses   = optional(list(string), [])
    vm_id           = optional(number)
  }))
  description = "GPU worker VMs by host name: static IP, preset (overridable per field), the GPU model when it differs from gpu_model, and the GPUs to pass through, by PCI resource mapping name (gpu_mappings) or by raw host PCI address (gpu_addresses)."
  default     = {}

  validation {
    condition     = alltrue([for w in values(var.gpu_workers) : w.preset == null || contains(["small", "medium", "large"], coalesce(w.preset, "large"))])
    error_message = "A GPU worker's preset must be small, medium or large."
  }

  validation {
    condition     = alltrue([for w in values(var.gpu_workers) : length(w.gpu_mappings) == 0 || length(w.gpu_addresses) == 0])
    error_message = "Give a GPU worker its GPUs either by mapping name (gpu_mappings) or by PCI address (gpu_addresses), not both."
  }

  validation {
    condition = alltrue(flatten([for w in values(var.gpu_workers) : [
      for a in w.gpu_addresses : can(regex("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(\\.[0-7])?$", a))
    ]]))
    error_message = "Every gpu_addresses entry must be a host PCI address [dddd:]bb:ss[.f] as lspci -D prints it, e.g. 0000:17:00.0."
  }

  validation {
    condition     = length(distinct(flatten([for w in values(var.gpu_workers) : concat(w.gpu_mappings, w.gpu_addresses)]))) == length(flatten([for w in values(var.gpu_workers) : concat(w.gpu_mappings, w.gpu_addresses)]))
    error_message = "A GPU can be passed through to one VM only: a mapping or address appears twice in gpu_workers."
  }

  validation {
    condition     = alltrue([for name in keys(var.gpu_workers) : can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", name))])
    error_message = "Every GPU worker name must be a DNS label (lowercase letters, digits and '-'): it becomes the Kubernetes node name."
  }
}

variable "scratch_disk_serial" {
  type        = string
  description = "Serial of the GPU workers' virtio scratch disk: the guest sees it as /dev/disk/by-id/virtio-<serial>."
  default     = "scratch"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,20}$", var.scratch_disk_serial))
    error_message = "scratch_disk_serial must be 1 to 20 letters, digits, '_' or '-'."
  }
}

# ---------------------------------------------------------------------------
# The generated inventory
# ---------------------------------------------------------------------------
variable "gpu_model" {
  type        = string
  description = "GPU model nvidia-smi reports on the workers (gpu_cluster_gpu_model in the generated inventory)."
  default     = "NVIDIA A100 80GB PCIe"

  validation {
    condition     = length(trimspace(var.gpu_model)) > 0
    error_message = "gpu_model must be the model name nvidia-smi prints, e.g. NVIDIA A100 80GB PCIe."
  }
}

variable "inventory_path" {
  type        = string
  description = "Where to write the generated Ansible inventory; empty: generated/inventory.yml in this module."
  default     = ""

  validation {
    condition     = var.inventory_path == "" || can(regex("\\.ya?ml$", var.inventory_path))
    error_message = "inventory_path must name a .yml or .yaml file (Ansible reads the inventory by its extension), or be empty."
  }
}

variable "inventory_vars" {
  type        = any
  description = "Variables copied as they are into the generated inventory, by group: {all = {...}, proxmox_hosts = {...}, k3s_servers = {...}, gpu_workers = {...}} (versions, CIDRs, NFS, PCI ids...)."
  default     = {}

  validation {
    condition     = can(keys(var.inventory_vars)) && alltrue([for g in keys(var.inventory_vars) : contains(["all", "proxmox_hosts", "k3s_cluster", "k3s_servers", "k3s_agents", "gpu_workers"], g)])
    error_message = "inventory_vars must be a map whose keys are groups: all, proxmox_hosts, k3s_cluster, k3s_servers, k3s_agents, gpu_workers."
  }
}
