#!/usr/bin/env bash
# Build the systemd-enabled Debian bookworm image the molecule scenarios and
# the lab run in (Debian bookworm is Proxmox VE 8's base). Cached: the image is
# rebuilt only when this script changes (its hash is the image tag) or
# when FORCE=1.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/container/containers.conf}"
image="${TEST_IMAGE:-localhost/cps-gpu-cluster-bookworm}"
tag=$(sha256sum "$0" | cut -c1-12)
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/cps-gpu-cluster"
tarball="$cache_dir/bookworm-$tag.tar"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# Packages the roles expect on a fresh Debian/Proxmox install, plus what
# Ansible itself needs on a managed node (python3, python3-apt).
packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,iproute2,iputils-ping,procps,kmod,ca-certificates,curl,gnupg,initramfs-tools,grub-common,udev,openssh-client,less,parted,e2fsprogs,util-linux,nfs-common

if [ "${FORCE:-0}" != 1 ] && podman image exists "$image:$tag"; then
  echo "test image $image:$tag is up to date"
  podman tag "$image:$tag" "$image:latest"
  exit 0
fi

mkdir -p "$cache_dir"
if [ "${FORCE:-0}" = 1 ] || [ ! -s "$tarball" ]; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  echo "debootstrap bookworm into $root (a few minutes, cached afterwards)"
  debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$cache_dir/debootstrap.log" 2>&1 \
    || { tail -n 30 "$cache_dir/debootstrap.log"; exit 1; }
  # Make systemd behave as PID 1 in a container: no getty, no udev trigger noise.
  chroot "$root" systemctl mask getty@tty1.service serial-getty@.service \
    systemd-udevd.service systemd-udev-trigger.service systemd-remount-fs.service \
    sys-kernel-config.mount sys-kernel-debug.mount >/dev/null 2>&1 || true
  echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
  echo "deb $mirror bookworm-updates main" >>"$root/etc/apt/sources.list"
  echo "deb http://security.debian.org/debian-security bookworm-security main" >>"$root/etc/apt/sources.list"
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
fi
podman import \
  --change 'CMD ["/sbin/init"]' \
  --change 'ENV container=podman' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  "$tarball" "$image:$tag" >/dev/null
podman tag "$image:$tag" "$image:latest"
echo "built test image $image:$tag"
