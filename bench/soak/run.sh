#!/usr/bin/env bash
# An hour of churn on one ps: DEVICES real device processes (mlp, one
# thread each, the phone profile so the planner gives every device tiles and
# every kill costs work in flight) train while, every minute, one device is
# killed (SIGKILL), another hangs for HANG seconds (SIGSTOP, then SIGCONT)
# and new processes join until DEVICES run again. Every SAMPLE seconds the
# ps's resident memory (VmRSS), open file descriptors and threads go into
# soak.csv. At the end: each one's growth after warm-up (the median of the
# last 10 minutes over the median of minutes 5 to 10; for runs under 20
# minutes, the last quarter over the second), the trajectory against an
# undisturbed in-process run of the same fleet and steps (--unpaced-devices:
# the same plans without waiting out the emulated phones; run once the ps is
# done: niced beside a busy soak it starved for an hour), and soak.svg.
#   bench/soak/run.sh [path/to/build] [MINUTES]   (not in CI; default 60)
# The devices heartbeat every HEARTBEAT seconds (default 0.5, not the ps's
# 0.1): on a 2-core host 65 processes share, 0.1 s turns scheduling delays
# into a storm of false suspicions, and every false death makes the device
# join again under a new id; the soak is about the ps's resources under real
# kills, hangs and joins. The count of suspicions is printed all the same.
# Env: DEVICES (64), HANG (20 s), SAMPLE (5 s), HEARTBEAT (0.5 s), RATE
# (steps/s the run is sized by: STEPS = MINUTES * 60 * RATE; default 6),
# STEPS, OUT (a directory to keep everything in; default a temporary one,
# removed), PLOT (where the SVG goes; default OUT/soak.svg).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../../build}")
minutes=${2:-60}
devices=${DEVICES:-64}
hang=${HANG:-20}
sample=${SAMPLE:-5}
steps=${STEPS:-$(python3 -c "print(int($minutes * 60 * ${RATE:-6}))")}
CLEAVE=$build/cmd/cleave
if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT"; work=$(realpath "$OUT"); keep=1; else work=$(mktemp -d); keep=0; fi
declare -A dev_pid=()  # device number -> pid of every device process started
others=()              # the ps
cleanup() {
  for p in "${dev_pid[@]}" "${others[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  ((keep)) || rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

train=(--model=mlp --steps="$steps" --threads=1 --progress-seconds=10 --ps-egress=1e12 --ps-flops=1e9
       --heartbeat="${HEARTBEAT:-0.5}")
echo "soak: $devices devices, $steps steps (~$minutes min), a kill, a ${hang} s hang and joins every minute; in $work"

"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices="$devices" "${train[@]}" --report=soak.json \
  > ps.log 2>&1 &
ps=$!; others+=("$ps")
port=""
for _ in $(seq 1 200); do
  port=$(grep -o "listening on port [0-9]*" ps.log | grep -o "[0-9]*$" || true)
  [[ -n $port ]] && break; sleep 0.05
done
[[ -n $port ]] || { echo "the ps did not start: $(tail -3 ps.log)"; exit 1; }

next=0
start_device() {
  "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=phone --threads=1 --reconnect-seconds=30 \
    > "dev$next.log" 2>&1 &
  dev_pid[$next]=$!; next=$((next + 1))
}
running() {  # device numbers whose process is alive (a hung one too)
  # Succeeds whoever is dead: under set -e and pipefail, a dead device
  # checked last would otherwise end the soak (and, by the exit trap, its ps).
  local n; for n in "${!dev_pid[@]}"; do kill -0 "${dev_pid[$n]}" 2>/dev/null && echo "$n"; done; return 0
}
for _ in $(seq 1 "$devices"); do start_device; done

echo "seconds,rss_kib,fds,threads,device_processes,step" > soak.csv
declare -A hung_until=()
kills=0 hangs=0 joins=0
t0=$(date +%s.%N)
elapsed() { python3 -c "import sys, time; print(int(time.time() - float(sys.argv[1])))" "$t0"; }
minute=0
while kill -0 "$ps" 2>/dev/null; do
  now=$(elapsed)
  for n in "${!hung_until[@]}"; do
    if ((now >= hung_until[$n])); then kill -CONT "${dev_pid[$n]}" 2>/dev/null || true; unset "hung_until[$n]"; fi
  done
  if ((now / 60 > minute)); then
    minute=$((now / 60))
    mapfile -t alive < <(running | grep -vxF -f <(printf '%s\n' "${!hung_until[@]}" -1) | shuf)
    if ((${#alive[@]} >= 2)); then
      kill -9 "${dev_pid[${alive[0]}]}"; wait "${dev_pid[${alive[0]}]}" 2>/dev/null || true; kills=$((kills + 1))
      kill -STOP "${dev_pid[${alive[1]}]}"; hung_until[${alive[1]}]=$((now + hang)); hangs=$((hangs + 1))
      echo "$now s: killed device process ${alive[0]}, hung ${alive[1]}" >> events.log
    fi
    sleep 0.2
    kill -0 "$ps" 2>/dev/null || break  # the run ended meanwhile: no one to join
    have=$(running | wc -l)
    for _ in $(seq 1 $((devices - have))); do start_device; joins=$((joins + 1)); done
    echo "$now s: $((devices - have)) joined" >> events.log
  fi
  st=/proc/$ps/status
  rss=$(awk '/^VmRSS/ {print $2}' "$st" 2>/dev/null || true)
  threads=$(awk '/^Threads/ {print $2}' "$st" 2>/dev/null || true)
  fds=$(ls "/proc/$ps/fd" 2>/dev/null | wc -l)
  step=$(grep -o "step [0-9]*/" ps.log | tail -1 | grep -o "[0-9]*" || echo 0)
  [[ -n $rss ]] && echo "$now,$rss,$fds,$threads,$(running | wc -l),$step" >> soak.csv
  sleep "$sample"
done
ps_rc=0; wait "$ps" || ps_rc=$?
echo "the ps exited $ps_rc after $(elapsed) s: $kills kills, $hangs hangs, $joins joins;" \
  "the detector said 'is suspect' $(grep -c "planner: device [0-9]* is suspect" ps.log || true) times," \
  "'is dead' $(grep -c "planner: device [0-9]* is dead" ps.log || true) times"
echo "the undisturbed run"
"$CLEAVE" --role=all --devices="$devices" --profile=phone --unpaced-devices "${train[@]}" \
  --log-level=warn --report=ref.json > ref.log 2>&1 || echo "the undisturbed run failed: $(tail -2 ref.log)"
same=$(source /dev/stdin <<<"$(sed -n '/^same_trajectory()/,/^}/p' "$here/../../tests/cli/lib.sh")"; same_trajectory ref.json soak.json)
echo "trajectory against the undisturbed run: $same"
python3 "$here/soak.py" soak.csv soak.json "${PLOT:-$work/soak.svg}"
