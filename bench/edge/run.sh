#!/usr/bin/env bash
# The device edge's cost: MODEL (gpt small; or mlp) on DEVICES (3) `fast`
# device processes through the ps's edge, plain and over TLS, against the
# same fleet in one process, interleaved over ROUNDS rounds. Prints each
# run's median step time, the ps's peak resident memory and the largest
# device process's, and the ratios to the in-process run of the same round.
# With PERF=FILE, the ps of round 1's plain run is sampled by `perf record`
# into FILE, and its ten hottest symbols are printed at the end.
# Usage: [DEVICES=3] [MODEL=gpt] [PERF=FILE] bench/edge/run.sh [path/to/cleave] [ROUNDS]   (not in CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=$(realpath "${1:-$here/../../build/cmd/cleave}")
rounds=${2:-3}
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
bash "$here/../../deploy/ca.sh" init ca > /dev/null
bash "$here/../../deploy/ca.sh" issue ca ps server > /dev/null
DEVICES=${DEVICES:-3}
MODEL=${MODEL:-gpt}
devices=()
for ((i = 1; i <= DEVICES; i++)); do devices+=(d$i); done
for d in "${devices[@]}"; do bash "$here/../../deploy/ca.sh" issue ca $d device > /dev/null; done
train=(--model=$MODEL --steps=30 --eval-tokens=2048 --ps-flops=2e9 --progress-seconds=60 --log-level=warn --threads=1)

median_step() { python3 -c "import json,statistics,sys; r=json.load(open(sys.argv[1])); print(f\"{statistics.median(r['step_seconds'][1:]):.4f}\")" "$1"; }
peak_mib() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{printf "%d", $1/1024}'; }

run_fleet() {  # run_fleet NAME [tls]: ps and the device processes
  local name=$1 tls=${2:-}
  local ps_tls=() dev_tls=()
  [[ $tls == tls ]] && ps_tls=(--tls-cert=ca/ps.pem --tls-key=ca/ps.key --tls-ca=ca/ca.pem)
  local sample=()
  [[ -n ${PERF:-} && $name == plain && $r == 1 ]] && sample=(perf record -q -F 499 -o "$PERF" --)
  /usr/bin/time -v "${sample[@]}" "$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices="$DEVICES" "${ps_tls[@]}" \
    "${train[@]}" --log-level=info --report="$name.json" > "$name.log" 2> "$name.time" &
  local ps=$! port=""
  for _ in $(seq 1 500); do
    port=$(grep -o "listening on port [0-9]*" "$name.log" 2>/dev/null | grep -o "[0-9]*$" || true)
    [[ -n $port ]] && break; sleep 0.02
  done
  for d in "${devices[@]}"; do
    [[ $tls == tls ]] && dev_tls=(--tls-cert=ca/$d.pem --tls-key=ca/$d.key --tls-ca=ca/ca.pem)
    /usr/bin/time -v "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 "${dev_tls[@]}" \
      --log-level=warn > /dev/null 2> "$name-$d.time" &
  done
  wait $ps
  wait
}

most_device_mib() { local m=0 v; for f in "$1"-d*.time; do v=$(peak_mib "$f"); ((v > m)) && m=$v; done; echo "$m"; }
echo "# $MODEL on $DEVICES device processes, $rounds rounds"
printf '%-6s %12s %12s %12s %10s %10s  %s  %s\n' round in-process plain tls plain/ref tls/ref "ps peak MiB (ref plain tls)" "largest device MiB (plain tls)"
for r in $(seq 1 "$rounds"); do
  /usr/bin/time -v "$CLEAVE" --role=all --devices="$DEVICES" --profile=fast "${train[@]}" --report=ref.json > /dev/null 2> ref.time
  run_fleet plain
  run_fleet tls tls
  ref=$(median_step ref.json) plain=$(median_step plain.json) tls=$(median_step tls.json)
  printf '%-6s %12s %12s %12s %10.3f %10.3f  %s %s %s  %s %s\n' "$r" "$ref" "$plain" "$tls" \
    "$(echo "$plain / $ref" | bc -l)" "$(echo "$tls / $ref" | bc -l)" \
    "$(peak_mib ref.time)" "$(peak_mib plain.time)" "$(peak_mib tls.time)" \
    "$(most_device_mib plain)" "$(most_device_mib tls)"
done
if [[ -n ${PERF:-} ]]; then
  echo "# the ps's ten hottest symbols (round 1, plain; $PERF)"
  perf report -i "$PERF" --stdio --no-children --sort symbol 2>/dev/null | grep -v '^#' | grep -v '^$' | head -10 \
    | sed 's/  *- *- *$//'
fi
