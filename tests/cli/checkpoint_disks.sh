#!/usr/bin/env bash
# Disks (docs/CHECKPOINTS.md): checkpoints into a small tmpfs that holds the
# first checkpoint of a tiny mlp (40 steps, one every 10) and not a second.
#  - --on-checkpoint-error=stop (the default): the run exits 1 at step 20
#    with one line naming the cause and the checkpoint of step 10, which is
#    all the folder holds; with room made (the tmpfs remounted larger),
#    --resume from it gives the undisturbed run's losses bit for bit;
#  - continue: each failure is one logged line, training goes on to the
#    undisturbed run's losses, the failed final checkpoint exits 1; the
#    checkpoint of step 10 resumes as above;
#  - the newest checkpoint truncated: --resume names it, refuses it and
#    resumes from the older one, bit for bit; both truncated: a clean
#    refusal (exit 1, one line), no crash;
#  - two --role=ps-shard processes, shard 1's --checkpoint-dir on the full
#    tmpfs: the coordinator stops with shard 1's reason, and the set of
#    step 10 resumes bit for bit; the newest set's shard file truncated: the
#    set is skipped naming the file, and the older set resumes bit for bit;
#  - continue over shards with the coordinator's folder full: the shards
#    keep the files of the set the coordinator's folder names (not their
#    newest three), so the set of step 10 resumes bit for bit.
# Root only (mount); skipped (77) otherwise. Every mount goes at exit.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "SKIP: mounting a tmpfs needs root"; exit 77; }
cd "$WORK"
DISK=$WORK/disk
SDISK=$WORK/shard-disk
mkdir -p "$DISK" "$SDISK"
# Processes go first (a busy mount does not unmount), then the mounts (lazily if
# something still holds one), then the scratch folder.
trap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; cd /
      for m in "$DISK" "$SDISK"; do mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -l "$m"; }; done
      rm -rf "$WORK"' EXIT
trap 'exit 143' TERM  # bash runs no EXIT trap when a signal kills it
trap 'exit 130' INT

flags=(--model=mlp --hidden=32 --steps=40 --threads=1 --log-level=warn)

# same_losses REF GOT STEP: GOT resumed at STEP with REF's losses from there on, bit for bit.
same_losses() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
step = int(sys.argv[3])
if got.get("resumed_from_step") != step: print(f"resumed at {got.get('resumed_from_step')}, expected {step}")
elif got["losses"] != ref["losses"][step:]: print(f"losses differ: {got['losses'][-1]!r} vs {ref['losses'][-1]!r}")
elif got["test_accuracy"] != ref["test_accuracy"]: print("test accuracy differs")
else: print("equal")
PY
}

# An undisturbed run, with room for its checkpoints: its losses, and the size of one checkpoint.
"$CLEAVE" "${flags[@]}" --checkpoint-dir=roomy --checkpoint-every=10 --report=ref.json > ref.out 2>&1 \
  || fail "the undisturbed run: $(cat ref.out)"
bytes=$(stat -c %s roomy/checkpoint-0000000040.clvck)
small=$((bytes / 1024 + 100))k  # one checkpoint and 100 KiB: its second one's temporary does not fit
mount -t tmpfs -o size=$small tmpfs "$DISK" || { echo "FAIL: cannot mount a tmpfs"; exit 1; }

# stop: one line, exit 1, the checkpoint of step 10 alone and whole.
"$CLEAVE" "${flags[@]}" --checkpoint-dir="$DISK/ck" --checkpoint-every=10 > stop.out 2>&1
rc=$?
want="cleave: checkpoint at step 20 failed: cannot write checkpoint $DISK/ck/.checkpoint-0000000020.clvck.tmp: write failed: No space left on device; stopping (--on-checkpoint-error=stop); --resume continues from $DISK/ck/checkpoint-0000000010.clvck"
[[ $rc == 1 ]] || fail "stop: exit $rc, expected 1"
[[ $(cat stop.out) == "$want" ]] && echo "ok: stop: $(cat stop.out)" || fail "stop: the output is not the one line expected: $(cat stop.out)"
[[ $(ls -A "$DISK/ck") == checkpoint-0000000010.clvck ]] || fail "stop: the folder holds $(ls -A "$DISK/ck")"
mount -o remount,size=4m "$DISK"  # room made
"$CLEAVE" "${flags[@]}" --checkpoint-dir="$DISK/ck" --checkpoint-every=10 --resume --report=stop-resumed.json \
  > stop-resumed.out 2>&1 || fail "resuming after stop: $(cat stop-resumed.out)"
v=$(same_losses ref.json stop-resumed.json 10)
[[ $v == equal ]] && echo "ok: stop: resumed from step 10 bit for bit" || fail "stop: resumed: $v"
cp -r "$DISK/ck" truncated  # the checkpoints of steps 30 and 40, for the truncation below
rm -rf "$DISK/ck"

# continue: a line per failure, the undisturbed losses, exit 1 for the final checkpoint.
mount -o remount,size=$small "$DISK"
"$CLEAVE" "${flags[@]}" --checkpoint-dir="$DISK/ck" --checkpoint-every=10 --on-checkpoint-error=continue \
  --report=continue.json > continue.out 2>&1
rc=$?
[[ $rc == 1 ]] || fail "continue: exit $rc, expected 1 (the final checkpoint failed)"
for step in 20 30; do
  grep -qx ".* error checkpoint at step $step failed: cannot write checkpoint $DISK/ck/.checkpoint-00000000$step.clvck.tmp: write failed: No space left on device; training goes on (--on-checkpoint-error=continue); the newest checkpoint is still $DISK/ck/checkpoint-0000000010.clvck" continue.out \
    || fail "continue: no line for step $step: $(cat continue.out)"
done
last="cleave: the final checkpoint at step 40 failed: cannot write checkpoint $DISK/ck/.checkpoint-0000000040.clvck.tmp: write failed: No space left on device; the trained state is not on disk (--on-checkpoint-error=continue finished the run); --resume continues from $DISK/ck/checkpoint-0000000010.clvck"
[[ $(tail -1 continue.out) == "$last" ]] || fail "continue: the last line is $(tail -1 continue.out)"
(($(wc -l < continue.out) == 3)) || fail "continue: $(wc -l < continue.out) lines, expected 3: $(cat continue.out)"
echo "ok: continue: $(head -1 continue.out | cut -d' ' -f3-)"
echo "ok: continue: $(tail -1 continue.out)"
v=$(python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); print(a["losses"]==b["losses"] and b["checkpoint_failures"]==3)' ref.json continue.json)
[[ $v == True ]] && echo "ok: continue: trained on to the undisturbed losses, 3 failures reported" || fail "continue: report differs"
[[ $(ls -A "$DISK/ck") == checkpoint-0000000010.clvck ]] || fail "continue: the folder holds $(ls -A "$DISK/ck")"
mount -o remount,size=4m "$DISK"
"$CLEAVE" "${flags[@]}" --checkpoint-dir="$DISK/ck" --checkpoint-every=10 --resume --report=continue-resumed.json \
  > continue-resumed.out 2>&1 || fail "resuming after continue: $(cat continue-resumed.out)"
v=$(same_losses ref.json continue-resumed.json 10)
[[ $v == equal ]] && echo "ok: continue: resumed from step 10 bit for bit" || fail "continue: resumed: $v"

# The newest checkpoint truncated between runs: named, refused, the older one taken.
newest=$WORK/truncated/checkpoint-0000000040.clvck
truncate -s $((bytes / 2)) "$newest"
"$CLEAVE" "${flags[@]}" --checkpoint-dir=truncated --checkpoint-every=10 --resume --report=truncated.json \
  --log-level=warn > truncated.out 2>&1 || fail "resuming past a truncated checkpoint: $(cat truncated.out)"
grep -q "warning --resume: refusing checkpoint truncated/checkpoint-0000000040.clvck: truncated or padded checkpoint: header promises $((bytes - 24)) payload bytes, file holds $((bytes / 2 - 24)); trying an older one" truncated.out \
  && echo "ok: truncated: $(grep -o -- '--resume: refusing.*' truncated.out)" || fail "truncated: not refused by name: $(cat truncated.out)"
v=$(same_losses ref.json truncated.json 30)
[[ $v == equal ]] && echo "ok: truncated: resumed from step 30 bit for bit" || fail "truncated: resumed: $v"
# Every checkpoint damaged: a clean refusal.
truncate -s 100 truncated/checkpoint-0000000030.clvck truncated/checkpoint-0000000040.clvck
"$CLEAVE" "${flags[@]}" --checkpoint-dir=truncated --resume --log-level=error > none.out 2>&1
rc=$?
[[ $rc == 1 && $(wc -l < none.out) == 1 && $(cat none.out) == "cleave: --resume: none of the 2 checkpoint(s) in truncated can be used; the newest: refusing checkpoint truncated/checkpoint-0000000040.clvck: truncated or padded checkpoint"* ]] \
  && echo "ok: all truncated: $(cat none.out)" || fail "all truncated: exit $rc: $(cat none.out)"

# Shard processes: shard 1's directory on a tmpfs with room for one of its files.
start_shard() {  # start_shard NAME DIR [FLAG...]: a shard on an ephemeral port checkpointing into DIR
  : > "$1.log"
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 --checkpoint-dir="$2" "${@:3}" >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  local p; p=$(wait_port "$1.log")
  [[ -n $p ]] || fail "shard $1 did not start: $(cat "$1.log")"
  printf -v "port_$1" %s "$p"
}
coordinator() {  # coordinator NAME [FLAG...]: a run over shards a and b into $sets; its exit status
  timeout 60 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" --checkpoint-dir="$sets" \
    --checkpoint-every=10 "${@:2}" > "$1.out" 2>&1
  local rc=$?
  wait $pid_a $pid_b
  return $rc
}
"$CLEAVE" --role=all --ps-shards=2 --devices=0 "${flags[@]}" --report=ref2.json > ref2.out 2>&1 \
  || fail "the undisturbed two-shard run: $(cat ref2.out)"
sets=sets
mkdir sets
mount -t tmpfs -o size=$((bytes / 2048 + 100))k tmpfs "$SDISK" || { echo "FAIL: cannot mount a tmpfs"; exit 1; }
start_shard a sets; start_shard b "$SDISK"
coordinator shards-stop
rc=$?
line=$(cat shards-stop.out)
[[ $rc == 1 && $line == "cleave: checkpoint at step 20 failed: PS shard 1 checkpointing: "*"cannot write shard checkpoint $SDISK/.shard-0000000020-01-of-02.clvshard.tmp: write failed: No space left on device; stopping (--on-checkpoint-error=stop); --resume continues from sets/checkpoint-0000000010.clvck" ]] \
  && echo "ok: shards: stop: $line" || fail "shards: stop: exit $rc: $line"
mount -o remount,size=4m "$SDISK"
start_shard a sets --resume; start_shard b "$SDISK" --resume
coordinator shards-resumed --resume --report=shards-resumed.json || fail "shards: resuming: $(cat shards-resumed.out)"
v=$(same_losses ref2.json shards-resumed.json 10)
[[ $v == equal ]] && echo "ok: shards: resumed from the set of step 10 bit for bit" || fail "shards: resumed: $v"
truncate -s 1000 "$SDISK/shard-0000000040-01-of-02.clvshard"
start_shard a sets --resume; start_shard b "$SDISK" --resume
coordinator shards-truncated --resume --report=shards-truncated.json --log-level=warn \
  || fail "shards: resuming past a truncated shard file: $(cat shards-truncated.out)"
grep -q "warning --resume: skipping the checkpoint set of step 40 (sets/checkpoint-0000000040.clvck): PS shard 1 cannot load shard-0000000040-01-of-02.clvshard: .*truncated or padded shard checkpoint" shards-truncated.out \
  && echo "ok: shards: truncated: $(grep -o -- '--resume: skipping.*' shards-truncated.out)" \
  || fail "shards: the truncated file is not named: $(cat shards-truncated.out)"
v=$(same_losses ref2.json shards-truncated.json 30)
[[ $v == equal ]] && echo "ok: shards: resumed from the set of step 30 bit for bit" || fail "shards: truncated: $v"

# continue over shards, the coordinator's folder on a tmpfs with room for one of its files: its
# writes at 20, 30 and 40 fail, the shards' succeed. The shards keep only the files of the steps
# the coordinator's folder names (10) and the newest, so the set of step 10 is whole at the end.
umount "$DISK"
cbytes=$(stat -c %s sets/checkpoint-0000000040.clvck)
mount -t tmpfs -o size=$((cbytes / 1024 + 50))k tmpfs "$DISK" || { echo "FAIL: cannot mount a tmpfs"; exit 1; }
sets=$DISK/sets
mkdir own
start_shard a own; start_shard b own
coordinator shards-continue --on-checkpoint-error=continue --report=shards-continue.json
rc=$?
[[ $rc == 1 ]] || fail "shards: continue: exit $rc, expected 1: $(cat shards-continue.out)"
(($(grep -c "training goes on (--on-checkpoint-error=continue); the newest checkpoint is still $sets/checkpoint-0000000010.clvck" shards-continue.out) == 2)) \
  || fail "shards: continue: not two lines going on: $(cat shards-continue.out)"
v=$(python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); print(a["losses"]==b["losses"])' ref2.json shards-continue.json)
[[ $v == True ]] || fail "shards: continue: the losses differ from the undisturbed run's"
kept=$(ls own | tr '\n' ' ')
[[ $kept == "shard-0000000010-00-of-02.clvshard shard-0000000010-01-of-02.clvshard shard-0000000040-00-of-02.clvshard shard-0000000040-01-of-02.clvshard " ]] \
  && echo "ok: shards: continue: the shards keep $kept" || fail "shards: continue: the shards' folder holds $kept"
mount -o remount,size=4m "$DISK"
start_shard a own --resume; start_shard b own --resume
coordinator shards-continue-resumed --resume --report=shards-continue-resumed.json \
  || fail "shards: continue: resuming: $(cat shards-continue-resumed.out)"
v=$(same_losses ref2.json shards-continue-resumed.json 10)
[[ $v == equal ]] && echo "ok: shards: continue: resumed from the set of step 10 bit for bit" || fail "shards: continue: resumed: $v"
finish
