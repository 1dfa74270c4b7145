#!/usr/bin/env bash
# Sparse mode's model-lets on 8 emulated devices (D-SLIDE) against the dense
# full softmax and the in-process sparse mode, on gcide-nextword, same seed
# and steps:
#  - accuracy: P@1 on 8 devices at least 97% of dense;
#  - churn: a device holding a model-let is killed mid-training (step
#    KILL_STEP): the run finishes, P@1 stays within the bound, and the
#    report says what the failure cost (time, lost updates);
#  - traffic: measured frame bytes per sample over the device links against
#    the dense model-parallel layer on the same devices that returns full
#    logits (8h per device + 8L per sample): at least 95% less.
# Usage: bench/sparse/modellets.sh [path/to/cleave] [xc data dir]  (not in CI)
# STEPS (default 500), KILL_STEP (250), COPY_EVERY (50), FLAGS (sparse-mode
# flags, default "--lsh=simhash --lsh-k=8").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cleave=${1:-$here/../../build/cmd/cleave}
data=${2:-$here/../../build/xc-data}
out=${OUT:-$(mktemp -d)}
steps=${STEPS:-500}
kill_step=${KILL_STEP:-250}
copy_every=${COPY_EVERY:-50}
flags=${FLAGS:---lsh=simhash --lsh-k=8}
threads=${THREADS:-2}

run() {  # run NAME FLAGS...: one training run, its report in $out/NAME.json
  local name=$1; shift
  local cmd=("$cleave" --model=xc --dataset=gcide-nextword --data-dir="$data" --seed=1
             --steps="$steps" --threads="$threads" --log-level=warn --report="$out/$name.json" "$@")
  echo "+ ${cmd[*]}"
  "${cmd[@]}"
}

printf '{"events": [{"step": %d, "action": "die", "device": 3, "after_seconds": 0}]}\n' \
  "$kill_step" > "$out/kill.json"
run dense --dense
# shellcheck disable=SC2086
run local $flags
# shellcheck disable=SC2086
run devices8 $flags --devices=8 --modellet-copy-every="$copy_every"
# shellcheck disable=SC2086
run churn8 $flags --devices=8 --modellet-copy-every="$copy_every" --churn="$out/kill.json"

python3 - "$out" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json")) for n in ("dense", "local", "devices8", "churn8")}
print(f"{'run':9} {'steps':>5} {'P@1':>7} {'P@5':>7} {'active':>7} {'bytes/sample':>12} {'mean step s':>11}")
for n, d in r.items():
    b = d["modellets"]["step_bytes_per_sample"] if "modellets" in d else d["sparse_bytes_per_sample"]
    print(f"{n:9} {d['steps']:5d} {d['p_at_1']:7.4f} {d['p_at_5']:7.4f} {d['active_fraction']:7.4f} "
          f"{b:12.0f} {d['mean_step_seconds']:11.4f}")
dense = r["dense"]
hidden, labels = 128, int(round(dense["sparse_bytes_per_sample"] / 8 - 128))
for n in ("devices8", "churn8"):
    d, m = r[n], r[n]["modellets"]
    devices = len({x["device"] for x in m["ranges"]} | {f["device"] for f in m["failures"]})
    # The dense model-parallel layer on the same devices: h to each and each
    # one's partial gradient for h back (8h per device), full logits up and
    # their gradients down (8L).
    mp = devices * 8 * hidden + 8 * labels
    print(f"{n}: P@1 {100 * d['p_at_1'] / dense['p_at_1']:.1f}% of dense (goal >= 97%); per sample "
          f"{m['step_bytes_per_sample']:.0f} step bytes, {100 * (1 - m['step_bytes_per_sample'] / mp):.1f}% less "
          f"than the dense model-parallel layer on {devices} devices ({mp}; goal >= 95%); with the PS's "
          f"copies ({m['copy_bytes_per_sample']:.0f}) and placing ({m['place_bytes_per_sample']:.0f}): "
          f"{m['bytes_per_sample']:.0f}, {100 * (1 - m['bytes_per_sample'] / mp):.1f}% less")
for f in r["churn8"]["modellets"]["failures"]:
    print(f"churn8: device {f['device']} lost at step {f['step']}: ranges {f['ranges']}, "
          f"{f['lost_steps']} steps of updates lost ({f['lost_row_updates']} row updates), "
          f"{f['seconds']:.3f} s to detect and place again; mean step {r['churn8']['mean_step_seconds']:.4f} s "
          f"against {r['devices8']['mean_step_seconds']:.4f} s without")
PY
echo "reports in $out"
