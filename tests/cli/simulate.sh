#!/usr/bin/env bash
# --role=simulate: the report parses and says it is simulated, Cleave and
# every baseline give a step time (or say the model does not fit), churn
# costs tiles, and bad inputs are refused with one line and exit code 2.
source "$(dirname "$0")/lib.sh"

sim() { "$CLEAVE" --role=simulate --model=gpt --shape=small --batch=4 --context=64 --log-level=warn "$@"; }

for system in cleave asteroid megatron dp; do
  if ! sim --system=$system --fleet-preset=mix --devices=16 --seed=3 --steps=2 \
       --report="$WORK/$system.json" > "$WORK/$system.out" 2>&1; then
    fail "--system=$system exited non-zero: $(cat "$WORK/$system.out")"; continue
  fi
  [[ $(json "$WORK/$system.json" 'd["simulated"] is True and d["system"] == "'$system'"') == True ]] \
    || fail "$system: report lacks simulated: true"
  [[ $(json "$WORK/$system.json" 'd["steps"] == 2 and d["mean_step_seconds"] > 0') == True ]] \
    || fail "$system: no step time: $(cat "$WORK/$system.json" | head -c 300)"
  echo "ok: $system $(cat "$WORK/$system.out")"
done

# Devices fast enough that the small gpt's products are split, and churn: a
# device dies mid-step and, without speculation to finish them first, its
# tiles move once the detector reports it; that step is the slowest.
cat > "$WORK/fleet.json" <<'J'
{"devices": [{"name": "quick", "flops": 1e12, "memory_bytes": 4e9, "downlink": 1e9, "uplink": 1e9, "latency": 0.001, "count": 8}]}
J
cat > "$WORK/churn.json" <<'J'
{"events": [{"step": 2, "action": "die", "device": 0, "after_seconds": 0.01}]}
J
if sim --fleet="$WORK/fleet.json" --ps-flops=1e9 --steps=3 --churn="$WORK/churn.json" --speculate=0 \
     --report="$WORK/churn_report.json" > /dev/null 2>&1; then
  [[ $(json "$WORK/churn_report.json" 'd["tiles"] > 0 and d["failures_detected"] == 1') == True ]] \
    || fail "churn: $(json "$WORK/churn_report.json" '(d["tiles"], d["failures_detected"])')"
  [[ $(json "$WORK/churn_report.json" 'd["tiles_reassigned"] > 0 and d["recovery_seconds_total"] > 0') == True ]] \
    || fail "churn: no tile moved: $(json "$WORK/churn_report.json" '(d["tiles_reassigned"], d["recovery_seconds_total"])')"
  [[ $(json "$WORK/churn_report.json" 'max(d["step_seconds"]) == d["step_seconds"][1]') == True ]] \
    || fail "churn: step 2 (its death) is not the slowest: $(json "$WORK/churn_report.json" 'd["step_seconds"]')"
  echo "ok: a death mid-step moved $(json "$WORK/churn_report.json" 'd["tiles_reassigned"]') tile(s)"
else
  fail "the churn run exited non-zero"
fi

# A model no device can hold: data parallelism says so instead of a time.
"$CLEAVE" --role=simulate --system=dp --model=gpt --shape=opt-6.7b --batch=8 --context=512 \
  --fleet-preset=phone --devices=64 --log-level=warn --report="$WORK/nofit.json" > "$WORK/nofit.out" 2>&1
[[ $(json "$WORK/nofit.json" 'd["fits"] is False and "mean_step_seconds" not in d') == True ]] \
  || fail "dp on phones: $(cat "$WORK/nofit.out")"
grep -q "does not fit" "$WORK/nofit.out" || fail "dp on phones: the output does not say it does not fit"

expect_refusal() {  # expect_refusal "words the reason must contain" args...
  local want=$1; shift
  local err rc
  err=$("$CLEAVE" --role=simulate "$@" 2>&1 >/dev/null); rc=$?
  if ((rc != 2)); then fail "cleave --role=simulate $* exited $rc, not 2: $err"; return; fi
  if [[ $(printf '%s\n' "$err" | grep -c .) -ne 1 ]]; then fail "cleave $*: not one line: $err"; return; fi
  if [[ $err != *"$want"* ]]; then fail "cleave $*: reason lacks '$want': $err"; return; fi
  echo "ok: $* -> $err"
}
expect_refusal "needs a fleet" --model=gpt
expect_refusal "unknown preset 'toaster'" --fleet-preset=toaster --devices=4
expect_refusal "--devices must be at least 1" --fleet-preset=vm
expect_refusal "not both" --fleet-preset=vm --devices=4 --fleet="$WORK/fleet.json"
expect_refusal "--system must be" --fleet-preset=vm --devices=4 --system=horovod
expect_refusal "--recovery must be" --fleet-preset=vm --devices=4 --system=asteroid --recovery=pray
expect_refusal "cannot open fleet file" --fleet=/nonexistent/fleet.json
expect_refusal "unknown gpt shape" --model=gpt --shape=opt-999b --fleet-preset=vm --devices=4
expect_refusal "--ps-ingress" --fleet-preset=vm --devices=4 --ps-ingress=-1
expect_refusal "--ps-check-rate must be a positive" --fleet-preset=vm --devices=4 --ps-check-rate=0
expect_refusal "--ps-copy-rate must be a positive" --fleet-preset=vm --devices=4 --ps-copy-rate=-5
expect_refusal "--ps-op-seconds must be finite" --fleet-preset=vm --devices=4 --ps-op-seconds=-1e-6
expect_refusal "--ps-op-threads must be 1 to 4096" --fleet-preset=vm --devices=4 --ps-op-threads=0
echo '{"events": [{"step": 0, "action": "die", "device": 99}]}' > "$WORK/bad_churn.json"
expect_refusal "bad_churn.json" --fleet-preset=vm --devices=4 --churn="$WORK/bad_churn.json"
finish
