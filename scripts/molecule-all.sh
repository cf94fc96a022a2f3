#!/usr/bin/env bash
# Run every molecule scenario under molecule/ (or the ones named in MOLECULE_SCENARIOS), each to
# completion, and fail if any failed. The longest scenarios go first (k3s_restore's etcd restores,
# k3s_reset with its other day-2 cases, then k3s_ha), the others by name.
# MOLECULE_CLAIMS=DIR: several runs share the scenarios: each one takes a scenario by creating
# DIR/<scenario> (mkdir is atomic), so a scenario runs once whichever run gets to it first
# (make test's second lane joins in when its other tiers are done: scripts/test-all.sh).
# MOLECULE_WORKERS=N (default 1): N runs of this script side by side, sharing the scenarios that way
# (the longest first, so k3s_restore and k3s_reset start together); the scenarios spend most of their time
# waiting on systemd and the containers, so two of them keep two cores busier than one. The other
# workers' output follows this one's, when they are done.
set -u
cd "$(dirname "$0")/.."
workers=${MOLECULE_WORKERS:-1}
if [ "$workers" -gt 1 ]; then
  own_claims=""
  if [ -z "${MOLECULE_CLAIMS:-}" ]; then
    MOLECULE_CLAIMS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-cluster-molecule-claims.XXXXXX")
    own_claims=$MOLECULE_CLAIMS
  fi
  export MOLECULE_CLAIMS
  logs=() pids=()
  for n in $(seq 2 "$workers"); do
    logs+=("$(mktemp "${TMPDIR:-/tmp}/gpu-cluster-molecule-worker$n.XXXXXX")")
    # a moment later, so that this worker (its output comes first) takes the longest scenario
    (sleep $((5 * (n - 1))); MOLECULE_WORKERS=1 exec bash "$0") >"${logs[-1]}" 2>&1 &
    pids+=($!)
  done
  MOLECULE_WORKERS=1 bash "$0"
  rc=$?
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || rc=1
    echo "=== molecule worker $((i + 2)) (its output)"
    cat "${logs[$i]}"
    rm -f "${logs[$i]}"
  done
  [ -z "$own_claims" ] || rm -rf "$own_claims"
  exit "$rc"
fi
first="k3s_restore k3s_reset k3s_ha"
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
