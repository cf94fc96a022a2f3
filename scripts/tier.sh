#!/usr/bin/env bash
# Run one test tier and record its result, or print the summary table.
#   tier.sh NAME CMD...   run CMD, append "NAME rc seconds" to .tiers.log
#   tier.sh --summary     print the table; exit 1 if any tier failed
set -u
log="${TIERS_LOG:-.tiers.log}"
if [ "${1:-}" = "--summary" ]; then
  failed=0
  printf '\n%-14s %-8s %8s\n' tier result seconds
  printf '%-14s %-8s %8s\n' ---- ------ -------
  while read -r name rc secs; do
    if [ "$rc" = 0 ]; then result=passed; else result=FAILED; failed=$((failed + 1)); fi
    printf '%-14s %-8s %8s\n' "$name" "$result" "$secs"
  done <"$log"
  total=$(wc -l <"$log")
  echo "tiers: $((total - failed)) passed, $failed failed"
  [ "$failed" = 0 ]
  exit
fi
name=$1
shift
echo "=== tier $name: $*"
start=$(date +%s)
"$@"
rc=$?
echo "$name $rc $(($(date +%s) - start))" >>"$log"
echo "=== tier $name: rc=$rc"
exit "$rc"
