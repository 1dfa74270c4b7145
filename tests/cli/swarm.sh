#!/usr/bin/env bash
# A swarm at fleet scale on one ps: 1,000 light devices in one process
# (bench/swarm: the project's device actor behind its edge link, one
# connection each) join a ps's device edge sized by --max-devices. All are
# admitted within 10 s; over a minute of heartbeats at the interval the welcome
# gives (0.39 s: --heartbeat-rate's 2,560/s over 1,000 devices) none is
# suspected, and the ps's /metrics counts the heartbeats' wait. Twenty more
# devices past the cap are refused at the socket, summarised in one log line
# rather than one per connection. The console holds up at that size: a scrape
# of /metrics and a page of /api/state each take under 1 s, and the page in
# headless Chromium shows 100 rows of the 1,000 (console_paging.js). Then the
# swarm trains: mlp over 1,000 swarm devices takes the trajectory of the same
# fleet in one process, bit for bit.
source "$(dirname "$0")/lib.sh"
SWARM=${2:?usage: $0 path/to/cleave path/to/swarm}

"$CLEAVE" --role=ps --listen=127.0.0.1:0 --admin=127.0.0.1:0 --min-devices=1000000 --max-devices=1000 \
  --log-level=info > "$WORK/ps.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/ps.log")
admin=$(console_port "$WORK/ps.log")
[[ -n $port && -n $admin ]] || { fail "the ps did not start: $(cat "$WORK/ps.log")"; finish; }
grep -q "heartbeats every 0.391 s" "$WORK/ps.log" || fail "no stretched heartbeat interval: $(head -3 "$WORK/ps.log")"

timeout 120 "$SWARM" --connect="127.0.0.1:$port" --devices=1000 --seconds=60 --join-timeout=10 \
  > "$WORK/swarm.out" 2> "$WORK/swarm.err" &
swarm=$!
for _ in $(seq 1 300); do grep -q "^joined" "$WORK/swarm.out" && break; sleep 0.05; done
joined=$(head -1 "$WORK/swarm.out")
[[ $joined =~ ^joined\ 1000\ of\ 1000\ in\ ([0-9.]+)\ s$ ]] || fail "not all admitted: '$joined' $(tail -3 "$WORK/swarm.err")"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)" "${BASH_REMATCH[1]:-99}" \
  || fail "joining took ${BASH_REMATCH[1]:-?} s"

# Past the cap: refused at the socket, and logged as a summary.
sleep 2
timeout 20 "$SWARM" --connect="127.0.0.1:$port" --devices=20 --seconds=0 --join-timeout=5 \
  > "$WORK/extra.out" 2>&1 && fail "20 devices past --max-devices were admitted"
grep -q "^joined 0 of 20" "$WORK/extra.out" || fail "devices past the cap: $(head -1 "$WORK/extra.out")"

# The console at 1,000 devices, while they heartbeat: scrapes under 1 s.
for path in /metrics "/api/state?page=0&per_page=100"; do
  took=$(curl -s -o "$WORK/scrape.out" -w "%{time_total}" "http://127.0.0.1:$admin$path")
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1 else 1)" "$took" \
    && echo "ok: GET $path at 1,000 devices in $took s" || fail "GET $path took $took s (goal: under 1 s)"
done
rows=$(json "$WORK/scrape.out" 'len(d["fleet"]["devices"]), d["fleet"]["page"]["total"]')
[[ $rows == "100 1000" ]] || fail "a page of /api/state holds (rows, total) = ($rows), expected (100 1000)"

wait $swarm || fail "the swarm lost devices: $(tail -2 "$WORK/swarm.out") $(tail -3 "$WORK/swarm.err")"
curl -s "http://127.0.0.1:$admin/metrics" > "$WORK/metrics.txt"
count=$(sed -n 's/^cleave_heartbeat_delay_seconds_count //p' "$WORK/metrics.txt")
(( ${count:-0} > 100000 )) || fail "the ps counted ${count:-no} heartbeats (1,000 devices for 60 s: about 153,000)"
suspects=$(grep -c "is suspect" "$WORK/ps.log")
# The page, once the heartbeats are judged (a browser on a 2-core host would
# delay them): the detector still lists the 1,000, so the table has them all.
# It runs beside the in-process training below: a browser's start is most of
# its time.
build=$(cd "$(dirname "$CLEAVE")/.." && pwd)
paging=""
if NODE_PATH=$build/node_modules node -e 'require.resolve("playwright-core")' 2>/dev/null && command -v chromium > /dev/null; then
  NODE_PATH=$build/node_modules timeout 90 node "$CLI_DIR/console_paging.js" "http://127.0.0.1:$admin/" 1000 100 \
    > "$WORK/paging.txt" 2>&1 &
  paging=$!
else fail "chromium or playwright-core is missing: bash deploy/setup.sh test installs them"; fi
console_ps=$ps

# Training over the swarm: the same losses as the same fleet in one process.
train=(--model=mlp --steps=8 --threads=1 --progress-seconds=30 --ps-egress=1e12 --ps-flops=1e9)
"$CLEAVE" --role=all --devices=1000 --profile=phone "${train[@]}" --log-level=warn \
  --report="$WORK/inproc.json" || fail "the in-process run failed"
if [[ -n $paging ]]; then
  wait $paging && cat "$WORK/paging.txt" || fail "the page at 1,000 devices: $(cat "$WORK/paging.txt")"
fi
kill $console_ps; wait $console_ps 2>/dev/null
(( suspects == 0 )) || fail "$suspects false suspicions: $(grep -m3 "is suspect" "$WORK/ps.log")"
per_connection=$(grep -c "refusing connection" "$WORK/ps.log")
summaries=$(grep -c "refused [0-9]* connections\? at the cap of 1000" "$WORK/ps.log")
(( per_connection == 0 && summaries >= 1 && summaries <= 3 )) \
  || fail "refusals logged $per_connection times one by one and $summaries as summaries"

: > "$WORK/train.log"
"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=1000 --max-devices=1000 "${train[@]}" \
  --report="$WORK/swarm.json" > "$WORK/train.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/train.log")
[[ -n $port ]] || fail "the training ps did not start: $(cat "$WORK/train.log")"
timeout 60 "$SWARM" --connect="127.0.0.1:$port" --devices=1000 --seconds=0 > "$WORK/train_swarm.out" 2>&1 \
  || fail "the swarm did not finish the run: $(tail -2 "$WORK/train_swarm.out")"
wait $ps || fail "the training ps failed: $(tail -3 "$WORK/train.log")"
same=$(same_trajectory "$WORK/inproc.json" "$WORK/swarm.json")
[[ $same == equal ]] || fail "training over the swarm: $same"
finish
