#!/usr/bin/env bash
# A run killed with SIGKILL and resumed from its checkpoint reports, step for
# step, exactly the losses of an uninterrupted run (mlp and gpt, the mlp with
# two PS shards, and the extreme classifier in sparse mode, in one process
# and on 4 emulated devices); and a two-shard
# checkpoint resumes on one shard.
source "$(dirname "$0")/lib.sh"

check_model() {
  local name=$1; shift
  local args=("$@" --threads=2 --log-level=warn)
  "$CLEAVE" "${args[@]}" --report="$WORK/$name-ref.json" || { fail "$name reference run failed"; return; }

  local ck="$WORK/$name-ck"
  "$CLEAVE" "${args[@]}" --checkpoint-dir="$ck" --checkpoint-every=10 &
  local pid=$!
  for _ in $(seq 1 3000); do  # up to 30 s for the first checkpoint
    compgen -G "$ck/checkpoint-*.clvck" >/dev/null && break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null || fail "$name: run ended before it could be killed"
  wait $pid 2>/dev/null

  "$CLEAVE" "${args[@]}" --checkpoint-dir="$ck" --resume --report="$WORK/$name-res.json" \
    || { fail "$name resumed run failed"; return; }
  local verdict
  verdict=$(python3 - "$WORK/$name-ref.json" "$WORK/$name-res.json" <<'PY'
import json, sys
ref, res = (json.load(open(p)) for p in sys.argv[1:3])
start = res["resumed_from_step"]
if start <= 0 or start >= ref["steps"]:
    print(f"bad resume point {start}"); sys.exit()
tail = ref["losses"][start:]
if tail != res["losses"]:
    bad = next(i for i, (a, b) in enumerate(zip(tail, res["losses"])) if a != b)
    print(f"losses differ from step {start + bad + 1}: {tail[bad]!r} vs {res['losses'][bad]!r}")
elif ref["final_train_loss"] != res["final_train_loss"]:
    print("final losses differ")
else:
    k = "test_accuracy" if "test_accuracy" in ref else "val_loss"
    print("equal" if ref[k] == res[k] else f"{k} differs: {ref[k]} vs {res[k]}")
    print(f"resumed at step {start} of {ref['steps']}", file=sys.stderr)
PY
)
  [[ $verdict == equal ]] && echo "ok: $name resume is bit-for-bit" || fail "$name: $verdict"
}

check_model mlp --model=mlp --steps=300 --hidden=128,64
check_model gpt --model=gpt --steps=120 --context=32 --batch=4 --eval-tokens=4096
# Two PS shards: each slice's AdamW moments go into the checkpoint and back.
check_model mlp-2-shards --model=mlp --steps=300 --hidden=128,64 --ps-shards=2
# Sparse mode: the hash tables, rebuilt at resume from the checkpoint's
# weights (taken at a refresh step, here a rebuild), are the uninterrupted
# run's; reservoir
# buckets and the random top-up draw from the seed and the step.
make_xc_dir "$WORK/xc-task"
check_model xc --model=xc --dataset=xc:"$WORK/xc-task" --hidden=16 --batch=32 --steps=400 \
  --lsh-k=2 --lsh-l=4 --bucket-size=4 --bucket-policy=reservoir --min-active=8 \
  --rehash-every=5 --rebuild-every=10
# Model-lets on 4 emulated devices: the checkpoint holds the layer the PS
# pulls from the devices at that step (not its last periodic copy, every 7
# steps here); at resume the layer is placed again from it and each device
# rebuilds its tables as of that step. 100 steps: the emulated devices pace
# their frames on the default fleet's links (a step takes about 0.13 s).
check_model xc-devices --model=xc --dataset=xc:"$WORK/xc-task" --hidden=16 --batch=32 --steps=100 \
  --lsh-k=2 --lsh-l=4 --bucket-size=4 --bucket-policy=reservoir --min-active=8 \
  --rehash-every=5 --rebuild-every=10 --devices=4 --modellet-copy-every=7

# A checkpoint holds whole tensors: a run written by two shards resumes on
# one, with the two-shard run's losses up to summation order.
other=(--model=mlp --steps=60 --hidden=128,64 --threads=2 --log-level=warn)
ck="$WORK/reshard"
"$CLEAVE" "${other[@]}" --ps-shards=2 --checkpoint-dir="$ck" --checkpoint-every=30 \
  --report="$WORK/two.json" || fail "two-shard run failed"
rm -f "$ck"/checkpoint-0000000060.clvck
"$CLEAVE" "${other[@]}" --ps-shards=1 --checkpoint-dir="$ck" --resume --report="$WORK/one.json" \
  || fail "resuming on one shard failed"
verdict=$(python3 - "$WORK/two.json" "$WORK/one.json" <<'PY'
import json, sys
two, one = (json.load(open(p)) for p in sys.argv[1:3])
if one["resumed_from_step"] != 30: print(f"resumed from {one['resumed_from_step']}"); sys.exit()
worst = max(abs(a - b) / abs(a) for a, b in zip(two["losses"][30:], one["losses"]))
print("close" if worst <= 1e-4 and len(one["losses"]) == 30 else f"differs by {worst:.2e}")
PY
)
[[ $verdict == close ]] && echo "ok: a two-shard checkpoint resumes on one shard" || fail "reshard: $verdict"
finish
