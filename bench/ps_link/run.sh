#!/usr/bin/env bash
# The PS link as the bottleneck, and shards as its cure (issue 16, part 3),
# in one run: gpt small on 16 emulated devices faster than the PS's link
# (1e11 FLOP/s, 10 GB/s each), a PS that coordinates (--ps-flops=1e9), and a
# paced PS link of --ps-egress=2e8 per shard (--pace-ps-link: each
# in-process shard as if on a host of its own), at 1, 2 and 4 shards.
# Prints per shard count the median step over ROUNDS interleaved rounds, its
# speed-up over one shard, the cost model's predicted wait on devices beside
# the measured one, and the bytes each shard's link carried per step.
# Every shard sends the activations a product needs to its own devices, so
# bytes per link fall slower than 1/S where activations outweigh the
# weights (gpt small's default batch); FLAGS="--batch=4" shows the other case.
# Usage: [ROUNDS=3] [EGRESS=2e8] [FLAGS=...] bench/ps_link/run.sh [path/to/cleave]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=${1:-$here/../../build/cmd/cleave}
ROUNDS=${ROUNDS:-3}
EGRESS=${EGRESS:-2e8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/fleet.json" <<'J'
{"devices": [{"name": "fast", "flops": 1e11, "memory_bytes": 8e9, "downlink": 1e10, "uplink": 1e10, "latency": 0.0, "count": 16}]}
J
run=(--role=all --model=gpt --fleet="$work/fleet.json" --ps-flops=1e9 --ps-egress="$EGRESS" --pace-ps-link
     --steps=8 --threads=2 --eval-tokens=256 --log-level=warn ${FLAGS:-})
for round in $(seq "$ROUNDS"); do
  for shards in 1 2 4; do
    /usr/bin/time -f "%M" -o "$work/rss-$shards-$round" \
      "$CLEAVE" "${run[@]}" --ps-shards=$shards --report="$work/s$shards-$round.json" > /dev/null
  done
done
python3 - "$work" "$ROUNDS" "$EGRESS" <<'PY'
import json, statistics, sys
work, rounds, egress = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = {}
for shards in (1, 2, 4):
    reps = [json.load(open(f"{work}/s{shards}-{r}.json")) for r in range(1, rounds + 1)]
    rss = [int(open(f"{work}/rss-{shards}-{r}").read()) / 1024 for r in range(1, rounds + 1)]
    step = statistics.median(d["median_step_seconds"] for d in reps)
    wait = statistics.median(d["step_split_seconds"]["wait_on_devices"] for d in reps)
    pred = statistics.median(d["step_split_seconds"]["predicted_wait_on_devices"] for d in reps)
    whole = statistics.median(d["step_prediction"]["predicted_seconds"] for d in reps)
    per_link = statistics.median(d["bytes_down"] / d["steps"] / shards for d in reps)
    rows[shards] = step
    print(f"{shards} shard(s): step {step:.3f} s (rounds {', '.join('%.3f' % d['median_step_seconds'] for d in reps)}), "
          f"speed-up over 1 shard {rows[1] / step:.2f}x; wait on devices {wait:.3f} s, predicted {pred:.3f} s "
          f"(measured/predicted {wait / pred:.2f}); whole step predicted {whole:.3f} s; "
          f"{per_link / 1e6:.1f} MB down per shard link per step ({per_link / egress:.3f} s at {egress:.0e} B/s); "
          f"peak RSS {max(rss):.0f} MiB")
PY
