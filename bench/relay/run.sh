#!/usr/bin/env bash
# The ps's egress with and without relays, live on loopback: a ps, R relay
# processes (--role=relay) and DEVICES device processes spread over them,
# for each R in RELAYS (0: the devices join the ps itself). Prints per run
# the median step, the bytes that left the ps per step, those over every
# operand block leaving once a step ("once") and once a step per holder
# (a relay, or a device of its own), the relays' store figures, and peak
# RSS of the ps and of each relay, beside the in-process fleet's step.
#
#   bash bench/relay/run.sh build/cmd/cleave
#   RELAYS="0 2 4" DEVICES=8 STEPS=30 bash bench/relay/run.sh build/cmd/cleave
set -u
CLEAVE=$(realpath "${1:?usage: $0 path/to/cleave}")
RELAYS=${RELAYS:-0 1 2 4} DEVICES=${DEVICES:-8} STEPS=${STEPS:-30}
WORK=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
# vm devices and a slow PS make the planner spread every product over all
# the devices, so blocks are shared between the devices behind a relay.
train=(--model=gpt --context=32 --batch=4 --eval-tokens=2048 --steps=$STEPS --threads=1 --progress-seconds=600
       --ps-egress=1e12 --ps-flops=1e8)
port_of() { for _ in $(seq 1 500); do p=$(grep -o "listening on port [0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$" | head -1);
  [[ -n $p ]] && { echo "$p"; return; }; sleep 0.02; done; }

"$CLEAVE" --role=all --devices=$DEVICES --profile=vm --unpaced-devices "${train[@]}" --log-level=warn \
  --report="$WORK/inproc.json" || { echo "the in-process run failed"; exit 1; }
python3 -c "import json; d = json.load(open('$WORK/inproc.json')); print(f\"in-process fleet of $DEVICES: median step {d['median_step_seconds']:.3f} s, peak RSS {d['peak_rss_bytes'] / 2**20:.0f} MiB\")"
for r in $RELAYS; do
  "$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=$DEVICES "${train[@]}" --report="$WORK/r$r.json" \
    > "$WORK/ps-r$r.log" 2>&1 &
  ps=$!
  port=$(port_of "$WORK/ps-r$r.log")
  relays=() edges=()
  for ((i = 1; i <= r; i++)); do
    "$CLEAVE" --role=relay --connect=127.0.0.1:$port --listen=127.0.0.1:0 --relay-name=r$i --relay-memory=1e9 \
      --progress-seconds=600 > "$WORK/relay-r$r-$i.log" 2>&1 &
    relays+=($!)
    edges+=("127.0.0.1:$(port_of "$WORK/relay-r$r-$i.log")")
  done
  for ((d = 0; d < DEVICES; d++)); do
    edge=127.0.0.1:$port
    ((r > 0)) && edge=${edges[$((d * r / DEVICES))]}
    "$CLEAVE" --role=device --connect=$edge --profile=vm --threads=1 --log-level=warn --reconnect-seconds=0 \
      > "$WORK/dev-r$r-$d.log" 2>&1 &
  done
  timeout 600 tail --pid=$ps -f /dev/null
  wait $ps || { echo "R=$r: the ps failed: $(tail -3 "$WORK/ps-r$r.log")"; continue; }
  ((r > 0)) && kill -TERM "${relays[@]}" && sleep 0.5
  python3 - "$WORK/r$r.json" $r $STEPS <<'PY'
import json, sys
d, r, steps = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
print(f"R={r}: median step {d['median_step_seconds']:.3f} s; ps egress {d['bytes_down'] / steps / 1e6:.1f} MB/step, "
      f"{d['bytes_down_over_once']:.3f}x once, {d['bytes_down_over_once_per_holder']:.3f}x once per holder; "
      f"ps peak RSS {d['peak_rss_bytes'] / 2**20:.0f} MiB, devices' peak {d['device_peak_rss_bytes'] / 2**20:.0f} MiB")
PY
  for ((i = 1; i <= r; i++)); do echo "  $(grep -o "relay r$i: .*" "$WORK/relay-r$r-$i.log" | tail -1)"; done
  wait 2>/dev/null
done
