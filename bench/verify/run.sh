#!/usr/bin/env bash
# Verified results (Freivalds' test), measured:
#  (a) detection and false-positive rates on the tiles gpt small and
#      opt-125m produce (bench_verify: 100,000 honest checks per model);
#  (b) what checking costs the step: gpt small on the overhead fleet
#      (bench/runtime/overhead_fleet.json), median step with every tile
#      checked against --trust-results, interleaved rounds, and the PS's
#      time in the check as results come (verify_seconds) as a share of the
#      step, beside the part it prepared while waiting (verify_idle_seconds).
# Usage: bench/verify/run.sh [path/to/build]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
CLEAVE=$build/cmd/cleave
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

echo "== (a) detection and false positives"
"$build/bench/verify/bench_verify" 100000

echo "== (b) the check's share of the step: gpt small, 16 overhead devices, 3 interleaved rounds"
run=(--role=all --model=gpt --fleet="$here/../runtime/overhead_fleet.json" --ps-egress=1e10
     --max-tiles-per-device=1 --eval-tokens=2048 --log-level=warn --threads=2 --steps=12)
for round in 1 2 3; do
  "$CLEAVE" "${run[@]}" --report="$work/on-$round.json"
  "$CLEAVE" "${run[@]}" --trust-results --report="$work/off-$round.json"
  python3 - "$work/on-$round.json" "$work/off-$round.json" <<'PY'
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
s_on, s_off = on["median_step_seconds"], off["median_step_seconds"]
share = on["verify_seconds"] / on["steps"] / s_on
idle = on.get("verify_idle_seconds", 0) / on["steps"]
print(f"   checked {s_on:.3f} s, trusted {s_off:.3f} s: +{100 * (s_on / s_off - 1):.1f}% step time; "
      f"the check's time as results come {1e3 * on['verify_seconds'] / on['steps']:.1f} ms/step = {100 * share:.1f}% of the step, "
      f"prepared while waiting {1e3 * idle:.1f} ms/step; "
      f"{on['tiles_verified']} tiles verified, {on['tiles_rejected']} refused")
PY
done
