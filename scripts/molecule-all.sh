#!/usr/bin/env bash
# Run every molecule scenario under molecule/ (or the ones named in MOLECULE_SCENARIOS), each to
# completion, and fail if any failed. The longest scenarios go first (k3s_reset with its day-2
# cases, then k3s_ha), the others by name.
# MOLECULE_CLAIMS=DIR: several runs share the scenarios: each one takes a scenario by creating
# DIR/<scenario> (mkdir is atomic), so a scenario runs once whichever run gets to it first
# (make test's second lane joins in when its other tiers are done: scripts/test-all.sh).
set -u
cd "$(dirname "$0")/.."
first="k3s_reset k3s_ha"
all=$(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -r -n1 basename | sort)
if [ -n "${MOLECULE_SCENARIOS:-}" ]; then
  scenarios=$MOLECULE_SCENARIOS
else
  scenarios=$(for s in $first; do echo "$all" | grep -qx "$s" && echo "$s"; done
              echo "$all" | grep -vxF "$(printf '%s\n' $first)")
fi
claims=${MOLECULE_CLAIMS:-}
[ -z "$claims" ] || mkdir -p "$claims"
failed=()
ran=0
for s in $scenarios; do
  if [ -n "$claims" ] && ! mkdir "$claims/$s" 2>/dev/null; then
    continue  # another run has it
  fi
  ran=$((ran + 1))
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
[ "$ran" -gt 0 ] || [ -z "$scenarios" ] || echo "every scenario was taken by another run ($claims)"
