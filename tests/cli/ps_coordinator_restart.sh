#!/usr/bin/env bash
# A coordinator of shard processes killed mid-run (docs/PS_SHARDS.md, *A
# lost coordinator*): a coordinator with two --role=ps-shard --edge processes
# and four device processes trains mlp for 60 steps with a checkpoint every
# 10. The coordinator is killed with SIGKILL after the first checkpoint and
# started again with --resume at the same addresses; nothing else is
# restarted. The shards, which kept waiting for a coordinator, attach to it
# and load their own files of the set it resumes from; the devices join it
# again and dial the shards' edges again with the proofs it gives them (the
# job's secret is kept in --checkpoint-dir). Every loss from the checkpoint's
# step on is the undisturbed run's (the in-process --ps-shards=2 fleet on
# four devices) bit for bit, and every process ends with exit 0.
# Then a shard whose coordinator does not come back within
# --coordinator-timeout exits 1 with one line saying so.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

run=(--model=mlp --steps=60 --threads=1 --eval-tokens=256 --ps-egress=1e12 --ps-flops=1e9)

"$CLEAVE" --role=all --ps-shards=2 --devices=4 --profile=fast "${run[@]}" --log-level=warn --report=ref.json \
  || fail "the undisturbed in-process run failed"

mkdir -p ck
shards=(); edges=()
for s in a b; do
  l=$(free_port); e=$(free_port)
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:$l --edge=127.0.0.1:$e --threads=1 --checkpoint-dir=ck \
    --log-level=info > shard-$s.log 2>&1 &
  shards+=($!); edges+=($e); printf -v "listen_$s" %s $l
  [[ -n $(wait_port shard-$s.log) ]] || fail "shard $s did not start: $(cat shard-$s.log)"
done
edge=$(free_port)
coordinate() {  # coordinate LOG [FLAG...]: the coordinator in the background; sets coordinator (its own pid)
  "${wrap[@]}" "$CLEAVE" --role=ps --shards=127.0.0.1:$listen_a,127.0.0.1:$listen_b --listen=127.0.0.1:$edge \
    --min-devices=4 "${run[@]}" --checkpoint-dir=ck --checkpoint-every=10 --log-level=info "${@:2}" > "$1" 2>&1 &
  coordinator=$!
}
wrap=()  # the first is killed: its own pid, not timeout's
coordinate first.log
[[ -n $(logged_port first.log "listening on port ") ]] || fail "the coordinator did not open its edge: $(tail -3 first.log)"
devices=()
for i in 1 2 3 4; do
  "$CLEAVE" --role=device --connect=127.0.0.1:$edge --profile=fast --threads=1 --log-level=info > device-$i.log 2>&1 &
  devices+=($!)
done
wait_for_checkpoint ck
kill -9 $coordinator
wait $coordinator 2>/dev/null
grep -q "step 60/60" first.log && fail "the run ended before the coordinator was killed: raise --steps"
killed_at=$(ls ck/checkpoint-*.clvck | tail -1)

wrap=(timeout 90)
coordinate resumed.log --resume --report=resumed.json
wait $coordinator || fail "the restarted coordinator did not finish: $(tail -3 resumed.log)"
codes=()
for pid in "${devices[@]}" "${shards[@]}"; do
  timeout 15 tail --pid=$pid -f /dev/null
  wait $pid; codes+=($?)
done
[[ ${codes[*]} == "0 0 0 0 0 0" ]] || fail "exit codes of the devices and shards: ${codes[*]}"

for s in a b; do
  grep -q "coordinator's connection closed without ending the job.*waiting up to 300 s" shard-$s.log \
    || fail "shard $s did not say it waits for a coordinator: $(tail -3 shard-$s.log)"
  grep -q "a coordinator attached again" shard-$s.log || fail "shard $s did not reattach: $(tail -3 shard-$s.log)"
  grep -q "the coordinator ended the job" shard-$s.log || fail "shard $s did not end with the job: $(tail -2 shard-$s.log)"
done
grep -q "every PS shard loaded its own file" resumed.log || fail "the shards did not load their files: $(tail -3 resumed.log)"
rejoined=0
for i in 1 2 3 4; do
  grep -q "reconnected to 127.0.0.1:$edge" device-$i.log \
    && [[ $(grep -c "connected to PS shard 1's edge" device-$i.log) -ge 2 ]] && rejoined=$((rejoined + 1))
done
((rejoined == 4)) || fail "$rejoined of 4 devices joined the restarted coordinator and its shards: $(tail -3 device-1.log)"
verdict=$(python3 - ref.json resumed.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
at = got.get("resumed_from_step")
tiles = [s.get("tiles", 0) for s in got.get("per_shard", [])]
if not at: print(f"not resumed ({at})")
elif got["losses"] != ref["losses"][at:]: print(f"resumed at {at}: the losses differ from the undisturbed run's")
elif len(tiles) != 2 or 0 in tiles: print(f"a shard sent no tiles to devices after the restart: {tiles}")
else: print(f"equal: {len(got['losses'])} losses from step {at}, final {got['losses'][-1]:.6f}; tiles {tiles}")
PY
)
[[ $verdict == equal* ]] || fail "after the restart: $verdict"
echo "coordinator restart: $verdict (killed after $(basename $killed_at); $rejoined of 4 devices rejoined)"

# No coordinator comes back: the shard gives up after --coordinator-timeout.
l=$(free_port)
"$CLEAVE" --role=ps-shard --listen=127.0.0.1:$l --threads=1 --coordinator-timeout=1 --log-level=info \
  > orphan.log 2> orphan.err &
orphan=$!
[[ -n $(wait_port orphan.log) ]] || fail "the shard did not start: $(cat orphan.log orphan.err)"
"$CLEAVE" --role=ps --shards=127.0.0.1:$l --model=mlp --steps=100000 --threads=1 --log-level=info > gone.log 2>&1 &
coordinator=$!
for _ in $(seq 1 400); do grep -q "serving the coordinator" orphan.log && break; sleep 0.05; done
kill -9 $coordinator
wait $coordinator 2>/dev/null
start=$(date +%s.%N)
timeout 20 tail --pid=$orphan -f /dev/null
wait $orphan; code=$?
took=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
((code == 1)) || fail "the orphaned shard exited with $code, expected 1: $(tail -2 orphan.log)"
[[ $(wc -l < orphan.err) == 1 ]] && grep -q "^cleave: no coordinator attached within 1 s (--coordinator-timeout) after \
the coordinator's connection closed without ending the job" orphan.err \
  || fail "unclear end of the orphaned shard: $(cat orphan.err)"
echo "orphan timeout: exit $code after ${took} s: $(cat orphan.err)"
finish
