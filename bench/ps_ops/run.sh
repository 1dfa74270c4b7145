#!/usr/bin/env bash
# The PS's own work per tile (actors/planner/ps_tile_work.hpp), measured and
# checked:
#  (a) bench_ps_ops: the live PS's kernels' rates on this host, printed as
#      the simulator's flags (their defaults are one such run);
#  (b) live --role=all against --role=simulate, as tests/cli/calibration.sh
#      does, on its fleets and on fleets it does not run: each live run is
#      simulated twice, "before" with every op free (the PS's work per tile
#      left to --ps-memory-bandwidth=3.3e9, as calibration.sh had it) and
#      "after" with the ops charged at the measured rates and
#      --ps-memory-bandwidth=$AFTER_BANDWIDTH. Prints each run's residuals
#      and the live step's parts (median step, issue, wait, fold, check, per
#      step) beside the simulated PS work.
# Usage: bench/ps_ops/run.sh [path/to/build] [a|b|ab (default)]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
parts=${2:-ab}
CLEAVE=$build/cmd/cleave
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
AFTER_BANDWIDTH=${AFTER_BANDWIDTH:-3.3e9}

if [[ $parts == *a* ]]; then
  echo "== (a) the kernels' rates"
  "$build/bench/ps_ops/bench_ps_ops"
fi
[[ $parts == *b* ]] || exit 0

echo "== (b) live against simulated steps"
LIVE_PS=(--ps-flops=2e9 --ps-memory-bandwidth=3.3e9)
BEFORE=(--ps-memory-bandwidth=3.3e9 --ps-op-seconds=0 --ps-hash-rate=1e30 --ps-copy-rate=1e30
        --ps-prepare-rate=1e30 --ps-check-rate=1e30 --ps-fold-rate=1e30)
AFTER=(--ps-memory-bandwidth="$AFTER_BANDWIDTH")
SIM=(--ps-flops=2e9 --sim-ps-flops=1e11)
RUN=(--heartbeat=1 --steps=6 --log-level=warn)
# A shared host's bursts only ever lengthen a live step: each configuration
# runs live LIVE_RUNS times and the run of the least median step counts.
LIVE_RUNS=${LIVE_RUNS:-3}

cat > "$work/edge4.json" <<'J'
{"devices": [{"name": "edge", "flops": 5e10, "memory_bytes": 4e9, "downlink": 1e8, "uplink": 2e7, "latency": 0.005, "count": 4}]}
J
cat > "$work/phone_edge.json" <<'J'
{"devices": [{"preset": "phone", "count": 3}, {"preset": "edge", "count": 3}]}
J
cat > "$work/vm_phone.json" <<'J'
{"devices": [{"preset": "vm", "count": 2}, {"preset": "phone", "count": 4}]}
J
cat > "$work/phone8.json" <<'J'
{"devices": [{"preset": "phone", "count": 8}]}
J
cat > "$work/edge3.json" <<'J'
{"devices": [{"preset": "edge", "count": 3}]}
J
cat > "$work/edge_phone.json" <<'J'
{"devices": [{"preset": "edge", "count": 2}, {"preset": "phone", "count": 4}]}
J

compare() {
  local name=$1; shift
  local live_link=() sim_link=(--sim-ps-link=1e12)
  if [[ $name == *-paced ]]; then live_link=(--pace-ps-link); sim_link=(); fi
  local r
  for ((r = 1; r <= LIVE_RUNS; r++)); do
    "$CLEAVE" --role=all "$@" "${live_link[@]}" "${LIVE_PS[@]}" "${RUN[@]}" --eval-tokens=512 \
      --report="$work/live$r.json" > "$work/live.out" 2>&1 || { echo "$name: live run failed: $(tail -3 "$work/live.out")"; return; }
  done
  for when in before after; do
    local -n extra=${when^^}
    "$CLEAVE" --role=simulate "$@" "${SIM[@]}" "${sim_link[@]}" "${extra[@]}" "${RUN[@]}" \
      --report="$work/sim_$when.json" > "$work/sim.out" 2>&1 || { echo "$name: simulation failed: $(cat "$work/sim.out")"; return; }
  done
  python3 - "$work/sim_before.json" "$work/sim_after.json" "$name" "$work"/live?.json <<'PY'
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
def median_step(d):
    later = sorted(d["step_seconds"][1:])
    return later[len(later) // 2]
runs = sorted((json.load(open(p)) for p in sys.argv[4:]), key=median_step)
live, step = runs[0], median_step(runs[0])
sys.argv[4] = sys.argv[3] + f" (live medians {', '.join(f'{median_step(r):.4g}' for r in runs)})"
split = live["step_split_seconds"]
steps = len(live["step_seconds"])
print(f"{sys.argv[4]}: live step {step:.4g} s (issue {split['issue_tiles']:.4g}, wait {split['wait_on_devices']:.4g}, "
      f"fold {split['allgather']:.4g}, check {live['verify_seconds'] / steps:.4g} + idle {live['verify_idle_seconds'] / steps:.4g}, ps_compute {split['ps_compute']:.4g}); "
      f"step before {before['mean_step_seconds']:.4g} ({100 * (before['mean_step_seconds'] / step - 1):+.1f}%), "
      f"after {after['mean_step_seconds']:.4g} ({100 * (after['mean_step_seconds'] / step - 1):+.1f}%, "
      f"PS ops {after['ps_op_seconds_per_step']:.4g} s/step); tiles live {live['tiles']} sim {after['tiles']}")
# What --ps-memory-bandwidth must cover once the ops are charged: the live
# step outside issue, wait, fold and local products, beside the bytes the
# row-wise ops and optimizer read (their seconds "before" at 3.3e9 B/s).
rest = step - split["issue_tiles"] - split["wait_on_devices"] - split["allgather"] - split["ps_compute"]
ops = before["step_split_seconds"]
print(f"  rest of the live step {rest:.4g} s; row-wise and optimizer bytes {(ops['ps_rowwise'] + ops['ps_optimizer']) * 3.3e9:.4g}")
PY
}

compare gpt-edge --model=gpt --shape=small --context=64 --batch=8 --fleet="$work/edge4.json" --min-devices=4
compare mlp --model=mlp --hidden=1024,1024 --batch=1024 --fleet="$work/phone_edge.json" --min-devices=6
compare gpt-vm-phone --model=gpt --shape=small --context=64 --batch=16 --fleet="$work/vm_phone.json" --min-devices=6 \
  --ps-egress=2e8
compare gpt-vm-phone-paced --model=gpt --shape=small --context=64 --batch=16 --fleet="$work/vm_phone.json" \
  --min-devices=6 --ps-egress=2e8
compare gpt-vm-phone-bf16 --model=gpt --shape=small --context=64 --batch=16 --fleet="$work/vm_phone.json" \
  --min-devices=6 --ps-egress=2e8 --wire=bf16
echo "-- fleets calibration.sh does not run"
# As calibration.sh's, devices whose declared FLOP/s sum to at most 2e11,
# so that they, not this host's cores, bind the live steps.
compare gpt-phone8 --model=gpt --shape=small --context=64 --batch=8 --fleet="$work/phone8.json" --min-devices=8
compare mlp-edge3 --model=mlp --hidden=1024,1024 --batch=512 --fleet="$work/edge3.json" --min-devices=3
compare gpt-c128-edge-phone --model=gpt --shape=small --context=128 --batch=4 --fleet="$work/edge_phone.json" \
  --min-devices=6
