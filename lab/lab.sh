#!/usr/bin/env bash
# make lab: a podman lab mirroring the homelab topology (docs/lab.md).
#   bash lab/lab.sh up        create the containers and their inventory, run playbooks/site.yml
#   bash lab/lab.sh inventory (re)write the inventory only
#   bash lab/lab.sh down      remove the containers, the network and lab/.state
# Settings (environment): LAB_SUBNET (first three octets, default 172.31.250),
# LAB_NETWORK (podman network name), TEST_IMAGE, LAB_ANSIBLE_ARGS (extra
# ansible-playbook arguments, e.g. "--tags preflight,k3s" or "-v"), LAB_STATE
# (where the inventory and logs go, default lab/.state).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/tests/container/containers.conf}"
# The control-node tools of make deps (ansible-playbook, PyYAML).
if [ -x "$repo/.venv/bin/ansible-playbook" ]; then
  export PATH="$repo/.venv/bin:$PATH"
fi

subnet="${LAB_SUBNET:-172.31.250}"
network="${LAB_NETWORK:-cps-gpu-lab}"
image="${TEST_IMAGE:-localhost/cps-gpu-cluster-bookworm}:latest"
state="${LAB_STATE:-$repo/lab/.state}"
inventory="$state/inventory"

# name  group  last octet: the homelab in small (pve1, cp1..3, a GPU agent, a non-GPU agent)
nodes=(
  "lab-pve1 proxmox_hosts 2"
  "lab-cp1 k3s_servers 11"
  "lab-cp2 k3s_servers 12"
  "lab-cp3 k3s_servers 13"
  "lab-wk-gpu1 gpu_workers 21"
  "lab-wk-app1 app_nodes 31"
)

say() { printf 'lab: %s\n' "$*"; }

names() { for node in "${nodes[@]}"; do set -- $node; echo "$1"; done; }

network_up() {
  if podman network exists "$network"; then
    return
  fi
  say "creating podman network $network ($subnet.0/24)"
  podman network create --subnet "$subnet.0/24" --gateway "$subnet.1" "$network" >/dev/null
}

container_up() {
  local name=$1 ip=$2
  if [ "$(podman container inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ]; then
    return
  fi
  podman rm -f "$name" >/dev/null 2>&1 || true
  say "starting $name ($ip)"
  podman run -d --name "$name" --hostname "$name" \
    --network "$network" --ip "$ip" \
    --privileged --systemd always \
    --label cps.gpu_cluster.lab=true \
    "$image" /sbin/init >/dev/null
}

wait_for_systemd() {
  local name=$1 state_now
  for _ in $(seq 1 60); do
    state_now=$(podman exec "$name" systemctl is-system-running 2>/dev/null || true)
    case "$state_now" in
      running|degraded) return 0 ;;
    esac
    sleep 1
  done
  say "systemd in $name did not come up (state: ${state_now:-unknown})" >&2
  return 1
}

# Make the Proxmox stand-in look like a fresh Proxmox VE install booting with
# GRUB, so the vfio_passthrough role configures it for real. The boot tools a
# container cannot run are stubs in /usr/local/sbin that log each call to
# /var/log/lab-stubs.log.
pve_up() {
  podman exec "$1" sh -euc '
    [ -e /etc/default/grub ] || cat >/etc/default/grub <<GRUB
GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR="Proxmox VE"
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX=""
GRUB
    for tool in update-grub update-initramfs; do
      printf "#!/bin/sh\n# lab stub: a container has no boot loader or kernel to update\necho \"\$(basename \"\$0\") \$*\" >>/var/log/lab-stubs.log\n" >/usr/local/sbin/$tool
      chmod 0755 /usr/local/sbin/$tool
    done'
}

# The GPU worker's NVMe scratch disk: a loop device named like the VM's virtio
# disk (/dev/disk/by-id/virtio-scratch), so the storage phase partitions,
# formats and mounts it for real. The container's /dev is a tmpfs, so the
# partition nodes the kernel adds are reached through a devtmpfs mount.
scratch_up() {
  podman exec "$1" sh -euc '
    [ -e /dev/disk/by-id/virtio-scratch ] && exit 0
    truncate -s 512M /var/tmp/lab-scratch.img
    loop=$(losetup --find --partscan --show /var/tmp/lab-scratch.img)
    mkdir -p /run/lab-devtmpfs /dev/disk/by-id
    mountpoint -q /run/lab-devtmpfs || mount -t devtmpfs devtmpfs /run/lab-devtmpfs
    ln -sfn "/run/lab-devtmpfs/${loop##*/}" /dev/disk/by-id/virtio-scratch
    echo "lab: $(hostname) scratch disk: $loop as /dev/disk/by-id/virtio-scratch"'
}

# Loop devices belong to the host kernel: detach them before the container goes.
scratch_down() {
  podman exec "$1" sh -uc '
    umount /mnt/fast-scratch 2>/dev/null
    for loop in $(losetup -j /var/tmp/lab-scratch.img -O NAME -n 2>/dev/null); do losetup -d "$loop"; done
    true' || true
}

# The lab machine is offline: the k3s phase installs a stand-in "release" from
# an air-gap directory on the control node (a script that prints the pinned
# version, with its sha256 file) and writes config and units without starting
# k3s (k3s_node_start: false).
k3s_standin() {
  local dir="$state/k3s-airgap" version
  version=$(yaml_value gpu_cluster_k3s_version)
  mkdir -p "$dir"
  printf '#!/bin/sh\n# lab stand-in for k3s %s: the lab cannot download the release\necho "k3s version %s (lab stand-in)"\n' \
    "$version" "$version" >"$dir/k3s"
  chmod 0755 "$dir/k3s"
  (cd "$dir" && sha256sum k3s >sha256sum-amd64.txt)
}

write_inventory() {
  local name group octet
  # Only what this writes is replaced: the state directory beside it ($inventory/.gpu-cluster: the
  # cluster identity, the server token, backups) is the cluster's and survives every lab run.
  rm -rf "$inventory/hosts.yml" "$inventory/group_vars"
  mkdir -p "$inventory/group_vars/all"
  {
    echo "---"
    echo "# Generated by lab/lab.sh: the podman lab in the inventory format of docs/inventory.md."
    echo "# Host names are container names; gpu_cluster_node_ip is each container's address."
    echo "all:"
    echo "  children:"
    echo "    proxmox_hosts:"
    echo "      hosts:"
    emit_hosts proxmox_hosts "        "
    echo "    nfs_servers:"
    echo "      hosts:"
    echo "        lab-pve1: {}"
    echo "    k3s_cluster:"
    echo "      children:"
    echo "        k3s_servers:"
    echo "          hosts:"
    emit_hosts k3s_servers "            "
    echo "        k3s_agents:"
    echo "          children:"
    for group in gpu_workers infra_nodes app_nodes; do
      echo "            $group:"
      if [ -n "$(emit_hosts "$group" "")" ]; then
        echo "              hosts:"
        emit_hosts "$group" "                "
      else
        echo "              hosts: {}"
      fi
    done
  } >"$inventory/hosts.yml"

  cat >"$inventory/group_vars/all/main.yml" <<EOF
---
# Generated by lab/lab.sh. The same collection variables as inventories/homelab,
# with the lab's network, plus what tells the phases they run in a lab.
ansible_connection: containers.podman.podman
ansible_user: root
ansible_python_interpreter: /usr/bin/python3

gpu_cluster_name: lab
gpu_cluster_domain: lab.lan
gpu_cluster_node_network: $subnet.0/24
gpu_cluster_gateway: $subnet.1
gpu_cluster_dns_servers: [$subnet.1]
gpu_cluster_api_vip: $subnet.100
gpu_cluster_cluster_cidr: 10.42.0.0/16
gpu_cluster_service_cidr: 10.43.0.0/16
# The NFS export the storage classes use: the lab's Proxmox-like host stands
# in for the homelab's NAS and runs the role nfs_server (group nfs_servers):
# exported to the five nodes' addresses only, root squashed, directory owned
# by gpu-cluster-nfs (2049) and not world-writable; nfsd is not started in a
# container (group_vars/nfs_servers.yml).
gpu_cluster_nfs_server: $subnet.2
gpu_cluster_nfs_path: /export/k3s
gpu_cluster_nfs_mount_options: [nfsvers=4.1, rsize=1048576, wsize=1048576, hard, timeo=600, retrans=2, noatime]
# The node firewall runs in the lab as everywhere (docs/k3s.md): each node container loads its
# nftables table; this machine reaches them through podman, not the network, and sits on the node
# network itself (the gateway), so no client network is added.
gpu_cluster_firewall_enabled: true
gpu_cluster_firewall_clients: []
gpu_cluster_k3s_version: $(yaml_value gpu_cluster_k3s_version)
gpu_cluster_gpu_operator_version: $(yaml_value gpu_cluster_gpu_operator_version)
gpu_cluster_node_feature_rules: true
gpu_cluster_delivery: direct
gpu_cluster_kubeconfig: $state/kubeconfig.yaml
gpu_cluster_fleet_dir: $state/fleet
gpu_cluster_verify_report_dir: $state/reports

# A lab: containers, no GPUs, no Proxmox API, no reboots, no k3s download.
# Phases that need those say "SKIPPED <phase>: <reason>" (docs/lab.md).
gpu_cluster_lab: true

# k3s phase: a stand-in binary from an air-gap directory (lab.sh writes it), never
# started: the prerequisites, binary, config and units are real; the start, the
# waits, the API reconciliation and the kubeconfig fetch say SKIPPED.
k3s_airgap_dir: $state/k3s-airgap
k3s_node_start: false
# Containers share the host's clock and need no extra packages (but nftables, for the firewall).
k3s_prereq_packages: [ca-certificates, curl]
k3s_prereq_time_sync: false
EOF
  k3s_standin

  cat >"$inventory/group_vars/proxmox_hosts.yml" <<'EOF'
---
# The lab's Proxmox-like host is a Debian container with a GRUB layout and no
# Proxmox API. The role vfio_passthrough writes the IOMMU kernel arguments and
# the vfio-pci settings for the homelab's GPU id for real, but never reboots
# (its verification says SKIPPED); the PCI mappings of the two declared cards
# are skipped for want of a Proxmox API.
gpu_cluster_proxmox_node: lab-pve1
gpu_cluster_gpu_pci_ids: ["10de:20b5"]
gpu_cluster_gpu_pci_devices:
  - {name: a100-0, address: "0000:17:00.0"}
  - {name: a100-1, address: "0000:31:00.0"}
vfio_passthrough_reboot: false
EOF

  cat >"$inventory/group_vars/nfs_servers.yml" <<'EOF'
---
# A container's kernel has no nfsd: the exports are written and published
# with exportfs, the server is enabled but not started.
nfs_server_service_start: false
EOF

  cat >"$inventory/group_vars/k3s_servers.yml" <<'EOF'
---
gpu_cluster_vm_cores: 4
gpu_cluster_vm_memory_mb: 16384
gpu_cluster_vm_disk_gb: 100
EOF

  cat >"$inventory/group_vars/gpu_workers.yml" <<'EOF'
---
# What the lab's GPU worker claims; it has no GPU, so the phases that would
# prove it (gpu, verify) skip in the lab.
gpu_cluster_vm_cores: 16
gpu_cluster_vm_memory_mb: 131072
gpu_cluster_vm_disk_gb: 500
gpu_cluster_gpu_count: 2
gpu_cluster_gpu_model: NVIDIA A100 80GB PCIe
# A 512 MB loop device stands in for the 1 TB NVMe scratch disk (lab.sh up).
gpu_cluster_scratch_device: /dev/disk/by-id/virtio-scratch
EOF
  say "inventory written to ${inventory#"$repo"/}"
}

# A value of the homelab's group_vars/all, so the lab pins the same versions.
yaml_value() {
  python3 - "$1" "$repo/inventories/homelab/group_vars/all" <<'PY'
import sys, pathlib, yaml
name, directory = sys.argv[1], pathlib.Path(sys.argv[2])
for path in sorted(directory.glob("*.yml")):
    data = yaml.safe_load(path.read_text()) or {}
    if name in data:
        print(data[name])
        break
else:
    sys.exit("lab: %s is not set in %s" % (name, directory))
PY
}

emit_hosts() {
  local wanted=$1 indent=$2 node
  for node in "${nodes[@]}"; do
    set -- $node
    if [ "$2" = "$wanted" ]; then
      printf '%s%s:\n%s  ansible_host: %s\n%s  gpu_cluster_node_ip: %s\n' "$indent" "$1" "$indent" "$1" "$indent" "$subnet.$3"
      if [ "$wanted" = gpu_workers ]; then
        printf '%s  gpu_cluster_gpu_pci_mappings: [a100-0, a100-1]\n' "$indent"
      fi
    fi
  done
}

recap() {
  local log=$1
  echo
  echo "================ lab recap ================"
  sed -n '/^PLAY RECAP/,/^$/p' "$log" | tail -n +2
  echo "skipped phases:"
  grep -o 'SKIPPED [^:"]*: [^"]*' "$log" | awk '!seen[$0]++ { print "  " $0 }' || echo "  (none)"
  echo "log: ${log#"$repo"/}"
}

up() {
  command -v podman >/dev/null || { echo "lab: podman is required" >&2; exit 1; }
  if ! podman image exists "$image"; then
    echo "lab: image $image is missing; run 'make image' (make lab does)" >&2
    exit 1
  fi
  mkdir -p "$state"
  network_up
  local node
  for node in "${nodes[@]}"; do
    set -- $node
    container_up "$1" "$subnet.$3"
  done
  for name in $(names); do
    wait_for_systemd "$name"
  done
  for node in "${nodes[@]}"; do
    set -- $node
    case "$2" in
      gpu_workers) scratch_up "$1" ;;
      proxmox_hosts) pve_up "$1" ;;
    esac
  done
  write_inventory

  local log="$state/site.log" rc
  set +e
  say "running playbooks/site.yml against the lab (log: ${log#"$repo"/})"
  ANSIBLE_CONFIG="$repo/ansible.cfg" \
  ANSIBLE_COLLECTIONS_PATH="$repo/collections:${ANSIBLE_COLLECTIONS_PATH:-$HOME/.ansible/collections}" \
  ANSIBLE_INJECT_FACT_VARS=false \
  ANSIBLE_CACHE_PLUGIN_CONNECTION="$state/facts" \
  ANSIBLE_FORCE_COLOR=0 \
    ansible-playbook playbooks/site.yml -i "$inventory" ${LAB_ANSIBLE_ARGS:-} 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  recap "$log"
  if [ "$rc" -ne 0 ]; then
    echo "lab: playbooks/site.yml failed (exit $rc); containers left running for inspection, 'make lab-destroy' removes them" >&2
    exit "$rc"
  fi
  say "done; 'make lab-destroy' removes the lab"
}

down() {
  local name
  for name in $(names); do
    if podman container exists "$name"; then
      scratch_down "$name"
      say "removing $name"
      podman rm -f -t 2 "$name" >/dev/null
    fi
  done
  if podman network exists "$network"; then
    say "removing podman network $network"
    podman network rm "$network" >/dev/null
  fi
  rm -rf "$state"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  inventory) write_inventory ;;
  *) echo "usage: $0 up|down|inventory" >&2; exit 2 ;;
esac
