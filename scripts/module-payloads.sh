#!/usr/bin/env bash
# Prints the size of each module's payload as Ansible ships it to a managed host (the AnsiballZ
# file: the module, every module_utils file it imports, zipped), issue 28. Each module is run once
# on localhost with no arguments (it refuses them; the payload is built and kept all the same).
#   bash scripts/module-payloads.sh            # every module
#   bash scripts/module-payloads.sh gpu_capacity vllm_endpoint_check
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${VENV_BIN:-$PWD/.venv/bin}
[ -e collections/ansible_collections/cps/gpu_cluster ] || {
  mkdir -p collections/ansible_collections/cps && ln -s ../../.. collections/ansible_collections/cps/gpu_cluster; }
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(ls plugins/modules | sed -n 's/\.py$//p')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-cluster-payloads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for name in "${names[@]}"; do
  mkdir -p "$tmp/$name"
  ANSIBLE_COLLECTIONS_PATH=$PWD/collections ANSIBLE_KEEP_REMOTE_FILES=1 ANSIBLE_REMOTE_TMP="$tmp/$name" \
    "$bin/ansible" localhost -c local -m "cps.gpu_cluster.$name" >/dev/null 2>&1 || true
  file=$(find "$tmp/$name" -name "AnsiballZ_$name.py" | head -n 1)
  [ -n "$file" ] || { echo "$name: no payload built" >&2; exit 1; }
  printf '%-22s %7d bytes\n' "$name" "$(stat -c %s "$file")"
done
