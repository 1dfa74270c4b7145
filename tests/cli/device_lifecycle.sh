#!/usr/bin/env bash
# How a device process ends: killed ps -> exit 1 after --reconnect-seconds,
# with one line; a --stay device outlives a run that ended cleanly and
# waits for the next one.
source "$(dirname "$0")/lib.sh"

train=(--model=mlp --hidden=64 --batch=32 --threads=1 --min-devices=1)

# 1. The ps is killed mid-run: the device retries for 2 s, then exits 1.
"$CLEAVE" --role=ps --listen=127.0.0.1:0 "${train[@]}" --steps=100000 > "$WORK/ps1.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/ps1.log")
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --threads=1 --reconnect-seconds=2 \
  > "$WORK/dev1.log" 2> "$WORK/dev1.err" &
dev=$!
for _ in $(seq 1 250); do grep -q "step [0-9]" "$WORK/ps1.log" && break; sleep 0.02; done
sleep 0.5
kill -9 $ps
killed_at=$(date +%s.%N)
wait $ps 2>/dev/null
timeout 20 tail --pid=$dev -f /dev/null
rc=0; wait $dev || rc=$?
took=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$killed_at")
((rc == 1)) && echo "ok: the device exited 1 ${took} s after its ps was killed" \
  || fail "device exit code $rc after its ps was killed"
python3 -c "import sys; sys.exit(0 if 2 <= float(sys.argv[1]) <= 10 else 1)" "$took" \
  || fail "the device took ${took} s to give up (retry time 2 s)"
grep -q "went away without ending the run and did not come back within 2 s" "$WORK/dev1.err" \
  && echo "ok: $(cat "$WORK/dev1.err")" || fail "no clear line on stderr: $(cat "$WORK/dev1.err")"

# 2. A run that ends: a --stay device keeps waiting, a plain one exits 0.
"$CLEAVE" --role=ps --listen=127.0.0.1:0 "${train[@]}" --min-devices=2 --steps=20 > "$WORK/ps2.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/ps2.log")
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --threads=1 --stay > "$WORK/stay.log" 2>&1 &
stay=$!
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --threads=1 > "$WORK/plain.log" 2>&1 &
plain=$!
wait $ps || fail "the ps failed: $(tail -2 "$WORK/ps2.log")"
timeout 10 tail --pid=$plain -f /dev/null
rc=0; wait $plain || rc=$?
((rc == 0)) && echo "ok: the plain device exited 0 when the run ended" || fail "plain device exit code $rc"
sleep 2
kill -0 $stay 2>/dev/null && echo "ok: the --stay device waits for the next run" \
  || fail "the --stay device exited: $(tail -2 "$WORK/stay.log")"
kill -TERM $stay
timeout 10 tail --pid=$stay -f /dev/null
kill -0 $stay 2>/dev/null && fail "the --stay device ignored SIGTERM"
finish
