#!/usr/bin/env bash
# The multi-process example of docs/FLEET.md: a ps that hosts its planner and
# detector, and three devices that join its device edge (framed, never
# BASP), each its own process on this machine. At the end of the run the
# ps tells the devices, and they exit 0; nothing is left running.
#
#   bash deploy/examples/multiprocess.sh [path/to/cleave] [report.json]
#
# CLEAVE_PORT (default 4100; 0 picks a free one) is the ps's port. The
# devices declare the `fast` profile and the ps --ps-flops=2e9, so the cost
# model sends the gpt's large products to the devices instead of keeping them.
set -euo pipefail
CLEAVE=${1:-build/cmd/cleave}
REPORT=${2:-multiprocess-report.json}
PORT=${CLEAVE_PORT:-4100}
LOGS=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$LOGS"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "ps: gpt small, 30 steps, waiting for 3 devices on 127.0.0.1:$PORT"
"$CLEAVE" --role=ps --listen=127.0.0.1:"$PORT" --min-devices=3 --ps-flops=2e9 \
  --model=gpt --context=64 --batch=8 --steps=30 --threads=1 --report="$REPORT" > "$LOGS/ps.log" 2>&1 &
ps=$!
pids+=("$ps")
port=""
for _ in $(seq 1 500); do
  port=$(grep -o "listening on port [0-9]*" "$LOGS/ps.log" | grep -o "[0-9]*$" || true)
  [[ -n $port ]] && break
  kill -0 "$ps" 2>/dev/null || break
  sleep 0.02
done
[[ -n $port ]] || { echo "the ps did not start:"; cat "$LOGS/ps.log"; exit 1; }

devices=()
for i in 1 2 3; do
  "$CLEAVE" --role=device --connect=127.0.0.1:"$port" --profile=fast --threads=1 \
    > "$LOGS/device-$i.log" 2>&1 &
  devices+=("$!")
  pids+=("$!")
done
echo "devices: 3 processes joined the device edge at 127.0.0.1:$port"

ps_rc=0
wait "$ps" || ps_rc=$?
ps_end=$(date +%s.%N)
grep -E "step [0-9]+\/|validation loss|test accuracy|told" "$LOGS/ps.log" | tail -n 4 | sed "s/^[^ ]* [a-z]* /ps: /"
codes=()
for pid in "${devices[@]}"; do
  rc=0
  wait "$pid" || rc=$?
  codes+=("$rc")
done
lag=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$ps_end")
tiles=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1])).get('tiles', 0))" "$REPORT" 2>/dev/null || echo 0)
echo "ps exit code: $ps_rc; tiles computed on devices: $tiles; report: $REPORT"
echo "device exit codes: ${codes[*]}; the last device exited ${lag} s after the ps"
((ps_rc == 0)) || exit 1
for rc in "${codes[@]}"; do ((rc == 0)) || exit 1; done
