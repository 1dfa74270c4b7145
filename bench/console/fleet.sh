#!/usr/bin/env bash
# The console at fleet size: for each DEVICES, a ps (--admin) holds that many
# light devices of bench/swarm, heartbeating, no training; then GET /metrics,
# GET /api/state (whole) and GET /api/state?per_page=100 are each timed 5
# times (curl's total time; median and worst), and the page is loaded in
# headless Chromium (page_load.js: navigation to a filled table, main-thread
# long tasks over 5 s of polls, a re-sort). Goal (issue 35): a scrape under
# 1 s, the page usable with 1,000 rows.
#   bench/console/fleet.sh [path/to/build] [DEVICES...]   (default 1000 5000; not in CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../../build}")
shift $(($# > 0 ? 1 : 0))
if (($#)); then counts=("$@"); else counts=(1000 5000); fi
export NODE_PATH=$build/node_modules${NODE_PATH:+:$NODE_PATH}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

times() {  # times URL: five fetches' seconds, median and worst, and the size
  local t=() size=0
  for _ in 1 2 3 4 5; do
    read -r s size < <(curl -s -o /dev/null -w "%{time_total} %{size_download}\n" "$1")
    t+=("$s")
  done
  python3 -c "import statistics, sys; t = sorted(map(float, sys.argv[2:])); print(f'median {statistics.median(t):.3f} s, worst {t[-1]:.3f} s, {int(sys.argv[1]) / 1024:.0f} KiB')" "$size" "${t[@]}"
}

for n in "${counts[@]}"; do
  : > "$work/ps.log"
  "$build/cmd/cleave" --role=ps --listen=127.0.0.1:0 --admin=127.0.0.1:0 --min-devices=1000000 \
    --max-devices="$n" --log-level=info > "$work/ps.log" 2>&1 &
  ps=$!; pids+=("$ps")
  port="" admin=""
  for _ in $(seq 1 200); do
    port=$(grep -o "listening on port [0-9]*" "$work/ps.log" | grep -o "[0-9]*$" || true)
    admin=$(grep -o "http://127.0.0.1:[0-9]*" "$work/ps.log" | grep -o "[0-9]*$" || true)
    [[ -n $port && -n $admin ]] && break; sleep 0.05
  done
  [[ -n $port ]] || { cat "$work/ps.log"; exit 1; }
  "$build/bench/swarm/swarm" --connect="127.0.0.1:$port" --devices="$n" --seconds=600 --join-timeout=60 \
    > "$work/swarm.out" 2> "$work/swarm.err" &
  swarm=$!; pids+=("$swarm")
  for _ in $(seq 1 1200); do grep -q "^joined" "$work/swarm.out" && break; sleep 0.05; done
  echo "== $n devices: $(head -1 "$work/swarm.out")"
  sleep 2
  base="http://127.0.0.1:$admin"
  echo "GET /metrics:                  $(times "$base/metrics")"
  echo "GET /api/state (whole):        $(times "$base/api/state")"
  echo "GET /api/state?per_page=100:   $(times "$base/api/state?per_page=100")"
  if command -v chromium > /dev/null && node -e 'require.resolve("playwright-core")' 2>/dev/null; then
    echo "page: $(node "$here/page_load.js" "$base/" "$n")"
  else
    echo "page: not measured (chromium or playwright-core missing: bash deploy/setup.sh test)"
  fi
  kill "$swarm" "$ps" 2>/dev/null || true
  wait "$swarm" "$ps" 2>/dev/null || true
done
