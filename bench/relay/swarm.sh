#!/usr/bin/env bash
# A swarm behind relays: DEVICES light devices (bench/swarm: the project's
# device actor behind its edge link, one connection each) join R relay
# processes, which hold one connection each to one ps sized --max-devices=
# DEVICES. For SECONDS they heartbeat at the interval the welcome gives.
# Prints how long the joins took, the ps's sockets on its edge port, the
# devices the ps's console lists alive and suspected halfway, each relay's
# device count, and the peak RSS of the ps and of each relay at the end.
#
#   bash bench/relay/swarm.sh build/cmd/cleave build/bench/swarm/swarm
#   DEVICES=2000 RELAYS=4 SECONDS_=60 bash bench/relay/swarm.sh ...
set -u
CLEAVE=$(realpath "${1:?usage: $0 path/to/cleave path/to/swarm}")
SWARM=$(realpath "${2:?usage: $0 path/to/cleave path/to/swarm}")
DEVICES=${DEVICES:-1000} RELAYS=${RELAYS:-2} RUN_SECONDS=${SECONDS_:-30}
WORK=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
port_of() { for _ in $(seq 1 500); do p=$(grep -o "listening on port [0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$" | head -1);
  [[ -n $p ]] && { echo "$p"; return; }; sleep 0.02; done; }
peak_mib() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null; }

"$CLEAVE" --role=ps --listen=127.0.0.1:0 --admin=127.0.0.1:0 --min-devices=1000000 --max-devices=$DEVICES \
  > "$WORK/ps.log" 2>&1 &
ps=$!
port=$(port_of "$WORK/ps.log")
admin=$(grep -o "console: http://127.0.0.1:[0-9]*" "$WORK/ps.log" | grep -o "[0-9]*$" | head -1)
[[ -n $port && -n $admin ]] || { echo "the ps did not start: $(tail -3 "$WORK/ps.log")"; exit 1; }
relays=() swarms=()
for ((r = 1; r <= RELAYS; r++)); do
  share=$(((DEVICES * r / RELAYS) - (DEVICES * (r - 1) / RELAYS)))
  "$CLEAVE" --role=relay --connect=127.0.0.1:$port --listen=127.0.0.1:0 --relay-name=r$r --relay-memory=1e9 \
    --max-devices=$((share + 16)) --progress-seconds=600 > "$WORK/relay$r.log" 2>&1 &
  relays+=($!)
  rport=$(port_of "$WORK/relay$r.log")
  timeout $((RUN_SECONDS + 60)) "$SWARM" --connect=127.0.0.1:$rport --devices=$share --seconds=$RUN_SECONDS \
    --join-timeout=30 > "$WORK/swarm$r.out" 2> "$WORK/swarm$r.err" &
  swarms+=($!)
done
sleep $((RUN_SECONDS / 2))
sockets=$(ss -tnH state established "( sport = :$port )" | wc -l)
curl -s -m 10 "127.0.0.1:$admin/api/state" > "$WORK/state.json"
wait "${swarms[@]}" 2>/dev/null
ps_peak=$(peak_mib $ps)
relay_peaks=()
for pid in "${relays[@]}"; do relay_peaks+=("$(peak_mib "$pid") MiB"); done
for ((r = 1; r <= RELAYS; r++)); do echo "relay r$r: $(head -1 "$WORK/swarm$r.out")"; done
python3 - "$WORK/state.json" "$sockets" "$ps_peak" "${relay_peaks[*]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["fleet"]
print(f"halfway: the ps holds {sys.argv[2]} connections on its edge; {f['alive']} devices alive, "
      f"{f.get('suspected', 0)} suspected; per relay: "
      + ", ".join(f"{r['name']} {len(r['devices'])}" for r in f.get("relays", [])))
print(f"peak RSS: ps {sys.argv[3]} MiB; relays {sys.argv[4]}")
PY
lost=$(grep -c "is dead" "$WORK/ps.log")
suspect=$(grep -c "is suspect" "$WORK/ps.log")
echo "over the run: $suspect suspicions, $lost deaths in the ps's log (the swarms leave at the end: $DEVICES deaths then)"
