#!/usr/bin/env bash
# make test-fresh: run `make test` the way a new machine does. Removes the
# cached test image (every tag), its debootstrap tarball, the venv, the
# ansible-test virtualenvs and pip's cache, and the collection link, then runs
# the whole suite, which rebuilds all of it in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/tests/container/containers.conf}"
image="${TEST_IMAGE:-localhost/cps-gpu-cluster-bookworm}"

if command -v podman >/dev/null 2>&1; then
  # Containers left by an interrupted molecule run or the lab hold the image.
  podman ps -aq --filter ancestor="$image:latest" | xargs -r podman rm -f >/dev/null
  podman images --format '{{.Repository}}:{{.Tag}}' | grep "^$image:" | xargs -r podman rmi -f >/dev/null || true
fi
rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/cps-gpu-cluster" "${XDG_CACHE_HOME:-$HOME/.cache}/pip" \
  "$HOME/.ansible/test" .venv collections build .tiers.log .molecule-lane.log
echo "test-fresh: removed the cached image, the venv and the caches; running make test"
exec make test
