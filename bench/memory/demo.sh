#!/usr/bin/env bash
# Peak memory of the default run (the demo: gpt small, 64 emulated devices in
# one process, churn and a liar) against the single-process reference
# (--devices=0, the same model and data), beside their median steps. With a
# second binary (an older build) its demo runs in the same rounds, so
# before and after are measured on the same host at the same time.
# Peak RSS is the process's VmHWM (/usr/bin/time's maximum resident set);
# the demo's own figure in its report (peak_rss_bytes) is read before it
# measures the reference's step in-process, this one after.
# Usage: [ROUNDS=3] [STEPS=20] bench/memory/demo.sh [path/to/cleave] [path/to/older/cleave]   (not in CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=$(realpath "${1:-$here/../../build/cmd/cleave}")
OLDER=${2:+$(realpath "$2")}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
run() {  # NAME BINARY FLAGS...
  local name=$1 binary=$2; shift 2
  /usr/bin/time -f "%M" -o "$name.rss" "$binary" --steps="$STEPS" --log-level=warn \
    --report="$name.json" "$@" > "$name.log" 2>&1 || { echo "$name failed: $(tail -3 "$name.log")" >&2; exit 1; }
}
for round in $(seq "$ROUNDS"); do
  run "reference-$round" "$CLEAVE" --role=all --model=gpt --dataset=fortunes --devices=0
  # Each demo gets a console port of its own (the default 8080 may be taken).
  run "demo-$round" "$CLEAVE" --role=all --admin=127.0.0.1:0
  [[ -z $OLDER ]] || run "older-$round" "$OLDER" --role=all --admin=127.0.0.1:0
done
python3 - "$ROUNDS" "${OLDER:+older}" <<'PY'
import json, statistics, sys
rounds = int(sys.argv[1])
names = ["reference", "demo"] + ([sys.argv[2]] if len(sys.argv) > 2 and sys.argv[2] else [])
rows = {}
for name in names:
    rss = [int(open(f"{name}-{r}.rss").read()) / 1024 for r in range(1, rounds + 1)]
    step = [json.load(open(f"{name}-{r}.json"))["median_step_seconds"] for r in range(1, rounds + 1)]
    rows[name] = (statistics.median(rss), statistics.median(step), min(rss), max(rss))
ref_rss = rows["reference"][0]
print(f"{'run':>10}  {'peak RSS MiB (median, min-max)':>32}  {'over reference':>14}  {'median step s':>13}")
for name, (rss, step, lo, hi) in rows.items():
    label = "older demo" if name == "older" else name
    print(f"{label:>10}  {rss:>14.0f} ({lo:.0f}-{hi:.0f}){'':>8}  {rss / ref_rss:>13.2f}x  {step:>13.3f}")
PY
