#!/usr/bin/env bash
# make test-fresh: run `make test` the way a new machine does. Removes the
# cached test images (every tag), their debootstrap tarballs, the venv, the
# ansible-test virtualenvs and pip's cache, and the collection link, then runs
# the whole suite, which rebuilds all of it in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/tests/container/containers.conf}"
prefix="${TEST_IMAGE_PREFIX:-localhost/cps-gpu-cluster}"

if command -v podman >/dev/null 2>&1; then
  for image in "$prefix-bookworm" "$prefix-trixie"; do
    # Containers left by an interrupted molecule run or the lab hold the image.
    podman ps -aq --filter ancestor="$image:latest" | xargs -r podman rm -f >/dev/null
    podman images --format '{{.Repository}}:{{.Tag}}' | grep "^$image:" | xargs -r podman rmi -f >/dev/null || true
  done
fi
rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/cps-gpu-cluster" "${XDG_CACHE_HOME:-$HOME/.cache}/pip" \
  "$HOME/.ansible/test" .venv collections build .tiers.log .molecule-lane.log .image.log
echo "test-fresh: removed the cached image, the venv and the caches; running make test"
exec make test
