#!/usr/bin/env bash
# deploy/hosts.sh, the compose topology as network-namespace hosts: the
# detector, planner and ps on the servers bridge, four device hosts on the
# edge bridge (phone, edge, laptop, vm).
#  1. mlp for 100 steps across the hosts gives the in-process fleet's
#     trajectory (the same four profiles) bit for bit;
#  2. a device host's link cut mid-training: the console shows the device
#     dead (document and /metrics), the run goes on; the link back: the
#     device joins again; the run finishes, and every namespace the script
#     made is gone.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "FAIL: network namespaces need root"; exit 1; }
# no_namespaces_left LOG: the run hosts.sh logged in LOG left none of its namespaces.
no_namespaces_left() {
  local id; id=$(grep -o "namespaces cl[0-9]*-" "$1" | grep -o "cl[0-9]*")
  [[ -n $id ]] || { fail "no namespace id in $1"; return; }
  ip netns list | grep -q "^$id-" && fail "hosts.sh left namespaces behind: $(ip netns list | grep "^$id-")"
  return 0
}

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
"$CLEAVE" --role=all --devices=4 "${cost[@]}" --model=mlp --steps=100 --threads=1 --log-level=warn \
  --report="$WORK/inproc.json" || fail "in-process run failed"
CLEAVE=$CLEAVE bash "$root/deploy/hosts.sh" --devices=4 --logs="$WORK/logs" -- \
  --model=mlp --steps=100 --threads=1 "${cost[@]}" --report="$WORK/hosts.json" > "$WORK/hosts.log" 2>&1 \
  || fail "hosts.sh failed: $(tail -3 "$WORK/hosts.log")"
verdict=$(same_trajectory "$WORK/inproc.json" "$WORK/hosts.json")
[[ $verdict == equal ]] && echo "ok: seven hosts train to the in-process trajectory" || fail "hosts: $verdict"
no_namespaces_left "$WORK/hosts.log"

# 2. Cut the vm host's link (device 4 takes most tiles) while it trains.
CLEAVE=$CLEAVE bash "$root/deploy/hosts.sh" --devices=4 --logs="$WORK/cut" -- \
  --model=mlp --steps=3000 --threads=1 "${cost[@]}" --report="$WORK/cut.json" > "$WORK/cut.log" 2>&1 &
script=$!
id=
for _ in $(seq 1 500); do
  id=$(grep -o "ip netns exec cl[0-9]*-ps" "$WORK/cut.log" 2>/dev/null | grep -o "cl[0-9]*")
  [[ -n $id ]] && break; sleep 0.02
done
[[ -n $id ]] || { fail "hosts.sh did not start: $(tail -3 "$WORK/cut.log")"; finish; }
# console STATE: waits (30 s at most) until the console lists a device in
# STATE, both in its document and in /metrics.
console() {
  ip netns exec "$id-ps" python3 - "$1" <<'PY'
import json, re, sys, time, urllib.request
want = sys.argv[1]
for _ in range(150):
    try:
        doc = json.load(urllib.request.urlopen("http://10.78.1.4:8080/api/state", timeout=5))
        metrics = urllib.request.urlopen("http://10.78.1.4:8080/metrics", timeout=5).read().decode()
        states = [d.get("state") for d in doc["fleet"]["devices"]]
        in_metrics = re.search(r'^cleave_device_state\{device="\d+",state="%s"\} 1$' % want, metrics, re.M)
        if want in states and in_metrics and doc["training"] is not None:
            print("seen"); sys.exit()
    except OSError:
        pass
    time.sleep(0.2)
print(f"never seen")
PY
}
[[ $(console alive) == seen ]] || fail "the console never showed the fleet training"
ip -n "$id-dev4" link set eth0 down
[[ $(console dead) == seen ]] && echo "ok: the cut device shows dead in the console and in /metrics" \
  || fail "the console never showed the cut device dead"
sleep 1
ip -n "$id-dev4" link set eth0 up
for _ in $(seq 1 750); do
  grep -q "joining it again\|joined again" "$WORK/cut/ps.log" && break; sleep 0.02
done
grep -q "joining it again\|joined again" "$WORK/cut/ps.log" \
  && echo "ok: with its link back, the device joins again" \
  || fail "the device did not join again: $(grep -i "device" "$WORK/cut/ps.log" | tail -3)"
timeout 300 tail --pid=$script -f /dev/null
wait $script || fail "the run with a cut link failed: $(tail -3 "$WORK/cut.log")"
python3 - "$WORK/cut.json" <<'PY' && echo "ok: the run with a cut link finished its 3000 steps" || fail "cut run: see above"
import json, sys
d = json.load(open(sys.argv[1]))
ok = len(d["losses"]) == 3000 and d["failures_detected"] >= 1
if not ok: print(f"{len(d['losses'])} steps, {d['failures_detected']} failures detected")
sys.exit(0 if ok else 1)
PY
no_namespaces_left "$WORK/cut.log"
finish
