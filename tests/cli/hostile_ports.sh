#!/usr/bin/env bash
# Every port a device can reach, under attack, with real processes on
# loopback. A ps's device edge is its only such port (the planner and
# detector it hosts speak to no one else). Before its devices come, and again
# while they train, edge_attacker.py sends garbage, forged BASP and framing
# headers claiming up to 4 GiB (one at a time and eight at once), a flood of
# results for tasks never sent, a trickle of one byte a second and 200 idle
# connections. The ps stays up under 1 GiB resident, drops each attacker
# with a log line, and trains to exactly the trajectory of the undisturbed
# in-process run. Its admin console's port takes the same: heads past the
# cap, a slow head, bodies past the cap, controls without the token and 200
# connections (edge_attacker.py's `console` phase).
source "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
train=(--model=mlp --steps=1500 --threads=1 --progress-seconds=30)
"$CLEAVE" --role=all --devices=4 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --report="$WORK/inproc.json" || fail "in-process run failed"

"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=4 "${cost[@]}" "${train[@]}" \
  --admin=127.0.0.1:0 --admin-token=not-sent-by-the-attacker \
  --report="$WORK/attacked.json" > "$WORK/ps.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/ps.log")
[[ -n $port ]] || fail "the ps did not start: $(cat "$WORK/ps.log")"
python3 "$here/edge_attacker.py" "$port" "$ps" before || fail "attacks before training"
admin_port=$(console_port "$WORK/ps.log")
[[ -n $admin_port ]] || fail "the ps logged no console port"
python3 "$here/edge_attacker.py" "$admin_port" "$ps" console || fail "attacks on the console"
for i in 1 2 3 4; do
  "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 --log-level=warn \
    --reconnect-seconds=0 &
done
for _ in $(seq 1 500); do grep -q "training mlp" "$WORK/ps.log" && break; sleep 0.02; done
python3 "$here/edge_attacker.py" "$port" "$ps" during || fail "attacks during training"
kill -0 $ps 2>/dev/null || fail "the ps did not outlast the attacks (it finished training first?)"
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "the ps failed: $(tail -3 "$WORK/ps.log")"
wait
for why in "no join within the handshake timeout" "refused frames" "malformed frame header" \
           "over kind" "must be of kind"; do
  grep -q "$why" "$WORK/ps.log" || fail "the ps never logged a drop for '$why'"
done
counts=$(grep -o "edge: .* certificates issued" "$WORK/ps.log")
echo "$counts"
[[ $counts =~ ([0-9]+)\ handshake ]] && ((BASH_REMATCH[1] >= 201)) \
  || fail "the ps did not count 200 idle connections and a trickle as handshake timeouts"
[[ $counts =~ ([0-9]+)\ for\ misbehaving ]] && ((BASH_REMATCH[1] >= 1)) \
  || fail "the ps did not count the device it dropped for misbehaving"
verdict=$(same_trajectory "$WORK/inproc.json" "$WORK/attacked.json")
[[ $verdict == equal ]] && echo "ok: attacked, the ps trains to the undisturbed trajectory" || fail "$verdict"
finish
