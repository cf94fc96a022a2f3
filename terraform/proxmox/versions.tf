terraform {
  required_version = ">= 1.5.0"

  required_providers {
    proxmox = {
      source  = "bpg/proxmox"
      version = "= 0.83.0"
    }
    local = {
      source  = "hashicorp/local"
      version = "= 2.5.3"
    }
  }
}

# The API token never lives in a file: the provider reads
# PROXMOX_VE_API_TOKEN ("user@realm!name=secret") from the environment, and
# PROXMOX_VE_ENDPOINT when var.proxmox_endpoint is empty. The provider wants
# the server's root URL: a trailing /api2/json (as in
# gpu_cluster_proxmox_api_url) is cut off.
provider "proxmox" {
  endpoint = var.proxmox_endpoint != "" ? "${trimsuffix(trimsuffix(var.proxmox_endpoint, "/"), "/api2/json")}/" : null
  insecure = var.proxmox_insecure
}
