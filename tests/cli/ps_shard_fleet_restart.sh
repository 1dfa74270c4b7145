#!/usr/bin/env bash
# A PS shard process that feeds devices, killed mid-run (docs/PS_SHARDS.md):
# a coordinator with two --role=ps-shard --edge
# processes and four device processes trains mlp for 120 steps with a
# checkpoint every 10. Shard b is killed with SIGKILL after the first
# checkpoint and started again a second later at the same --listen and
# --edge with --resume. The coordinator waits for it, sends it the job's
# fleet request again, and rolls back to the newest complete checkpoint set;
# the devices dial shard b's edge again and it sends them tiles. The final
# loss is the undisturbed run's (the in-process --ps-shards=2 fleet on four
# devices) within 1e-4 relative. Then a shard that comes back with its edge
# elsewhere is refused with the address the devices look for, and the run
# stops once the wait is over.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

run=(--model=mlp --steps=120 --threads=1 --eval-tokens=256 --ps-egress=1e12 --ps-flops=1e9)

# start_shard NAME LISTEN EDGE [FLAG...]: sets pid_NAME.
start_shard() {
  : > "$1.log"
  mkdir -p ck
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:$2 --edge=127.0.0.1:$3 --threads=1 --checkpoint-dir=ck \
    --log-level=info "${@:4}" >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  [[ -n $(wait_port "$1.log") ]] || fail "shard $1 did not start: $(cat "$1.log")"
}

start_devices() {  # start_devices PORT: four device processes; sets devices
  devices=()
  for i in 1 2 3 4; do
    "$CLEAVE" --role=device --connect=127.0.0.1:$1 --profile=fast --threads=1 --reconnect-seconds=0 \
      --log-level=info > device-$i.log 2>&1 &
    devices+=($!)
  done
}

"$CLEAVE" --role=all --ps-shards=2 --devices=4 --profile=fast "${run[@]}" --log-level=warn --report=ref.json \
  || fail "the undisturbed in-process run failed"

la=$(free_port); ea=$(free_port); lb=$(free_port); eb=$(free_port)
start_shard a $la $ea; start_shard b $lb $eb
timeout 240 "$CLEAVE" --role=ps --shards=127.0.0.1:$la,127.0.0.1:$lb --listen=127.0.0.1:0 --min-devices=4 \
  "${run[@]}" --checkpoint-dir=ck --checkpoint-every=10 --shard-wait-seconds=60 --log-level=info \
  --report=restarted.json > coord.log 2>&1 &
coordinator=$!
port=$(wait_port coord.log)
[[ -n $port ]] || fail "the coordinator did not open its edge: $(tail -3 coord.log)"
start_devices "$port"
wait_for_checkpoint ck
kill -9 $pid_b
wait $pid_b 2>/dev/null
sleep 1
start_shard b2 $lb $eb --resume
wait $coordinator || fail "the coordinator did not finish after the restart: $(tail -3 coord.log)"
for pid in "${devices[@]}" $pid_a $pid_b2; do timeout 10 tail --pid=$pid -f /dev/null; done

grep -q "PS shard 1 at 127.0.0.1:$lb is lost .*waiting up to 60 s" coord.log \
  || fail "no clear line about the lost shard: $(grep -i shard coord.log | tail -3)"
grep -q "PS shard 1 feeds devices at 127.0.0.1:$eb again" coord.log \
  || fail "the coordinator did not send the new shard its fleet request: $(grep -i shard coord.log | tail -3)"
grep -q "rolled back to step [1-9]" coord.log || fail "no rollback: $(tail -3 coord.log)"
grep -q "devices join its edge on port $eb" b2.log || fail "the new shard b did not open its edge: $(tail -3 b2.log)"
redialled=0
for i in 1 2 3 4; do
  [[ $(grep -c "connected to PS shard 1's edge" device-$i.log) -ge 2 ]] && redialled=$((redialled + 1))
done
((redialled >= 1)) || fail "no device dialled shard b's edge again: $(grep -i 'shard 1' device-1.log | tail -3)"
verdict=$(python3 - ref.json restarted.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
a, b = ref["losses"], got["losses"]
shards = got.get("per_shard", [])
if len(a) != len(b): print(f"{len(b)} losses, expected {len(a)}")
elif abs(a[-1] - b[-1]) > 1e-4 * abs(a[-1]): print(f"final loss {b[-1]} vs {a[-1]}")
elif len(shards) != 2 or not all(s.get("tiles", 0) > 0 for s in shards):
    print("a shard sent no tiles to devices: " + str([s.get("tiles") for s in shards]))
else:
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    print(f"ok: final loss {b[-1]:.6f} (undisturbed {a[-1]:.6f}), worst step {worst:.1e} relative; "
          f"tiles after the restart: shard 0 {shards[0]['tiles']}, shard 1 {shards[1]['tiles']}")
PY
)
[[ $verdict == ok* ]] || fail "after the restart: $verdict"
echo "restart with devices: $verdict ($redialled of 4 devices dialled shard b again)"

# A shard that comes back with its device edge elsewhere: the devices could
# not find it, so the coordinator stops and names the address.
rm -rf ck
lc=$(free_port); ec=$(free_port); ld=$(free_port); ed=$(free_port); other=$(free_port)
start_shard c $lc $ec; start_shard d $ld $ed
timeout 120 "$CLEAVE" --role=ps --shards=127.0.0.1:$lc,127.0.0.1:$ld --listen=127.0.0.1:0 --min-devices=4 \
  "${run[@]}" --steps=100000 --checkpoint-dir=ck --checkpoint-every=10 --shard-wait-seconds=5 --log-level=info \
  > moved.log 2>&1 &
coordinator=$!
port=$(wait_port moved.log)
start_devices "$port"
wait_for_checkpoint ck
kill -9 $pid_d
wait $pid_d 2>/dev/null
start_shard d2 $ld $other --resume
wait $coordinator && fail "the coordinator went on with shard d's edge moved"
grep -q "did not come back within 5 s .*came back with its device edge at 127.0.0.1:$other, not at 127.0.0.1:$ed" \
  moved.log || fail "unclear end with shard d's edge moved: $(tail -2 moved.log)"
finish
