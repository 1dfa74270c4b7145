#!/usr/bin/env bash
# One ps under a swarm: N light devices in one process (bench/swarm/swarm.cpp)
# join a ps that waits for more devices than will come, and heartbeat for
# SECONDS. Prints the time to join, false suspicions (the ps's planner logs
# every suspect event), the ps's CPU over the steady window (after a 5 s
# settle), its resident memory and per connection over an idle ps, and the
# heartbeats' wait at the ps (p50, p99) from its /metrics.
#   bench/swarm/run.sh [path/to/build] [DEVICES] [SECONDS] [ps flags...]   (not in CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../../build}")
devices=${2:-1000}
seconds=${3:-60}
shift $(( $# < 3 ? $# : 3 ))
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

: > ps.log
"$build/cmd/cleave" --role=ps --listen=127.0.0.1:0 --admin=127.0.0.1:0 --min-devices=1000000 \
  --max-devices="$devices" --log-level=info "$@" > ps.log 2>&1 &
ps=$!; pids+=("$ps")
port="" admin=""
for _ in $(seq 1 200); do
  port=$(grep -o "listening on port [0-9]*" ps.log | grep -o "[0-9]*$" || true)
  admin=$(grep -o "http://127.0.0.1:[0-9]*" ps.log | grep -o "[0-9]*$" || true)
  [[ -n $port && -n $admin ]] && break; sleep 0.05
done
[[ -n $port ]] || { cat ps.log; exit 1; }
sleep 1
idle_rss=$(rss_kib "$ps")
"$build/bench/swarm/swarm" --connect="127.0.0.1:$port" --devices="$devices" --seconds=$((seconds + 5)) \
  --join-timeout=30 > swarm.out 2> swarm.err &
swarm=$!; pids+=("$swarm")
sleep 5
t0=$(ticks "$ps"); s0=$(ticks "$swarm"); metrics0=$(curl -s "http://127.0.0.1:$admin/metrics" | grep -c . || true)
sleep "$seconds"
t1=$(ticks "$ps"); s1=$(ticks "$swarm"); rss=$(rss_kib "$ps")
curl -s "http://127.0.0.1:$admin/api/state" > state.json
curl -s "http://127.0.0.1:$admin/metrics" > metrics.txt
swarm_rc=0; wait "$swarm" || swarm_rc=$?
kill "$ps"; wait "$ps" 2>/dev/null || true
interval=$(grep -o "heartbeats every [0-9.]* s" ps.log | grep -o "[0-9.]*" || echo "(--heartbeat)")
python3 - "$devices" "$seconds" "$hz" "$t0" "$t1" "$s0" "$s1" "$idle_rss" "$rss" "$swarm_rc" "$interval" <<'PY'
import json, sys
devices, seconds, hz, t0, t1, s0, s1, idle, rss, rc = (float(a) for a in sys.argv[1:11])
interval = sys.argv[11]
state = json.load(open("state.json"))
h = state.get("heartbeat_delay", {})
swarm = open("swarm.out").read().splitlines()
suspects = sum("is suspect" in l for l in open("ps.log"))
refused = [l for l in open("ps.log") if "refused" in l and "bulk channel" in l]
ps_cores = (t1 - t0) / hz / seconds
print(swarm[0] if swarm else "swarm printed nothing")
print(f"heartbeat interval {interval} s; {seconds:.0f} s steady window")
print(f"false suspicions: {suspects}; swarm exit {int(rc)} ({swarm[-1] if swarm else ''})")
print(f"ps CPU: {ps_cores:.3f} cores ({ps_cores / devices * 1e6:.1f} us/s per device); swarm CPU {(s1 - s0) / hz / seconds:.3f} cores")
print(f"ps RSS: {rss / 1024:.1f} MiB, idle {idle / 1024:.1f} MiB: {(rss - idle) / devices:.1f} KiB per connection")
if h:
    p = lambda v: "past the last bucket" if v is None else f"<= {v * 1e3:g} ms"
    print(f"heartbeat wait at the ps: {h['count']} heartbeats, mean {h['sum_seconds'] / max(h['count'], 1) * 1e6:.0f} us, p50 {p(h['p50_seconds'])}, p99 {p(h['p99_seconds'])}")
for l in refused[:3]: print("ps:", l.strip())
PY
