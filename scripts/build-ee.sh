#!/usr/bin/env bash
# Build the execution environment of execution-environment.yml (docs/execution-environment.md).
#   scripts/build-ee.sh create   the collection tarball, then `ansible-builder create` into context/
#   scripts/build-ee.sh build    the same, then `ansible-builder build -t ${EE_TAG:-cps-gpu-cluster-ee}`
# ansible-builder comes from requirements-dev.txt (.venv); build needs podman or docker.
set -euo pipefail
cd "$(dirname "$0")/.."
action="${1:-create}"
case "$action" in create|build) ;; *) echo "usage: $0 create|build" >&2; exit 2;; esac
builder="${ANSIBLE_BUILDER:-$(command -v ansible-builder || echo .venv/bin/ansible-builder)}"
galaxy="$(command -v ansible-galaxy || echo .venv/bin/ansible-galaxy)"
rm -rf build/ee
mkdir -p build/ee
"$galaxy" collection build --force --output-path build/ee >/dev/null
mv build/ee/cps-gpu_cluster-*.tar.gz build/ee/cps-gpu_cluster.tar.gz
if [ "$action" = create ]; then
  exec "$builder" create -f execution-environment.yml -c "${EE_CONTEXT:-context}"
fi
exec "$builder" build -f execution-environment.yml -c "${EE_CONTEXT:-context}" -t "${EE_TAG:-cps-gpu-cluster-ee}"
