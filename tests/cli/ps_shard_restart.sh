#!/usr/bin/env bash
# A PS shard process killed mid-run (docs/PS_SHARDS.md): a
# coordinator with two shard processes trains mlp, then gpt small, with a
# checkpoint every 10 steps, each shard writing its own slices into the
# shared ck; shard b is killed with SIGKILL after the first checkpoint and
# started again at its address a second later with --resume. The
# coordinator logs which shard it lost and that it waits, rolls the run
# back to the newest complete checkpoint set (every shard loading its own
# file, nothing re-sent) and finishes: the steps
# after the rollback replay the same batches from the same state, so every
# per-step loss, and the final one, equals the undisturbed run's bit for bit.
# Then a shard that does not come back within --shard-wait-seconds stops the
# run with a clear error, and a run without checkpoints stops at once.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

flags=(--model=mlp --steps=120 --threads=1 --eval-tokens=256 --log-level=info)

# start_shard NAME [PORT [FLAG...]]: a shard on PORT (default: an ephemeral
# one) checkpointing into ck; sets port_NAME and pid_NAME.
start_shard() {
  : > "$1.log"  # emptied here, not in the child, so that wait_port cannot read the last shard's port
  mkdir -p ck
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:${2:-0} --threads=1 --checkpoint-dir=ck "${@:3}" >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  local p; p=$(wait_port "$1.log")
  [[ -n $p ]] || fail "shard $1 did not start: $(cat "$1.log")"
  printf -v "port_$1" %s "$p"
}

for model in mlp gpt; do
  run=("${flags[@]}")
  # gpt small at context 64 and batch 8 (as ps_shard_processes.sh), 40 steps: about 10 s here.
  [[ $model == gpt ]] && run=(--model=gpt --steps=40 --context=64 --batch=8 --threads=1 --eval-tokens=256 --log-level=info)
  rm -rf ck
  "$CLEAVE" --role=all --ps-shards=2 --devices=0 "${run[@]}" --report=$model-ref.json > $model-ref.out 2>&1 \
    || fail "$model: the undisturbed run: $(tail -3 $model-ref.out)"
  start_shard a; start_shard b
  timeout 90 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${run[@]}" --checkpoint-dir=ck \
    --checkpoint-every=10 --shard-wait-seconds=30 --report=$model-restarted.json > $model-restarted.out 2>&1 &
  coordinator=$!
  wait_for_checkpoint ck
  kill -9 $pid_b
  wait $pid_b 2>/dev/null
  sleep 1
  start_shard b2 $port_b --resume
  wait $coordinator || fail "$model: the coordinator did not finish after the restart: $(tail -3 $model-restarted.out)"
  timeout 10 tail --pid=$pid_a -f /dev/null
  timeout 10 tail --pid=$pid_b2 -f /dev/null
  grep -q "PS shard 1 at 127.0.0.1:$port_b is lost .*waiting up to 30 s" $model-restarted.out \
    || fail "$model: no clear line about the lost shard: $(grep -i shard $model-restarted.out | tail -3)"
  grep -q "rolled back to step [1-9]" $model-restarted.out || fail "$model: no rollback: $(tail -3 $model-restarted.out)"
  grep -q "checkpoint set of step [1-9][0-9]*: every PS shard loaded its own file" $model-restarted.out \
    || fail "$model: the shards did not load their own files: $(grep -i 'set\|shard' $model-restarted.out | tail -3)"
  verdict=$(python3 - $model-ref.json $model-restarted.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
a, b = ref["losses"], got["losses"]
if len(a) != len(b): print(f"{len(b)} losses, expected {len(a)}")
elif abs(a[-1] - b[-1]) > 1e-4 * abs(a[-1]): print(f"final loss {b[-1]} vs {a[-1]}")
elif a != b: print(f"final loss {b[-1]} vs {a[-1]} within 1e-4; some steps differ")
else: print(f"equal: final loss {b[-1]:.6f} (undisturbed {a[-1]:.6f}), every step bit for bit")
PY
)
  [[ $verdict == equal* ]] || fail "$model after the restart: $verdict"
  echo "$model restart: $verdict"
done

# A shard that does not come back: the coordinator stops after the wait, saying so.
rm -rf ck
start_shard c; start_shard d
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_c,127.0.0.1:$port_d "${flags[@]}" --steps=100000 \
  --checkpoint-dir=ck --checkpoint-every=10 --shard-wait-seconds=2 > gone.out 2>&1 &
coordinator=$!
wait_for_checkpoint ck
kill -9 $pid_d
wait $coordinator && fail "the coordinator went on without shard d"
grep -q "PS shard 1 at 127.0.0.1:$port_d did not come back within 2 s" gone.out \
  || fail "unclear end without shard d: $(tail -2 gone.out)"
timeout 10 tail --pid=$pid_c -f /dev/null
wait $pid_c || fail "the surviving shard did not exit cleanly"
finish
