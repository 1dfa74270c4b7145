#!/usr/bin/env bash
# A bad network (issue 35, item 2): training over deploy/hosts.sh's
# namespace hosts (detector, planner, ps, four device hosts) while the
# devices' links lose packets, jitter, go down, split off or slow to a
# crawl, each fault made as tests/cli/netfaults.sh says (this kernel has
# no netem). Every case trains through its fault and is held to the
# in-process fleet's trajectory (--role=all, same flags), bit for bit or
# within 1e-6 relative, with no device quarantined (all four are honest).
#
# Usage: bench/netfaults/run.sh [cleave] [case...]   (root; not in CI)
#   cases (default all): clean loss1 loss5 loss20 jitter flap partition collapse
#   MODEL=gpt trains gpt small instead of mlp (fewer steps, below).
#   OUT=DIR keeps the reports and every host's log there.
#   STEPS=N trains N steps in every case (longer runs, for rarer events).
# Prints one row per case: its parameters, steps, the training's seconds,
# the trajectory against the reference, the detector's verdicts (suspected,
# dead, joined again as a new member), false deaths per device-hour (the
# cases whose links never go fully dark: loss and jitter), quarantined
# devices, and PASS or FAIL; the table again at the end in Markdown.
root=$(cd "$(dirname "$0")/../.." && pwd)
cleave=${1:-$root/build/cmd/cleave}
(($#)) && shift
set -- "$cleave" "$@"
source "$root/tests/cli/lib.sh"
source "$root/tests/cli/netfaults.sh"
shift
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "bench/netfaults: network namespaces, iptables and tc need root" >&2; exit 2; }
for tool in ip tc iptables; do
  command -v $tool > /dev/null || { echo "bench/netfaults: $tool is missing" >&2; exit 2; }
done
cases=("$@")
((${#cases[@]})) || cases=(clean loss1 loss5 loss20 jitter flap partition collapse)
if [[ -n ${OUT:-} ]]; then rm -rf "$WORK"; mkdir -p "$OUT"; WORK=$(realpath "$OUT"); fi
# lib.sh's exit trap kills with -9, which would leave hosts.sh's namespaces.
trap 'hosts_stop; kill $(jobs -p) 2>/dev/null; [[ -n ${OUT:-} ]] || rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

MODEL=${MODEL:-mlp}
case $MODEL in
  mlp) model=(--model=mlp)
       # Steps per case. A clean mlp step takes 13 ms on an idle host and
       # 80 ms or more while this shared 2-core host builds (the load
       # average is in each row); the faults that act over time (a flap
       # every 30 s, a 20 s partition) start 3 s in and get runs of a minute
       # or so under load. Each row says how much of its fault happened
       # before training ended. 20% loss and jitter make every step wait on
       # retransmissions or the relays, so they get fewer steps.
       declare -A steps=([clean]=300 [loss1]=300 [loss5]=300 [loss20]=40 [jitter]=100 [flap]=1500
                         [partition]=800 [collapse]=600) ;;
  gpt) model=(--model=gpt --shape=small --context=64 --batch=8)
       declare -A steps=([clean]=20 [loss1]=20 [loss5]=20 [loss20]=5 [jitter]=10 [flap]=200
                         [partition]=100 [collapse]=60) ;;
  *) echo "bench/netfaults: MODEL must be mlp or gpt, got '$MODEL'" >&2; exit 2 ;;
esac
if [[ -n ${STEPS:-} ]]; then for c in "${!steps[@]}"; do steps[$c]=$STEPS; done; fi
cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the GEMMs among the devices
flags=("${model[@]}" --threads=1 "${cost[@]}")
DEVICES=4

# The in-process references, one per step count, made at once in the
# background: they pace their emulated devices and mostly sleep.
declare -A ref_pid
for c in "${cases[@]}"; do
  [[ -n ${steps[$c]:-} ]] || { echo "bench/netfaults: no case '$c'" >&2; exit 2; }
  n=${steps[$c]}
  [[ -n ${ref_pid[$n]:-} ]] && continue
  "$CLEAVE" --role=all --devices=$DEVICES "${flags[@]}" --steps="$n" --log-level=warn \
    --report="$WORK/ref-$n.json" > "$WORK/ref-$n.log" 2>&1 &
  ref_pid[$n]=$!
done

rows=()
row() {
  local line; line=$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$@")
  rows+=("$line")
  echo "$line"
}
echo "bench/netfaults: $MODEL, $DEVICES device hosts, work in $WORK"
row case parameters steps "training s" "vs in-process" "suspected/dead/rejoined" "false deaths per device-hour" quarantined "load avg" verdict
row --- --- --- --- --- --- --- --- --- ---

# run_case NAME PARAMS [hosts.sh flags]: trains under fault_NAME (a function
# started in the background once training runs) and prints the case's row.
run_case() {
  local name=$1 params=$2; shift 2
  local n=${steps[$name]} rc
  hosts_start "$name" --devices=$DEVICES "$@" -- "${flags[@]}" --steps="$n" --report="$WORK/$name.json" \
    || { row "$name" "$params" "$n" - - - - - - "FAIL (no hosts)"; return; }
  wait_training "$name" || { wait_hosts 10; row "$name" "$params" "$n" - - - - - - "FAIL (no training)"; return; }
  "fault_$name" > "$WORK/$name.fault.log" 2>&1 &
  local fault=$!
  wait_hosts 900
  rc=$?
  kill $fault 2>/dev/null
  wait $fault 2>/dev/null
  wait "${ref_pid[$n]}" 2>/dev/null
  local verdict versus seconds quarantined suspected dead rejoined dph
  versus=$(compare "$WORK/ref-$n.json" "$WORK/$name.json")
  read -r suspected dead rejoined <<< "$(verdicts "$name")"
  seconds=$(json "$WORK/$name.json" "f\"{sum(d['step_seconds']):.1f}\"" 2>/dev/null || echo -)
  quarantined=$(json "$WORK/$name.json" "d['devices_quarantined']" 2>/dev/null || echo -)
  dph=-
  [[ $name == clean || $name == loss* || $name == jitter ]] && [[ $seconds != - ]] \
    && dph=$(python3 -c "print(f'{$dead / ($DEVICES * $seconds / 3600):.0f}')")
  verdict=PASS
  if ((rc == 125)); then verdict="FAIL (the ps wrote its report but did not exit)"
  elif ((rc != 0)); then verdict="FAIL (exit $rc)"
  elif [[ $versus != equal ]] && ! python3 -c "import sys; sys.exit(0 if float('${versus#max }') <= 1e-6 else 1)" 2>/dev/null; then
    verdict="FAIL (trajectory)"
  elif [[ $quarantined != 0 ]]; then verdict="FAIL (quarantine)"
  fi
  # What the fault did before training ended (a flap's count), and the
  # host's load: this 2-core machine is shared, and a starved process
  # misses heartbeats as a lossy link does.
  if [[ $name == flap ]]; then
    params+=" ($(grep -c "down" "$WORK/$name.fault.log") down)"
  fi
  if [[ $name == flap || $name == partition || $name == collapse ]] && ! grep -q "^done" "$WORK/$name.fault.log" \
     && [[ $verdict == PASS ]]; then
    verdict="INCOMPLETE (training ended before the fault ran its course)"
  fi
  row "$name" "$params" "$n" "$seconds" "$versus" "$suspected/$dead/$rejoined" \
    "$dph" "$quarantined" "$(cut -d' ' -f1-3 /proc/loadavg)" "$verdict"
}

fault_clean() { :; }
fault_loss1() { for i in $(seq 1 $DEVICES); do lose $i 0.01; done; }
fault_loss5() { for i in $(seq 1 $DEVICES); do lose $i 0.05; done; }
fault_loss20() { for i in $(seq 1 $DEVICES); do lose $i 0.20; done; }
fault_jitter() { :; }  # the relays hosts.sh puts in front of every device
# Each fault logs "applied: ..." for each change it made, and "done" once
# it has run its course (a partition healed, a collapse in force).
# The vm host (device 4 takes most tiles) loses its link for 5 s every 30 s,
# the first time 3 s in.
fault_flap() {
  sleep 3
  while :; do
    link 4 down; echo "$(date +%T.%3N) applied: link 4 down"
    sleep 5; link 4 up; echo "$(date +%T.%3N) applied: link 4 up"; echo done
    sleep 25
  done
}
# Devices 1 and 2 of 4 cut off 3 s in, for 20 s.
fault_partition() {
  sleep 3; partition 1 on; partition 2 on; echo "$(date +%T.%3N) applied: partitioned"
  sleep 20; partition 1 off; partition 2 off; echo "$(date +%T.%3N) applied: healed"; echo done
}
# The vm host's link at 100 Mbit/s from the start, 1 Mbit/s (1%) 3 s in.
fault_collapse() {
  rate 4 100; echo "$(date +%T.%3N) applied: 100 Mbit/s"
  sleep 3; rate 4 1; echo "$(date +%T.%3N) applied: 1 Mbit/s"; echo done
}

declare -A params=(
  [clean]="no fault"
  [loss1]="iptables statistic DROP p=0.01 in+out, 4 devices"
  [loss5]="iptables statistic DROP p=0.05 in+out, 4 devices"
  [loss20]="iptables statistic DROP p=0.20 in+out, 4 devices"
  [jitter]="hosts.sh --relay=0:100 (uniform 0-100 ms per chunk each way, in order)"
  [flap]="device 4: ip link set eth0 down 5 s every 30 s, from 3 s in"
  [partition]="devices 1,2 of 4: iptables DROP all, 3 s in, healed 20 s later"
  [collapse]="device 4: tbf 100 Mbit/s both ways, 1 Mbit/s from 3 s in"
)
for c in "${cases[@]}"; do
  relay=()
  [[ $c == jitter ]] && relay=(--relay=0:100)
  run_case "$c" "${params[$c]}" "${relay[@]}"
done
echo
echo "bench/netfaults: the table ($MODEL; wall clock $(date -u +%FT%TZ)):"
printf '%s\n' "${rows[@]}"
grep -q "FAIL" <<< "${rows[*]}" && exit 1
exit 0
