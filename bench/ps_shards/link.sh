#!/usr/bin/env bash
# Shard processes that feed devices, behind paced links (issue 16, item 1):
# gpt small on DEVICES device processes (--profile=fast, --threads=1), a
# coordinator (--role=ps --shards --listen, --ps-flops=1e9) and 1, 2 and 4
# --role=ps-shard processes, each with its own device edge and its own link
# paced at --ps-egress=EGRESS (--pace-ps-link on the shard). Prints per shard
# count the median step over ROUNDS interleaved rounds, the speed-up over one
# shard, what each shard's link carried per step, and beside it the cost
# model's predicted step for the same fleet and shard count (--role=plan,
# which counts a link per shard). INGRESS paces what the shard receives
# (default: as EGRESS).
# Usage: [ROUNDS=3] [EGRESS=2e8] [INGRESS=...] [DEVICES=16] [STEPS=6] [FLAGS=...] bench/ps_shards/link.sh [path/to/cleave]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=$(realpath "${1:-$here/../../build/cmd/cleave}")
ROUNDS=${ROUNDS:-3}
EGRESS=${EGRESS:-2e8}
INGRESS=${INGRESS:-$EGRESS}
DEVICES=${DEVICES:-16}
STEPS=${STEPS:-6}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
model=(--model=gpt --ps-flops=1e9 --ps-egress="$EGRESS" --ps-ingress="$INGRESS" ${FLAGS:-})

port_of() {  # port_of LOG: the port the process logged it listens on (waits up to 20 s)
  for _ in $(seq 1 1000); do
    local p; p=$(grep -o "listening on port [0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$" | head -1)
    [[ -n $p ]] && { echo "$p"; return; }
    sleep 0.02
  done
  echo "no port in $1: $(tail -2 "$1")" >&2; exit 1
}

run() {  # run SHARDS ROUND
  local shards=$1 round=$2 list="" pids=()
  for s in $(seq 1 "$shards"); do
    "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --edge=127.0.0.1:0 --threads=1 --pace-ps-link \
      --ps-egress="$EGRESS" --ps-ingress="$INGRESS" --log-level=info > "shard-$s.log" 2>&1 &
    pids+=($!)
    list+="${list:+,}127.0.0.1:$(port_of "shard-$s.log")"
  done
  "$CLEAVE" --role=ps --shards="$list" --listen=127.0.0.1:0 --min-devices="$DEVICES" "${model[@]}" \
    --steps="$STEPS" --threads=1 --eval-tokens=256 --log-level=info --report="s$shards-$round.json" > coord.log 2>&1 &
  local coordinator=$!
  local port; port=$(port_of coord.log)
  for _ in $(seq 1 "$DEVICES"); do
    "$CLEAVE" --role=device --connect=127.0.0.1:"$port" --profile=fast --threads=1 --reconnect-seconds=0 \
      --log-level=warn > /dev/null 2>&1 &
    pids+=($!)
  done
  wait $coordinator || { echo "$shards shard(s), round $round failed: $(tail -3 coord.log)" >&2; exit 1; }
  wait "${pids[@]}" 2>/dev/null || true
}

cat > fleet.json <<J
{"devices": [{"name": "fast", "flops": 1e13, "memory_bytes": 6.4e10, "downlink": 1e11, "uplink": 1e11, "latency": 0.0, "count": $DEVICES}]}
J
for shards in 1 2 4; do
  "$CLEAVE" --role=plan --fleet=fleet.json --ps-shards=$shards --batch=16 --context=128 "${model[@]}" \
    --report="plan-$shards.json" > /dev/null
done
for round in $(seq "$ROUNDS"); do
  for shards in 1 2 4; do run $shards "$round"; done
done
python3 - "$work" "$ROUNDS" "$EGRESS" "$STEPS" <<'PY'
import json, statistics, sys
work, rounds, egress, steps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
first = None
for shards in (1, 2, 4):
    reps = [json.load(open(f"{work}/s{shards}-{r}.json")) for r in range(1, rounds + 1)]
    step = statistics.median(d["median_step_seconds"] for d in reps)
    first = first or step
    pred = json.load(open(f"{work}/plan-{shards}.json"))["step_seconds"]
    down = statistics.median(max(s.get("bytes_down", 0) for s in d["per_shard"]) / steps for d in reps)
    up = statistics.median(max(s.get("bytes_up", 0) for s in d["per_shard"]) / steps for d in reps)
    ingress_wait = statistics.median(max(s.get("ingress_seconds", 0) for s in d["per_shard"]) / steps for d in reps)
    rss = statistics.median(max(s.get("shard_peak_rss_bytes", 0) for s in d["per_shard"]) for d in reps)
    tiles = statistics.median(sum(s.get("tiles", 0) for s in d["per_shard"]) / steps for d in reps)
    egress_wait = statistics.median(max(s.get("egress_seconds", 0) for s in d["per_shard"]) / steps for d in reps)
    print(f"{shards} shard process(es): step {step:.3f} s (rounds {', '.join('%.3f' % d['median_step_seconds'] for d in reps)}), "
          f"speed-up over 1 shard {first / step:.2f}x; predicted {pred:.3f} s (measured/predicted {step / pred:.2f}); "
          f"{tiles:.0f} tiles per step; {down / 1e6:.1f} MB down the busiest shard link per step "
          f"({down / egress:.3f} s at {egress:.0e} B/s, waited on it {egress_wait:.3f} s); "
          f"{up / 1e6:.1f} MB up (results waited {ingress_wait:.3f} s); shard peak RSS {rss / 2**20:.0f} MiB")
PY
