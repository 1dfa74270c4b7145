#!/usr/bin/env bash
# Checkpoint sets of shard processes (docs/PS_SHARDS.md): a
# coordinator and two --role=ps-shard processes train mlp for 60 steps with
# a set every 20 (each shard writes its own slices into the shared ck, the
# coordinator its file last, naming them). From the set of step 40:
#  - two new shard processes load their own files (nothing re-sent) and the
#    run goes on bit for bit against the undisturbed in-process run;
#  - three shard processes, and one process (--ps-shards=1), put the moments
#    together from the set's files: the final loss within 1e-4 relative (the
#    partial sums of a K-split product add in another grouping);
#  - a newest set whose shard file is corrupt (shards) or missing (one
#    process) is skipped with a warning naming why, and the older one taken.
# Then the refusals: a shard without --checkpoint-dir under a coordinator
# with one, and a shard given a directory that does not exist.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

flags=(--model=mlp --steps=60 --threads=1 --eval-tokens=256 --log-level=info)

# start_shard NAME DIR [FLAG...]: a shard on an ephemeral port checkpointing into DIR.
start_shard() {
  : > "$1.log"
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 --checkpoint-dir="$2" "${@:3}" >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  local p; p=$(wait_port "$1.log")
  [[ -n $p ]] || fail "shard $1 did not start: $(cat "$1.log")"
  printf -v "port_$1" %s "$p"
}

# check REPORT STEP exact|close: resumed at STEP, the losses against the undisturbed run's.
check() {
  python3 - ref.json "$1" "$2" "$3" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
step, how = int(sys.argv[3]), sys.argv[4]
a, b = ref["losses"][step:], got["losses"]
if got.get("resumed_from_step") != step: print(f"resumed at {got.get('resumed_from_step')}, expected {step}")
elif len(a) != len(b): print(f"{len(b)} losses, expected {len(a)}")
elif how == "exact" and a != b: print(f"final loss {b[-1]} vs {a[-1]}: not bit for bit")
elif abs(a[-1] - b[-1]) > 1e-4 * abs(a[-1]): print(f"final loss {b[-1]} vs {a[-1]}")
else: print(f"ok: final loss {b[-1]:.7f} (undisturbed {a[-1]:.7f}, relative {abs(a[-1] - b[-1]) / abs(a[-1]):.1e})")
PY
}

"$CLEAVE" --role=all --ps-shards=2 --devices=0 "${flags[@]}" --report=ref.json > ref.out 2>&1 \
  || fail "the undisturbed run: $(tail -3 ref.out)"
mkdir ck
start_shard a ck; start_shard b ck
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir=ck \
  --checkpoint-every=20 > sets.out 2>&1 || fail "the run writing sets: $(tail -3 sets.out)"
wait $pid_a $pid_b
for f in checkpoint-0000000040.clvck checkpoint-0000000060.clvck shard-00000000{20,40,60}-0{0,1}-of-02.clvshard; do
  [[ -f ck/$f ]] || fail "no $f in the set directory: $(ls ck)"
done
rm ck/checkpoint-0000000060.clvck  # the set of step 40 is now the newest

# Same shard count: each shard loads its own file.
cp -r ck same
start_shard a same --resume; start_shard b same --resume
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir=same \
  --resume --report=same.json > same.out 2>&1 || fail "resume on 2 shards: $(tail -3 same.out)"
grep -q "checkpoint set of step 40: every PS shard loaded its own file" same.out \
  || fail "the shards did not load their own files: $(grep -i 'set\|resum' same.out)"
verdict=$(check same.json 40 exact); [[ $verdict == ok* ]] || fail "2 shards: $verdict"; echo "2 -> 2 shards: $verdict"

# Another shard count: the coordinator reads the set's files and cuts the tensors again.
cp -r ck three
start_shard a three; start_shard b three; start_shard c three
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b,127.0.0.1:$port_c "${flags[@]}" \
  --checkpoint-dir=three --resume --report=three.json > three.out 2>&1 || fail "resume on 3 shards: $(tail -3 three.out)"
grep -q "checkpoint set of step 40: the moments put together from its 2 shard files" three.out \
  || fail "3 shards: $(grep -i 'set\|resum' three.out)"
verdict=$(check three.json 40 close); [[ $verdict == ok* ]] || fail "3 shards: $verdict"; echo "2 -> 3 shards: $verdict"
cp -r ck one
"$CLEAVE" --role=all --ps-shards=1 --devices=0 "${flags[@]}" --checkpoint-dir=one --resume --report=one.json \
  > one.out 2>&1 || fail "resume in one process: $(tail -3 one.out)"
verdict=$(check one.json 40 close); [[ $verdict == ok* ]] || fail "1 shard: $verdict"; echo "2 -> 1 shard: $verdict"

# An incomplete newest set: a run resumed from set 40 writes set 60 again,
# then one of its shard files is corrupted, so resume takes set 40.
cp -r ck bad
start_shard a bad; start_shard b bad
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir=bad \
  --resume > bad-60.out 2>&1 || fail "the run writing set 60 again: $(tail -3 bad-60.out)"
wait $pid_a $pid_b
[[ -f bad/checkpoint-0000000060.clvck ]] || fail "no set of step 60: $(ls bad)"
printf 'X' | dd of=bad/shard-0000000060-01-of-02.clvshard bs=1 seek=100 conv=notrunc status=none
start_shard a bad; start_shard b bad
timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir=bad \
  --resume --report=bad.json > bad.out 2>&1 || fail "resume past a corrupt shard file: $(tail -3 bad.out)"
grep -q "warn.*skipping the checkpoint set of step 60 .*PS shard 1 cannot load shard-0000000060-01-of-02.clvshard: .*checksum mismatch" bad.out \
  || fail "no warning naming the corrupt file: $(grep -i 'skip\|warn' bad.out)"
verdict=$(check bad.json 40 exact); [[ $verdict == ok* ]] || fail "past a corrupt set: $verdict"; echo "corrupt newest set: $verdict"
# The last resume wrote set 60 whole again; without one of its files, one process takes set 40.
cp -r bad miss
rm miss/shard-0000000060-00-of-02.clvshard
"$CLEAVE" --role=all --ps-shards=1 --devices=0 "${flags[@]}" --checkpoint-dir=miss --resume --report=miss.json \
  > miss.out 2>&1 || fail "resume past a missing shard file: $(tail -3 miss.out)"
grep -q "warn.*skipping the checkpoint set of step 60 .*cannot open shard checkpoint miss/shard-0000000060-00-of-02.clvshard" miss.out \
  || fail "no warning naming the missing file: $(grep -i 'skip\|warn' miss.out)"
verdict=$(check miss.json 40 close); [[ $verdict == ok* ]] || fail "past a missing file: $verdict"; echo "missing shard file: $verdict"

# Refusals: a shard without a checkpoint directory under a coordinator with
# one (before any step), and a shard directory that does not exist (usage, 2).
: > a.log
"$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 >> a.log 2>&1 &
port_a=$(wait_port a.log)
start_shard b ck
out=$(timeout 30 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir=ck 2>&1) \
  && fail "a coordinator with --checkpoint-dir took a shard without one"
[[ $out == *"PS shard 0 at 127.0.0.1:$port_a: "*"has no --checkpoint-dir"* ]] || fail "unclear refusal: $(echo "$out" | tail -1)"
out=$("$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --checkpoint-dir=no/such/dir 2>&1); rc=$?
[[ $rc == 2 && $out == *"--checkpoint-dir no/such/dir is not a directory"* ]] || fail "missing dir: rc $rc, $out"
finish
