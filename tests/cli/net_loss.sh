#!/usr/bin/env bash
# A lossy network, the short case of bench/netfaults/run.sh: mlp trains on
# deploy/hosts.sh's namespace hosts (detector, planner, ps, four device
# hosts) while iptables' statistic match drops 5% of every device host's
# packets each way (this kernel has no netem; tests/cli/netfaults.sh).
#  1. the run finishes with the in-process fleet's trajectory bit for bit;
#  2. no device is quarantined (all are honest) and none is declared dead:
#     a stalled retransmission is a late heartbeat, not a death (the
#     detector's learned silence, docs/FAILURES.md); deaths are not judged
#     on a host loaded past two runnable processes per core;
#  3. the rules were in force (their drop counters moved), and every
#     namespace, with its rules, is gone after the run.
# Skipped (77) without root or iptables.
source "$(dirname "$0")/lib.sh"
source "$CLI_DIR/netfaults.sh"
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "skipped: network namespaces and iptables need root"; exit 77; }
command -v iptables > /dev/null || { echo "skipped: iptables is missing"; exit 77; }
trap 'hosts_stop; kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

STEPS=150 LOSS=0.05
run=(--model=mlp --steps=$STEPS --threads=1 --ps-egress=1e12 --ps-flops=1e9)  # the planner splits the GEMMs
# The reference paces its emulated devices and mostly sleeps: it runs
# alongside the namespaced run.
"$CLEAVE" --role=all --devices=4 "${run[@]}" --log-level=warn --report="$WORK/inproc.json" \
  > "$WORK/inproc.log" 2>&1 &
ref=$!
start=$SECONDS
hosts_start lossy --devices=4 -- "${run[@]}" --report="$WORK/lossy.json" || { fail "no hosts"; finish; }
wait_training lossy || { fail "no training"; finish; }
for i in 1 2 3 4; do lose $i $LOSS; done
dropped() { ip netns exec "$(dev_ns "$1")" iptables -L -v -x -n | awk '/statistic/ {n += $1} END {print n + 0}'; }
# Read while the namespaces live: they go with the run.
sleep 2
drops=$(( $(for i in 1 2 3 4; do dropped $i; done | paste -sd+) ))
wait_hosts 120 || fail "the lossy run failed or timed out: $(tail -2 "$WORK/lossy.out")"
echo "info: $STEPS steps at $LOSS loss each way in $((SECONDS - start)) s; $drops packets dropped in its first 2 s"
((drops > 0)) && echo "ok: the loss rules dropped packets" || fail "the loss rules dropped nothing"
wait $ref || fail "the in-process run failed: $(tail -2 "$WORK/inproc.log")"
verdict=$(same_trajectory "$WORK/inproc.json" "$WORK/lossy.json")
[[ $verdict == equal ]] && echo "ok: at 5% loss the trajectory is the in-process fleet's" || fail "lossy run: $verdict"
read -r suspected dead rejoined <<< "$(verdicts lossy)"
echo "info: the detector suspected $suspected time(s), declared $dead dead; $rejoined joined again"
# A host this starved stalls the ps's edge for every device at once, and
# the detector cannot tell that from the network: deaths are judged only
# below a load of two per core (this host has seen 80 and more).
load=$(cut -d' ' -f1 /proc/loadavg)
if python3 -c "import os, sys; sys.exit(0 if $load <= 2 * os.cpu_count() else 1)"; then
  ((dead == 0)) && echo "ok: no device declared dead" || fail "$dead false death(s) at 5% loss (load $load)"
else
  echo "info: $dead death(s) not judged: the host's load average is $load on $(nproc) cores"
fi
quarantined=$(json "$WORK/lossy.json" "d['devices_quarantined']")
((quarantined == 0)) && echo "ok: no device quarantined" || fail "$quarantined honest device(s) quarantined"
ip netns list | grep -q "^$hosts_id-" && fail "namespaces left behind: $(ip netns list | grep "^$hosts_id-")"
finish
