#!/usr/bin/env bash
# Long fuzzing: every target of tests/fuzz/ for SECONDS (default 600, so
# about 80 minutes for the eight) on a scratch copy of its seeds, then one
# table: runs, exec/s and whether it crashed. Crashing inputs are kept under
# BUILD_DIR/crashes/. Not part of CI (ctest's fuzz.short runs 5 s each).
# Usage: bench/fuzz/run.sh [SECONDS] [BUILD_DIR]      (BUILD_DIR: build/fuzz)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-600}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

status=0
"$here/../../tests/fuzz/run.sh" "$secs" ${2:+"$2"} | tee "$log" || status=$?

echo
echo "fuzzing, $secs s per target:"
printf '%-18s %12s %10s  %s\n' target runs exec/s result
while read -r line; do
  t=${line%%:*}
  if [[ $line =~ :\ ([0-9]+)\ runs,\ ([0-9]+)\ exec/s,\ no\ crash ]]; then
    printf '%-18s %12s %10s  %s\n' "$t" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "no crash"
  elif [[ $line =~ :\ CRASH\ after\ ([0-9?]+)\ runs ]]; then
    printf '%-18s %12s %10s  %s\n' "$t" "${BASH_REMATCH[1]}" "-" "CRASH"
  fi
done < <(grep -E '^fuzz_[a-z_]+: ' "$log")
exit $status
