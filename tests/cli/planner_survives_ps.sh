#!/usr/bin/env bash
# A planner process outlives its ps (docs/FAILURES.md, *Planner process
# restart*): detector, planner and ps as processes under mutual TLS, with two
# device processes, train mlp for 80 steps with a checkpoint every 10. The
# ps is killed with SIGKILL after the first checkpoint; under TLS the
# planner's link to the detector goes with it (CAF 0.17's OpenSSL module),
# and the planner process starts a new planner on a new link at the same
# port by itself. The ps started again with --resume finds it there, the
# devices rejoin, and every loss from the checkpoint's step on is the
# in-process run's bit for bit. A third ps then trains with the same planner
# process (which started a new planner whenever its detector link broke).
# Nothing but the ps is restarted, and the planner and detector stop cleanly
# on SIGTERM afterwards.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"
job_cas
for s in ps planner detector; do bash "$ca_sh" issue ca $s server > /dev/null; done
for d in dev1 dev2; do bash "$ca_sh" issue ca $d device > /dev/null; done
tls() { echo "--tls-cert=ca/$1.pem --tls-key=ca/$1.key --tls-ca=ca/ca.pem"; }

cost=(--ps-egress=1e12 --ps-flops=1e9)  # the planner splits the mlp's products
train=(--model=mlp --steps=80 --threads=1 --eval-tokens=256)
"$CLEAVE" --role=all --devices=2 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn --report=ref.json \
  || fail "the in-process run failed"

"$CLEAVE" --role=detector --listen=127.0.0.1:0 $(tls detector) > det.log 2>&1 &
det=$!
dport=$(wait_port det.log)
"$CLEAVE" --role=planner --listen=127.0.0.1:0 --detector="127.0.0.1:$dport" $(tls planner) --min-devices=2 \
  "${cost[@]}" > pln.log 2>&1 &
pln=$!
pport=$(wait_port pln.log)
[[ -n $dport && -n $pport ]] || fail "detector or planner did not start: $(cat det.log pln.log)"
edge=$(free_port)
ps_run() {  # ps_run LOG [FLAG...]: the ps in the background; sets ps (its own pid)
  "${wrap[@]}" "$CLEAVE" --role=ps --planner="127.0.0.1:$pport" --listen=127.0.0.1:$edge $(tls ps) --min-devices=2 \
    "${cost[@]}" "${train[@]}" --checkpoint-dir=ck --checkpoint-every=10 --log-level=info "${@:2}" > "$1" 2>&1 &
  ps=$!
}
mkdir ck
wrap=()
ps_run first.log
devices=()
for d in dev1 dev2; do
  "$CLEAVE" --role=device --connect=127.0.0.1:$edge $(tls $d) --profile=fast --threads=1 --log-level=info \
    > $d.log 2>&1 &
  devices+=($!)
done
wait_for_checkpoint ck
kill -9 $ps
wait $ps 2>/dev/null
grep -q "step 80/80" first.log && fail "the run ended before the ps was killed: raise --steps"

wrap=(timeout 90)
ps_run resumed.log --resume --report=resumed.json
wait $ps || fail "the ps restarted with --resume did not finish: $(tail -3 resumed.log)"
for pid in "${devices[@]}"; do
  timeout 15 tail --pid=$pid -f /dev/null
  wait $pid || fail "a device exited with $?: $(tail -2 dev1.log dev2.log)"
done
kill -0 $pln 2>/dev/null || fail "the planner process is gone: $(tail -3 pln.log)"
for d in dev1 dev2; do
  grep -q "reconnected to 127.0.0.1:$edge" $d.log || fail "$d did not rejoin the restarted ps: $(tail -2 $d.log)"
done
verdict=$(python3 - ref.json resumed.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
at = got.get("resumed_from_step")
if not at: print(f"not resumed ({at})")
elif got["losses"] != ref["losses"][at:]: print(f"resumed at {at}: the losses differ from the in-process run's")
elif got["tiles"] == 0: print("no tile went to a device after the restart")
else: print(f"equal: {len(got['losses'])} losses from step {at}, final {got['losses'][-1]:.6f}, {got['tiles']} tiles")
PY
)
[[ $verdict == equal* ]] || fail "after the restart: $verdict"
# Under TLS the planner's link to the detector breaks when a ps leaves (at
# the kill, or at the resumed run's end): the process starts a new planner
# by itself, and a third ps trains with it on two new devices.
if grep -q "the planner failed for good" pln.log; then
  for _ in $(seq 1 200); do grep -q "a new planner listens on port $pport" pln.log && break; sleep 0.05; done
  grep -q "a new planner listens on port $pport" pln.log || fail "no new planner after the link broke: $(tail -2 pln.log)"
else
  echo "note: the planner kept its link to the detector (no new planner needed)"
fi
wrap=(timeout 60)
ps_run third.log --steps=10 --report=third.json
for d in dev1 dev2; do
  "$CLEAVE" --role=device --connect=127.0.0.1:$edge $(tls $d) --profile=fast --threads=1 > third-$d.log 2>&1 &
done
wait $ps || fail "a third ps with the same planner process failed: $(tail -3 third.log)"
[[ -s third.json && $(json third.json 'd["tiles"]') -gt 0 ]] || fail "the third ps sent no tiles to devices"
kill -TERM $pln $det
for pid in $pln $det; do
  timeout 10 tail --pid=$pid -f /dev/null
  wait $pid || fail "the planner or detector did not stop cleanly ($?): $(tail -2 pln.log det.log)"
done
echo "planner survives its ps: $verdict; $(grep -c 'a new planner listens' pln.log) new planner(s) on new links; third ps: $(json third.json 'd["tiles"]') tiles"
finish
