#!/usr/bin/env bash
# Calibration (issue 15, part 4): on fleets that run here, the simulator's
# step time and bytes match a live --role=all run of the same flags within
# 15%. Emulated devices pace themselves by the cost model, so the devices,
# not this host's CPU, bind these steps. Steps after the first are compared
# (the first builds the plans and warms the caches); bytes are the run's
# totals down to and up from the devices.
#
# The PS's own rates are this host's, the same for every configuration:
# --ps-flops=2e9 (what the live planner is told, so both plan alike) and
# --ps-memory-bandwidth=2e9, set once from the live reports: mlp's PS work
# per step (step_split_seconds: ps_compute + issue_tiles, 0.164 s, less its
# local products, 0.031 s at 2e9 FLOP/s) over the 1.34e8 bytes ps_local_ops
# counts for it gives 1.0e9 B/s, and at that rate gpt-edge's row-wise ops
# come out 23% slower than its measured step allows; 2e9 sits between.
#
# Known miss (README, The simulator: Calibration): gpt-vm-phone's devices
# hit their operand cache on blocks the plans do not mark as cached; the
# simulator sends those again (bytes down +49%, the step as much).
# Usage: bench/scale/calibration.sh path/to/cleave   (not in CI while it misses)
source "$(dirname "$0")/../../tests/cli/lib.sh"

PS=(--ps-flops=2e9 --ps-memory-bandwidth=2e9)
# Heartbeats at 1 s: at 0.1 s this loaded host's scheduling delays made the
# detector declare live devices dead and re-run their tiles, which no
# churn-free simulation shows.
RUN=(--heartbeat=1 --steps=4)
TOLERANCE=0.15

cat > "$WORK/edge4.json" <<'J'
{"devices": [{"name": "edge", "flops": 5e10, "memory_bytes": 4e9, "downlink": 1e8, "uplink": 2e7, "latency": 0.005, "count": 4}]}
J
cat > "$WORK/phone_edge.json" <<'J'
{"devices": [{"preset": "phone", "count": 3}, {"preset": "edge", "count": 3}]}
J
cat > "$WORK/vm_phone.json" <<'J'
{"devices": [{"preset": "vm", "count": 2}, {"preset": "phone", "count": 4}]}
J

# calibrate NAME FLAGS...: runs both, prints the residuals, fails past TOLERANCE.
calibrate() {
  local name=$1; shift
  if ! "$CLEAVE" --role=all "$@" "${PS[@]}" "${RUN[@]}" --eval-tokens=512 --log-level=warn \
       --report="$WORK/live_$name.json" > "$WORK/live_$name.out" 2>&1; then
    fail "$name: the live run exited non-zero: $(tail -3 "$WORK/live_$name.out")"; return
  fi
  if ! "$CLEAVE" --role=simulate "$@" "${PS[@]}" "${RUN[@]}" --log-level=warn \
       --report="$WORK/sim_$name.json" > "$WORK/sim_$name.out" 2>&1; then
    fail "$name: the simulation exited non-zero: $(cat "$WORK/sim_$name.out")"; return
  fi
  local verdict
  verdict=$(python3 - "$WORK/live_$name.json" "$WORK/sim_$name.json" "$TOLERANCE" "$name" <<'PY'
import json, sys
live, sim = (json.load(open(p)) for p in sys.argv[1:3])
tol, name = float(sys.argv[3]), sys.argv[4]
later = live["step_seconds"][1:]
pairs = {"step_seconds": (sum(later) / len(later), sim["mean_step_seconds"]),
         "bytes_down": (live["bytes_down"], sim["bytes_down"]),
         "bytes_up": (live["bytes_up"], sim["bytes_up"])}
worst = 0
parts = []
for key, (l, s) in pairs.items():
    r = s / l - 1 if l else float("inf")
    worst = max(worst, abs(r))
    parts.append(f"{key} live {l:.4g} sim {s:.4g} ({100 * r:+.1f}%)")
parts.append(f"live failures {live['failures_detected']}, tiles live {live['tiles']} sim {sim['tiles']}")
print(("ok" if worst <= tol else "MISS") + f": {name}: " + "; ".join(parts))
PY
)
  echo "$verdict"
  [[ $verdict == ok* ]] || fail "residual past $TOLERANCE: $verdict"
}

calibrate gpt-edge --model=gpt --shape=small --context=64 --batch=8 --fleet="$WORK/edge4.json" --min-devices=4
calibrate mlp --model=mlp --hidden=1024,1024 --batch=1024 --fleet="$WORK/phone_edge.json" --min-devices=6
calibrate gpt-vm-phone --model=gpt --shape=small --context=64 --batch=16 --fleet="$WORK/vm_phone.json" --min-devices=6 \
  --ps-egress=2e8
finish
