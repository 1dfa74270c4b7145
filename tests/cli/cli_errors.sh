#!/usr/bin/env bash
# Bad flags, roles and files: each exits non-zero with a one-line reason and
# never a crash or stack trace.
source "$(dirname "$0")/lib.sh"

expect_refusal() {  # expect_refusal "words the reason must contain" args...
  local want=$1; shift
  local err rc
  err=$("$CLEAVE" --steps=1 "$@" 2>&1 >/dev/null); rc=$?
  if ((rc == 0)); then fail "cleave $* exited 0"; return; fi
  if ((rc > 2)); then fail "cleave $* exited $rc (crash?): $err"; return; fi
  if [[ $(printf '%s\n' "$err" | grep -c .) -ne 1 ]]; then fail "cleave $*: not one line: $err"; return; fi
  if [[ $err != *"$want"* ]]; then fail "cleave $*: reason lacks '$want': $err"; return; fi
  echo "ok: cleave $* -> $err"
}

expect_refusal "unknown role 'bogus'" --role=bogus
expect_refusal "invalid value in '--epochs=abc'" --epochs=abc
expect_refusal "unknown flag '--frobnicate=1'" --frobnicate=1
expect_refusal "--batch must be positive" --batch=-3
expect_refusal "--ps-tile-seconds must be in [0, 1]" --devices=2 --ps-tile-seconds=-1e-5
expect_refusal "unknown model 'resnet'" --model=resnet
expect_refusal "unknown gpt shape" --model=gpt --shape=opt-999b
expect_refusal "--hidden" --hidden=128,x
expect_refusal "--lr" --lr=-1
expect_refusal "needs --model=gpt" --dataset=fortunes
expect_refusal "unknown dataset" --dataset=cifar
expect_refusal "/nonexistent/dir" --data-dir=/nonexistent/dir
expect_refusal "--resume needs --checkpoint-dir" --resume
expect_refusal "--devices must be >= 0" --devices=-1
expect_refusal "unknown flag '--bulk'" --role=device --connect=127.0.0.1:1 --bulk
expect_refusal "--listen: '127.0.0.1:99999' has no valid port" --role=ps --listen=127.0.0.1:99999
expect_refusal "--ps-shards must be in [1, 64], got 0" --ps-shards=0
expect_refusal "--ps-shards must be in [1, 64], got 65" --ps-shards=65
expect_refusal "--log-level" --log-level=loud
expect_refusal "--churn-rate must be in" --devices=4 --churn-rate=-1
expect_refusal "not both" --devices=4 --churn-rate=0.1 --churn=x.json
expect_refusal "kill real device processes" --role=ps --listen=0 --churn-rate=0.1
expect_refusal "--failure-policy" --failure-policy=panic
expect_refusal "--suspect-phi" --suspect-phi=9 --dead-phi=8
expect_refusal "--admin shows a fleet" --devices=0 --admin=0
expect_refusal "--admin: 'notaport' has no valid port" --devices=2 --admin=notaport
printf '{"events": [{"step": 1, "action": "die", "device": 7}]}' > "$WORK/churn.json"
expect_refusal "events[0]: device 7 does not exist" --devices=4 --churn="$WORK/churn.json"
# Fault injection: --byzantine for the in-process fleet only, its file
# checked before any device starts; --lie only on a device process.
expect_refusal "cannot open byzantine file $WORK/missing.json" --devices=4 --byzantine="$WORK/missing.json"
printf '{"liars": [{"device": 4, "lies": [{"kind": "nan"}]}]}' > "$WORK/byz-range.json"
expect_refusal "liars[0]: device 4 is not in the fleet [0, 4)" --devices=4 --byzantine="$WORK/byz-range.json"
printf '{"liars": [{"device": 1, "lies": [{"kind": "fib", "rate": 0.5}]}]}' > "$WORK/byz-kind.json"
expect_refusal "liars[0].lies[0]: unknown lie kind 'fib'" --devices=4 --byzantine="$WORK/byz-kind.json"
printf '{"liars": [' > "$WORK/byz-json.json"
expect_refusal "$WORK/byz-json.json: not valid JSON" --devices=4 --byzantine="$WORK/byz-json.json"
expect_refusal "--byzantine gives lies to the in-process fleet" --devices=0 --byzantine="$WORK/byz-kind.json"
expect_refusal "--byzantine gives lies to the in-process fleet" --role=ps --listen=0 --byzantine="$WORK/byz-kind.json"
expect_refusal "--lie is for --role=device" --devices=2 --lie=element:1
expect_refusal "--lie is for --role=device" --role=ps --listen=0 --lie=element:1
expect_refusal "--lie=element:0: lie 'element:0': rate must be in (0, 1]" --role=device --connect=127.0.0.1:1 --lie=element:0
expect_refusal "unknown lie kind 'fib'" --role=device --connect=127.0.0.1:1 --lie=fib:1
# A device process's own profile (--fleet): one device, and not beside --profile.
printf '{"devices": [{"preset": "edge", "count": 2}]}' > "$WORK/two-devices.json"
expect_refusal "a device process declares one profile, the file describes 2 devices" \
  --role=device --connect=127.0.0.1:1 --fleet="$WORK/two-devices.json"
printf '{"devices": [{"preset": "edge"}]}' > "$WORK/one-device.json"
expect_refusal "--profile and --fleet name this device's profile twice" \
  --role=device --connect=127.0.0.1:1 --fleet="$WORK/one-device.json" --profile=vm
printf '{"devices": [{"name": "x", "flops": 1e10, "memory_bytes": 1e9, "downlink": 0, "uplink": 1e6}]}' \
  > "$WORK/bad-device.json"
expect_refusal "downlink must be finite and positive" --role=device --connect=127.0.0.1:1 --fleet="$WORK/bad-device.json"

# A truncated image file and a wrong magic number are named with the file.
mkdir -p "$WORK/fm"
src=/usr/share/datasets/fashion-mnist
cp "$src"/*.gz "$WORK/fm/"
head -c 100000 "$src/train-images-idx3-ubyte.gz" > "$WORK/fm/train-images-idx3-ubyte.gz"
expect_refusal "$WORK/fm/train-images-idx3-ubyte.gz" --model=mlp --data-dir="$WORK/fm"
cp "$src/train-labels-idx1-ubyte.gz" "$WORK/fm/train-images-idx3-ubyte.gz"
expect_refusal "magic" --model=mlp --data-dir="$WORK/fm"

# A corrupt checkpoint is refused with its name; the older one is used instead.
ck="$WORK/ck"
"$CLEAVE" --steps=4 --checkpoint-dir="$ck" --checkpoint-every=2 --hidden=32 --log-level=warn \
  || fail "checkpointed run failed"
newest=$(ls "$ck"/checkpoint-*.clvck | sort | tail -1)
printf 'garbage' | dd of="$newest" bs=1 seek=200 conv=notrunc status=none
out=$("$CLEAVE" --steps=6 --checkpoint-dir="$ck" --resume --hidden=32 --report="$WORK/r.json" 2>&1) \
  || fail "resume past a corrupt checkpoint failed: $out"
[[ $out == *"refusing checkpoint"*"checksum"* ]] || fail "corrupt checkpoint not reported: $out"
[[ $(json "$WORK/r.json" 'd["resumed_from_step"]') == 2 ]] || fail "did not fall back to step 2"
# A checkpoint from another model is refused outright.
expect_refusal "was written for model" --steps=6 --checkpoint-dir="$ck" --resume --hidden=64
# What a checkpoint that cannot be written does is continue or stop, nothing else.
expect_refusal "--on-checkpoint-error must be continue or stop, got 'ignore'" --on-checkpoint-error=ignore

# A seeded churn rate is a reproducible input: the same seed applies the same
# events and, plans keeping their tiles, gives the same losses as no churn.
churn_run() {  # churn_run NAME [flags...]
  local name=$1; shift
  "$CLEAVE" --devices=8 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --hidden=64 --steps=60 \
    --log-level=warn --report="$WORK/$name.json" "$@" || fail "churn run $name failed"
}
churn_run quiet
churn_run rate-a --churn-rate=0.1 --seed=1
churn_run rate-b --churn-rate=0.1 --seed=1
# The seed decides the events due; whether the last step's event, delayed into
# its step, fires before the run ends is the host's timing ("applied").
a=$(json "$WORK/rate-a.json" 'sorted(d["churn"]["scheduled"].items())')
b=$(json "$WORK/rate-b.json" 'sorted(d["churn"]["scheduled"].items())')
[[ $a == "$b" && $a != "[]" ]] && echo "ok: --churn-rate scheduled $a twice" || fail "churn-rate runs differ: $a vs $b"
for run in rate-a rate-b; do
  same=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['losses'] == json.load(open(sys.argv[2]))['losses'])" \
    "$WORK/quiet.json" "$WORK/$run.json")
  [[ $same == True ]] || fail "$run: losses differ from the churn-free run"
done

# A --byzantine device lies from the start and says so when it goes
# (cli.liars checks that the PS catches it). Tiles cost the PS nothing here,
# so that the planner splits the small mlp's products over both devices.
printf '{"liars": [{"device": 1, "lies": [{"kind": "scale", "rate": 0.5}]}]}' > "$WORK/byz.json"
out=$("$CLEAVE" --devices=2 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --ps-tile-seconds=0 --hidden=64 --steps=3 \
        --byzantine="$WORK/byz.json" 2>&1) || fail "--byzantine run failed: $out"
[[ $out == *"--byzantine: 1 of 2 emulated devices lie: 1 (scale)"* ]] || fail "--byzantine not logged: $out"
[[ $out =~ "emulated device 1 told "[1-9][0-9]*" lies (scale "[1-9] ]] \
  && echo "ok: a --byzantine device told its lies" || fail "the liar told no lies: $out"

# --help explains every flag and exits 0.
help=$("$CLEAVE" --help 2>&1) || fail "--help exited non-zero"
for flag in role devices model shape dataset data-dir epochs steps batch lr seed threads report \
            checkpoint-dir checkpoint-every resume; do
  [[ $help == *"--$flag"* ]] || fail "--help does not mention --$flag"
done
finish
