#!/usr/bin/env bash
# Real kills on loopback. (1) Two of four device processes get SIGKILL while
# the ps is mid-training: it finishes with the loss trajectory of the
# undisturbed in-process run. (2) The ps itself gets SIGKILL after a
# checkpoint; restarted with --resume on the same port, the devices
# reconnect by themselves and training finishes with the model an
# uninterrupted run gives. (3) A separate planner process gets SIGKILL
# mid-training and is restarted on its port: the ps's engines and the
# devices' proxies find it again, and the loss trajectory is the undisturbed
# one.
source "$(dirname "$0")/lib.sh"

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
train=(--model=mlp --steps=400 --threads=1 --progress-seconds=30)

wait_for() {  # wait_for SECONDS COMMAND...: polls until COMMAND succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.05; done
}
port_of() { grep -o "listening on port [0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$" | head -1; }
has_port() { [[ -n $(port_of "$1") ]]; }
steps_done() { grep -c "" "$1" 2>/dev/null; }

start_devices() {  # start_devices PORT LOGPREFIX [device flags...]
  local port=$1 prefix=$2; shift 2
  pids=()
  for i in 1 2 3 4; do
    "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 \
      "$@" > "$prefix-$i.log" 2>&1 &
    pids+=($!)
  done
}

"$CLEAVE" --role=all --devices=4 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --report="$WORK/inproc.json" || fail "in-process run failed"

# 1. SIGKILL two devices mid-training.
"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=4 "${cost[@]}" "${train[@]}" \
  --report="$WORK/killed.json" > "$WORK/ps1.log" 2>&1 &
ps1=$!
wait_for 20 has_port "$WORK/ps1.log" || fail "ps did not start: $(cat "$WORK/ps1.log")"
start_devices "$(port_of "$WORK/ps1.log")" "$WORK/dev1" --reconnect-seconds=0
wait_for 30 grep -q "training mlp" "$WORK/ps1.log" || fail "training did not start"
sleep 0.7
kill -9 "${pids[0]}" "${pids[2]}"
timeout 300 tail --pid=$ps1 -f /dev/null
wait $ps1 || fail "ps failed after two devices were killed: $(tail -3 "$WORK/ps1.log")"
grep -q "is dead" "$WORK/ps1.log" || fail "the ps never saw a device die"
wait 2>/dev/null

# 2. SIGKILL the ps after its first checkpoint; restart it with --resume.
ck=(--checkpoint-dir="$WORK/ck" --checkpoint-every=100)
"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=4 "${cost[@]}" "${train[@]}" "${ck[@]}" \
  > "$WORK/ps2.log" 2>&1 &
ps2=$!
wait_for 20 has_port "$WORK/ps2.log" || fail "ps did not start: $(cat "$WORK/ps2.log")"
port=$(port_of "$WORK/ps2.log")
start_devices "$port" "$WORK/dev2" --reconnect-seconds=60
wait_for 60 compgen -G "$WORK/ck/checkpoint-*.clvck" > /dev/null || fail "no checkpoint was written"
kill -9 $ps2
wait $ps2 2>/dev/null
"$CLEAVE" --role=ps --listen="127.0.0.1:$port" --min-devices=4 "${cost[@]}" "${train[@]}" "${ck[@]}" \
  --resume --report="$WORK/resumed.json" > "$WORK/ps3.log" 2>&1 &
ps3=$!
timeout 300 tail --pid=$ps3 -f /dev/null
wait $ps3 || fail "the resumed ps failed: $(tail -3 "$WORK/ps3.log")"
rejoined=$(grep -l "reconnected to" "$WORK"/dev2-*.log | wc -l)
((rejoined == 4)) || fail "$rejoined of 4 devices rejoined the restarted ps"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
wait 2>/dev/null

# 3. SIGKILL the separate planner process; restart it on the same port.
"$CLEAVE" --role=detector --listen=127.0.0.1:0 > "$WORK/det3.log" 2>&1 &
det3=$!
wait_for 20 has_port "$WORK/det3.log" || fail "detector did not start: $(cat "$WORK/det3.log")"
planner3=(--role=planner --detector="127.0.0.1:$(port_of "$WORK/det3.log")" --min-devices=4 "${cost[@]}")
"$CLEAVE" "${planner3[@]}" --listen=127.0.0.1:0 > "$WORK/pln3a.log" 2>&1 &
pln3=$!
wait_for 20 has_port "$WORK/pln3a.log" || fail "planner did not start: $(cat "$WORK/pln3a.log")"
pport=$(port_of "$WORK/pln3a.log")
"$CLEAVE" --role=ps --planner="127.0.0.1:$pport" --listen=127.0.0.1:0 \
  "${train[@]}" --report="$WORK/planner-restart.json" > "$WORK/ps4.log" 2>&1 &
ps4=$!
wait_for 30 has_port "$WORK/ps4.log" || fail "the ps did not start: $(tail -3 "$WORK/ps4.log")"
start_devices "$(port_of "$WORK/ps4.log")" "$WORK/dev3" --reconnect-seconds=60
wait_for 60 grep -q "training mlp" "$WORK/ps4.log" || fail "training did not start"
sleep 0.5
kill -9 $pln3
wait $pln3 2>/dev/null
"$CLEAVE" "${planner3[@]}" --listen="127.0.0.1:$pport" > "$WORK/pln3b.log" 2>&1 &
pln3=$!
timeout 300 tail --pid=$ps4 -f /dev/null
wait $ps4 || fail "the ps failed after its planner was killed: $(tail -3 "$WORK/ps4.log")"
grep -q "following the restarted planner" "$WORK/ps4.log" || fail "the ps never followed the restarted planner (killed too late?)"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
kill -TERM $pln3 $det3 2>/dev/null
wait 2>/dev/null
restarted=$(python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print('equal' if a['losses'] == b['losses'] else 'differs'); print(f\"planner restart: {b['tiles_reassigned']} tiles sent again, {b['recovery_seconds_total']:.2f} s to recover\", file=sys.stderr)" \
  "$WORK/inproc.json" "$WORK/planner-restart.json")
[[ $restarted == equal ]] && echo "ok: a planner process restarted mid-training leaves the trajectory unchanged" \
  || fail "after the planner restart the trajectory $restarted"

verdict=$(python3 - "$WORK/inproc.json" "$WORK/killed.json" "$WORK/resumed.json" <<'PY'
import json, sys
ref, killed, resumed = (json.load(open(p)) for p in sys.argv[1:4])
problems = []
if killed["losses"] != ref["losses"]:
    problems.append("the run with two devices killed has another trajectory")
if killed["failures_detected"] < 2:
    problems.append(f"{killed['failures_detected']} failures detected, expected 2")
start = resumed["resumed_from_step"]
if not 0 < start < 400:
    problems.append(f"resumed from step {start}")
if resumed["ps_restarts"] != 1:
    problems.append(f"ps_restarts {resumed['ps_restarts']}")
tail = ref["losses"][start:]
worst = max(abs(a - b) / abs(a) for a, b in zip(tail, resumed["losses"]))
if len(resumed["losses"]) != len(tail) or worst > 1e-4:
    problems.append(f"resumed trajectory differs ({worst:.2e})")
for key in ("test_accuracy", "test_loss"):
    if abs(resumed[key] - ref[key]) > 1e-4 * abs(ref[key]):
        problems.append(f"final {key} {resumed[key]} vs {ref[key]}")
print("; ".join(problems) if problems else "equal")
print(f"killed: {killed['failures_detected']} failures, {killed['tiles_reassigned']} tiles reassigned; "
      f"resumed from step {start}, worst difference {worst:.2e}", file=sys.stderr)
PY
)
[[ $verdict == equal ]] && echo "ok: device and ps kills leave the training unchanged" || fail "$verdict"
finish
