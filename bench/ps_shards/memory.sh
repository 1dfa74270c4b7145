#!/usr/bin/env bash
# Each PS shard process's peak memory at opt-125m (issue 16's memory table):
# a --role=ps coordinator and 1, 2 and 4 --role=ps-shard processes on
# loopback train gpt --shape=opt-125m --vocab=50272 (162M parameters) for a
# few steps on one thread each. Prints per shard count the bytes of each
# shard's slices (values, gradients and both AdamW moments: 16 bytes a
# parameter), each shard process's peak RSS (VmHWM, from the shard itself)
# and the coordinator's. The slices' share falls as 1/S; what stays is the
# process's own base, and while a message in parts (schema/shard_parts.hpp)
# is put together or sent, a second copy of it (the attach: 12 bytes a
# parameter of the slice). The coordinator holds every value whole (4 bytes
# a parameter, whatever S), the gradients of the parameters its own ops
# make (embeddings, norms, biases) and its activations; no AdamW moment, no
# gradient of a weight only products use, no copy of its attach (sent in
# parts cut from its tensors) nor of an update's answer (read into the
# values part by part).
# Usage: [STEPS=3] [FLAGS=...] bench/ps_shards/memory.sh [path/to/cleave]   (not part of CI; ~4 minutes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=$(realpath "${1:-$here/../../build/cmd/cleave}")
STEPS=${STEPS:-3}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
run=(--model=gpt --shape=opt-125m --vocab=50272 --context=64 --batch=4 --steps="$STEPS" --threads=1
     --eval-tokens=256 --log-level=warn ${FLAGS:-})
for shards in 1 2 4; do
  addresses=()
  pids=()
  for s in $(seq "$shards"); do
    log="$work/shard-$shards-$s.log"
    "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 > "$log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -qs "listening on port" "$log" && break; sleep 0.1; done
    port=$(grep -o "listening on port [0-9]*" "$log" | grep -o "[0-9]*$") || { echo "shard did not start: $(cat "$log")" >&2; exit 1; }
    addresses+=("127.0.0.1:$port")
  done
  /usr/bin/time -f "%M" -o "$work/coordinator-$shards.rss" \
    "$CLEAVE" --role=ps --shards="$(IFS=,; echo "${addresses[*]}")" "${run[@]}" --report="$work/r$shards.json" \
    > "$work/coordinator-$shards.log" 2>&1 || { echo "$shards shards: $(tail -3 "$work/coordinator-$shards.log")" >&2; exit 1; }
  for p in "${pids[@]}"; do wait "$p" || true; done
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
mib = lambda b: b / 2**20
print(f"{'shards':>6}  {'slice MiB per shard':>20}  {'shard peak RSS MiB':>30}  {'coordinator peak RSS MiB':>24}")
for shards in (1, 2, 4):
    r = json.load(open(f"{work}/r{shards}.json"))
    per = r["per_shard"]
    slices = " / ".join(f"{mib(s['memory_bytes']):.0f}" for s in per)
    rss = " / ".join(f"{mib(s['shard_peak_rss_bytes']):.0f}" for s in per)
    coord = int(open(f"{work}/coordinator-{shards}.rss").read()) / 1024
    print(f"{shards:>6}  {slices:>20}  {rss:>30}  {coord:>24.0f}")
PY
