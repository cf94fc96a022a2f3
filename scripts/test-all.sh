#!/usr/bin/env bash
# make test: every tier, each recorded by scripts/tier.sh, then the summary table.
# Two lanes run side by side: the molecule tier (podman containers; much of its time is spent
# waiting on systemd, apt and the containers) and the other tiers one after another. The molecule
# lane's output goes to .molecule-lane.log and is printed when both lanes are done. When the other
# tiers are done, their lane takes the molecule scenarios nobody has started yet (tier molecule-2;
# scripts/molecule-all.sh, MOLECULE_CLAIMS), so neither lane waits long for the other. The molecule
# lane runs two scenarios at a time (MOLECULE_WORKERS=2): k3s_restore and k3s_reset start together.
#   TEST_LANES=1 make test   one lane: every tier one after another (output as it comes)
set -u
cd "$(dirname "$0")/.."
make=${MAKE:-make}
tiers=scripts/tier.sh
rm -f .tiers.log .molecule-lane.log

lane_tiers() {
  for tier in ruff yamllint ansible-lint sanity unit integration render; do
    bash "$tiers" "$tier" "$make" --no-print-directory "$tier"
  done
}

if [ "${TEST_LANES:-2}" = 1 ]; then
  lane_tiers
  bash "$tiers" molecule "$make" --no-print-directory molecule
else
  MOLECULE_CLAIMS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-cluster-molecule-claims.XXXXXX")
  export MOLECULE_CLAIMS
  set -m  # the molecule lane in its own process group, so an interrupt stops all of it
  MOLECULE_WORKERS=${MOLECULE_WORKERS:-2} bash "$tiers" molecule "$make" --no-print-directory molecule >.molecule-lane.log 2>&1 &
  molecule_lane=$!
  set +m
  trap 'kill -- "-$molecule_lane" 2>/dev/null; rm -rf "$MOLECULE_CLAIMS"; exit 130' INT TERM
  echo "=== the molecule tier runs beside the others; its output follows when both lanes are done"
  lane_tiers
  echo "=== the other tiers are done: this lane takes the molecule scenarios not started yet"
  bash "$tiers" molecule-2 "$make" --no-print-directory molecule
  wait "$molecule_lane"
  rm -rf "$MOLECULE_CLAIMS"
  echo "=== output of the molecule tier (.molecule-lane.log)"
  cat .molecule-lane.log
fi
bash "$tiers" --summary
