#!/usr/bin/env bash
# Run every molecule scenario under molecule/ (or the ones named in
# MOLECULE_SCENARIOS), each to completion, and fail if any failed.
set -u
cd "$(dirname "$0")/.."
scenarios=${MOLECULE_SCENARIOS:-$(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -r -n1 basename | sort)}
failed=()
for s in $scenarios; do
  echo "=== molecule scenario $s"
  start=$(date +%s)
  if molecule test -s "$s"; then
    echo "=== molecule scenario $s passed in $(($(date +%s) - start))s"
  else
    echo "=== molecule scenario $s FAILED in $(($(date +%s) - start))s"
    failed+=("$s")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed molecule scenarios: ${failed[*]}"
  exit 1
fi
[ -n "$scenarios" ] || echo "no molecule scenarios found"
