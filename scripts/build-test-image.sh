#!/usr/bin/env bash
# Build the systemd-enabled Debian image the molecule scenarios and the lab run in:
#   build-test-image.sh [bookworm|trixie]   (default bookworm)
# Debian bookworm is Proxmox VE 8's base and trixie Proxmox VE 9's; the scenarios run hosts of
# both (molecule/*/molecule.yml), the lab runs bookworm. Cached: an image is rebuilt only when
# this script changes (its hash and the release are the image tag) or when FORCE=1.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/tests/container/containers.conf}"
suite=${1:-bookworm}
case "$suite" in
  bookworm | trixie) ;;
  *) echo "build-test-image.sh: release '$suite' is not one the roles support (bookworm, trixie)" >&2; exit 2 ;;
esac
image="${TEST_IMAGE_PREFIX:-localhost/cps-gpu-cluster}-$suite"
# the suite's bytecode cache for Ansible's module payloads (tests/container/ansiballz_bytecode_cache.py)
cache_hook="$here/tests/container/ansiballz_bytecode_cache.py"
tag=$({ sha256sum "$0" "$cache_hook"; echo "$suite"; } | sha256sum | cut -c1-12)
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/cps-gpu-cluster"
mkdir -p "$cache_dir"
# make test's two lanes may both ask for the image: one builds it, the other waits, then finds it
exec 9>"$cache_dir/build-$suite.lock"
flock 9
tarball="$cache_dir/$suite-$tag.tar"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# Packages the roles expect on a fresh Debian/Proxmox install, plus what
# Ansible itself needs on a managed node (python3, python3-apt).
packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,iproute2,iputils-ping,procps,kmod,ca-certificates,curl,gnupg,initramfs-tools,grub-common,udev,openssh-client,less,parted,e2fsprogs,util-linux,nfs-common

if [ "${FORCE:-0}" != 1 ] && podman image exists "$image:$tag"; then
  echo "test image $image:$tag is up to date"
  podman tag "$image:$tag" "$image:latest"
  exit 0
fi

if [ "${FORCE:-0}" = 1 ] || [ ! -s "$tarball" ]; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  echo "debootstrap $suite into $root (a few minutes, cached afterwards)"
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$cache_dir/debootstrap-$suite.log" 2>&1 \
    || { tail -n 30 "$cache_dir/debootstrap-$suite.log"; exit 1; }
  # Make systemd behave as PID 1 in a container: no getty, no udev trigger noise.
  chroot "$root" systemctl mask getty@tty1.service serial-getty@.service \
    systemd-udevd.service systemd-udev-trigger.service systemd-remount-fs.service \
    sys-kernel-config.mount sys-kernel-debug.mount >/dev/null 2>&1 || true
  echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
  echo "deb $mirror $suite-updates main" >>"$root/etc/apt/sources.list"
  echo "deb http://security.debian.org/debian-security $suite-security main" >>"$root/etc/apt/sources.list"
  # Python imports it at start (a .pth line): module runs skip zipimport's compile (issue 45; the file says why)
  install -m 0644 "$cache_hook" "$root/usr/lib/python3/dist-packages/ansiballz_bytecode_cache.py"
  echo "import ansiballz_bytecode_cache" >"$root/usr/lib/python3/dist-packages/ansiballz_bytecode_cache.pth"
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
