#!/usr/bin/env bash
# make mutants: mutation testing of plugins/module_utils/ and plugins/plugin_utils/ (the pure logic)
# against the unit tests (issues 19, 28).
# Runs mutmut (pinned in requirements-dev.txt) on a scratch copy of the checkout (the checkout itself
# is never mutated). The copy is laid out as ansible_collections/cps/gpu_cluster/, so the mutated
# modules keep the import names the tests use. mutmut runs each mutant in a forked pytest with only
# the tests of tests/unit/plugins/ that call the mutated function.
# Prints each module's score, the score of all of them and every surviving mutant's diff; exits 1
# when the score of all the modules it ran is below MUTANTS_MIN (default 85).
#   MUTANTS_FILES="phase kernel_cmdline" make mutants     # a few modules
#   MUTANTS_MIN=0 make mutants                             # report only
#   MUTANTS_JOBS=4                                         # parallel mutants (default: nproc)
#   MUTANTS_KEEP=/tmp/mutants                              # keep the work tree there (mutmut browse)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=${VENV_BIN:-$repo/.venv/bin}
min=${MUTANTS_MIN:-85}
jobs=${MUTANTS_JOBS:-$(nproc)}
if [ -n "${MUTANTS_KEEP:-}" ]; then
  work=$MUTANTS_KEEP
  rm -rf "$work" && mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-cluster-mutants.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
prefix=ansible_collections/cps/gpu_cluster
mkdir -p "$work/$prefix"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work/$prefix"
sources=()
if [ -n "${MUTANTS_FILES:-}" ]; then
  for name in $MUTANTS_FILES; do
    found=
    for dir in module_utils plugin_utils; do
      if [ -f "plugins/$dir/$name.py" ]; then found=plugins/$dir/$name.py; fi
    done
    [ -n "$found" ] || { echo "mutants: no plugins/module_utils/$name.py or plugins/plugin_utils/$name.py" >&2; exit 2; }
    sources+=("\"$prefix/$found\"")
  done
else
  sources+=("\"$prefix/plugins/module_utils/\"" "\"$prefix/plugins/plugin_utils/\"")
fi
cat > "$work/pyproject.toml" <<TOML
[tool.mutmut]
source_paths = [$(IFS=,; echo "${sources[*]}")]
also_copy = ["$prefix/"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
pytest_add_cli_args_test_selection = ["$prefix/tests/unit/plugins/"]
TOML
export GPU_CLUSTER_SHARED=${GPU_CLUSTER_SHARED:-$repo/../shared}
echo "mutants: mutmut over ${MUTANTS_FILES:-all of plugins/module_utils/ and plugins/plugin_utils/} in $work ($jobs at a time)"
start=$(date +%s)
# mutmut draws a progress line many times a second: keep the log, show its last line
(cd "$work" && "$bin/mutmut" run --max-children "$jobs" >mutmut.log 2>&1) || {
  tail -c 4000 "$work/mutmut.log" | tr '\r' '\n' | tail -40; echo "mutants: mutmut failed (log: $work/mutmut.log)"; exit 2; }
echo "mutants: $(tr '\r' '\n' <"$work/mutmut.log" | grep -a 'mutations/second' | tail -1) in $(($(date +%s) - start)) s"
(cd "$work" && "$bin/python" "$repo/scripts/mutants_report.py" "$min" "$prefix/plugins/module_utils" "$prefix/plugins/plugin_utils")
