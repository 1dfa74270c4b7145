#!/usr/bin/env bash
# Separate processes on loopback: detector, planner, ps and 4 devices train
# the mlp for 200 steps with exactly the loss trajectory of the in-process run;
# then a ps that hosts its own planner and detector does the same, with one PS
# shard and with two. Devices join the ps's device edge (frames, never BASP)
# in every case; the planner and detector speak BASP to the ps only.
source "$(dirname "$0")/lib.sh"

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
train=(--model=mlp --steps=200 --threads=1 --log-level=info --progress-seconds=30)

start_devices() {  # start_devices PORT [device flags...]
  local port=$1; shift
  for i in 1 2 3 4; do
    "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 --log-level=warn \
      --reconnect-seconds=0 "$@" &
  done
}

"$CLEAVE" --role=all --devices=4 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --report="$WORK/inproc.json" || fail "in-process run failed"

# 1. detector, planner, ps and devices: seven processes.
separate() {  # separate NAME
  local name=$1
  "$CLEAVE" --role=detector --listen=127.0.0.1:0 > "$WORK/$name-detector.log" 2>&1 &
  local det=$!
  local dport; dport=$(wait_port "$WORK/$name-detector.log")
  "$CLEAVE" --role=planner --listen=127.0.0.1:0 --detector="127.0.0.1:$dport" --min-devices=4 "${cost[@]}" \
    > "$WORK/$name-planner.log" 2>&1 &
  local pln=$!
  local pport; pport=$(wait_port "$WORK/$name-planner.log")
  [[ -n $dport && -n $pport ]] || { fail "$name: detector or planner did not start"; return; }
  timeout 300 "$CLEAVE" --role=ps --planner="127.0.0.1:$pport" --listen=127.0.0.1:0 "${train[@]}" \
    --report="$WORK/$name.json" > "$WORK/$name.log" 2>&1 &
  local ps=$!
  local port; port=$(wait_port "$WORK/$name.log")
  start_devices "$port"
  wait $ps || fail "$name ps failed: $(tail -3 "$WORK/$name.log")"
  kill -TERM $pln $det; wait $pln $det 2>/dev/null
  wait  # the ps told the devices the run is over
}
separate split

# 2. the default: the ps hosts planner and detector; each device's proxy
# returns a result to the shard whose engine sent the task.
hosted() {  # hosted NAME [ps flags...]
  local name=$1; shift
  "$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=4 "${cost[@]}" "${train[@]}" "$@" \
    --report="$WORK/$name.json" > "$WORK/$name.log" 2>&1 &
  local ps=$!
  local port; port=$(wait_port "$WORK/$name.log")
  start_devices "$port"
  timeout 300 tail --pid=$ps -f /dev/null
  wait $ps || fail "$name ps failed: $(tail -3 "$WORK/$name.log")"
  wait  # the ps told the devices the run is over
}
hosted hosted
hosted hosted-2-shards --ps-shards=2
"$CLEAVE" --role=all --devices=4 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --ps-shards=2 --report="$WORK/inproc-2-shards.json" || fail "in-process run with 2 shards failed"

for run in split hosted hosted-2-shards; do
  ref=$WORK/inproc.json
  [[ $run == *-2-shards ]] && ref=$WORK/inproc-2-shards.json
  verdict=$(same_trajectory "$ref" "$WORK/$run.json")
  [[ $verdict == equal ]] && echo "ok: $run multi-process trajectory equals in-process" || fail "$run: $verdict"
  # Each device process said its peak memory in its heartbeats.
  python3 - "$WORK/$run.json" <<'PY' && echo "ok: $run reports each device process's peak memory" || fail "$run: device memory"
import json, sys
d = json.load(open(sys.argv[1]))
procs = d.get("device_processes", [])
ok = len(procs) == 4 and all(p["peak_rss_bytes"] > 1 << 20 for p in procs) \
     and d["device_peak_rss_bytes"] == max(p["peak_rss_bytes"] for p in procs)
if not ok: print(f"device_processes {procs}, device_peak_rss_bytes {d.get('device_peak_rss_bytes')}")
else: print("  device peaks (MiB): " + ", ".join(f"{p['peak_rss_bytes'] / 2**20:.0f}" for p in procs), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
done
finish
