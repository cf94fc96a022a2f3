#!/usr/bin/env bash
# make test: every tier, each recorded by scripts/tier.sh, then the summary table.
# Two lanes run side by side: the molecule tier (podman containers; much of its time is spent
# waiting on systemd, apt and the containers) and the other tiers one after another. The molecule
# lane's output goes to .molecule-lane.log and is printed when both lanes are done. When the other
# tiers are done, their lane takes the molecule scenarios nobody has started yet (tier molecule-2;
# scripts/molecule-all.sh, MOLECULE_CLAIMS), so neither lane waits long for the other. The molecule
# lane runs two scenarios at a time (MOLECULE_WORKERS=2): k3s_restore and k3s_reset start together.
#   TEST_LANES=1 make test   one lane: every tier one after another (output as it comes)
# First the venv (make dev-deps) and, beside it, the test images (make image, one build per release side
# by side): a fresh machine spends a minute or two on them, pip and each debootstrap mostly on one core
# or the network, and none needs another. make test ran host-deps before (they would otherwise run
# apt-get together).
set -u
cd "$(dirname "$0")/.."
make=${MAKE:-make}
tiers=scripts/tier.sh
rm -f .tiers.log .molecule-lane.log .image.log

image_build=""
if [ "${TEST_LANES:-2}" != 1 ]; then
  set -m  # in its own process group, so an interrupt stops debootstrap too
  # shellcheck disable=SC2016 # expanded by the inner bash
  bash -c 'rc=0; pids=(); for release in $1; do "$0" --no-print-directory image TEST_RELEASES="$release" & pids+=($!); done
           for pid in "${pids[@]}"; do wait "$pid" || rc=1; done; exit "$rc"' \
    "$make" "${TEST_RELEASES:-bookworm trixie}" >.image.log 2>&1 &
  image_build=$!
  set +m
  trap 'kill -- "-$image_build" 2>/dev/null; exit 130' INT TERM
fi
if ! "$make" --no-print-directory dev-deps; then
  [ -z "$image_build" ] || wait "$image_build"
  echo "make dev-deps failed: no tier ran" >&2
  exit 1
fi

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
  # its make image waits for the build started above (build-test-image.sh's lock), then finds the images
  MOLECULE_WORKERS=${MOLECULE_WORKERS:-2} bash "$tiers" molecule "$make" --no-print-directory molecule >.molecule-lane.log 2>&1 &
  molecule_lane=$!
  set +m
  trap 'kill -- "-$molecule_lane" "-$image_build" 2>/dev/null; rm -rf "$MOLECULE_CLAIMS"; exit 130' INT TERM
  echo "=== the molecule tier runs beside the others; its output follows when both lanes are done"
  lane_tiers
  echo "=== the other tiers are done: this lane takes the molecule scenarios not started yet"
  bash "$tiers" molecule-2 "$make" --no-print-directory molecule
  wait "$molecule_lane"
  rm -rf "$MOLECULE_CLAIMS"
  wait "$image_build"
  echo "=== the test images, built beside the venv (make image; .image.log): rc=$?"
  cat .image.log
  echo "=== output of the molecule tier (.molecule-lane.log)"
  cat .molecule-lane.log
fi
bash "$tiers" --summary
