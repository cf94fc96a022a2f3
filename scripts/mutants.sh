#!/usr/bin/env bash
# make mutants: mutation testing of plugins/module_utils/ against the unit tests (issue 19).
# Runs cosmic-ray (pinned in requirements-dev.txt) on a scratch copy of the checkout (the
# checkout itself is never mutated), one module at a time, each against its own unit tests
# (tests/unit/plugins/module_utils/test_<module>.py and the filter/module tests that import it).
# Prints each module's score and every surviving mutant; exits 1 when a score is below
# MUTANTS_MIN (default 85). Slow: minutes per module on 2 cores.
#   MUTANTS_FILES="phase kernel_cmdline" make mutants     # a few modules
#   MUTANTS_MIN=0 make mutants                             # report only
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=${VENV_BIN:-$repo/.venv/bin}
min=${MUTANTS_MIN:-85}
files=${MUTANTS_FILES:-$(cd plugins/module_utils && ls ./*.py | sed 's|^\./||; s|\.py$||')}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-cluster-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work"
mkdir -p "$work/collections/ansible_collections/cps"
ln -sfn ../../.. "$work/collections/ansible_collections/cps/gpu_cluster"
export GPU_CLUSTER_SHARED=${GPU_CLUSTER_SHARED:-$repo/../shared}
status=0
summary=()
for name in $files; do
  module=plugins/module_utils/$name.py
  [ -f "$work/$module" ] || { echo "mutants: no $module" >&2; exit 2; }
  tests=()
  [ -f "$work/tests/unit/plugins/module_utils/test_$name.py" ] && tests+=("tests/unit/plugins/module_utils/test_$name.py")
  while IFS= read -r t; do tests+=("$t"); done < <(cd "$work" && grep -l "module_utils.$name import\|module_utils import .*\b$name\b" tests/unit/plugins/filter/*.py tests/unit/plugins/modules/*.py 2>/dev/null || true)
  if [ ${#tests[@]} -eq 0 ]; then
    echo "mutants: $name: no unit test imports it: score 0" ; summary+=("$name 0/0 (no tests)"); status=1; continue
  fi
  cat > "$work/cr-$name.toml" <<TOML
[cosmic-ray]
module-path = "$module"
timeout = 60.0
excluded-modules = []
test-command = "$bin/python -m pytest -x -q -p no:cacheprovider ${tests[*]}"

[cosmic-ray.distributor]
name = "local"
TOML
  echo "mutants: $name against ${tests[*]}"
  (cd "$work" && "$bin/cosmic-ray" init "cr-$name.toml" "cr-$name.sqlite" && "$bin/cosmic-ray" baseline "cr-$name.toml" >/dev/null \
     && "$bin/cosmic-ray" exec "cr-$name.toml" "cr-$name.sqlite")
  (cd "$work" && "$bin/python" "$repo/scripts/mutants_report.py" "cr-$name.sqlite" "$name" "$min") > "$work/report-$name.txt" || status=1
  cat "$work/report-$name.txt"
  summary+=("$(head -1 "$work/report-$name.txt")")
done
echo
echo "mutants: summary (minimum ${min}%)"
printf '  %s\n' "${summary[@]}"
exit $status
