# Network faults on deploy/hosts.sh's namespace hosts, for tests/cli/net_loss.sh
# and bench/netfaults/run.sh (sourced after lib.sh; needs root). This kernel
# has no netem, so each fault is made of what it has:
#   loss        iptables' statistic match (-m statistic --mode random
#               --probability P -j DROP) on a device host's INPUT and OUTPUT
#               chains: P of the packets lost each way;
#   link down   ip link set eth0 down on a device host (its veth's carrier
#               goes, as an unplugged cable's);
#   partition   every packet dropped on the host (iptables), the link up:
#               the ps and the device each see silence, no reset;
#   bandwidth   token buckets (tc tbf) on the device host's eth0 (its
#               uplink) and on its bridge port (its downlink);
#   jitter      hosts.sh --relay=0:MS (tests/cli/delay_relay.py).
# Every rule and qdisc lives in a namespace hosts.sh made, so they go with
# them when it exits.

# hosts_start NAME [hosts.sh flags] -- [ps flags]: hosts.sh in the
# background, logs in $WORK/NAME, its output in $WORK/NAME.out; sets
# hosts_pid and hosts_id (the namespaces' prefix) once they exist.
hosts_start() {
  local name=$1; shift
  CLEAVE=$CLEAVE bash "$CLI_DIR/../../deploy/hosts.sh" --logs="$WORK/$name" "$@" > "$WORK/$name.out" 2>&1 &
  hosts_pid=$!
  hosts_logs=$WORK/$name
  hosts_id=
  for _ in $(seq 1 1000); do
    hosts_id=$(grep -o "namespaces cl[0-9]*-" "$WORK/$name.out" 2>/dev/null | grep -o "cl[0-9]*")
    [[ -n $hosts_id ]] && return 0
    kill -0 $hosts_pid 2>/dev/null || break
    sleep 0.02
  done
  echo "hosts.sh did not start: $(tail -2 "$WORK/$name.out")" >&2
  return 1
}

# wait_training NAME: until the ps logs its first step's start (60 s at most).
wait_training() {
  for _ in $(seq 1 3000); do
    grep -q " info training " "$WORK/$1/ps.log" 2>/dev/null && return 0
    sleep 0.02
  done
  echo "the ps never started training: $(tail -2 "$WORK/$1/ps.log")" >&2
  return 1
}

# wait_hosts SECONDS: until hosts.sh exits (its status), or 124 past
# SECONDS, or 125 when the ps wrote its report but has not exited 30 s
# later (seen once when a device's link was down as the run ended).
wait_hosts() {
  local end=$((SECONDS + $1)) written= log=$hosts_logs
  while kill -0 $hosts_pid 2>/dev/null; do
    # Once the ps has exited, hosts.sh only tears down (slow on a loaded host).
    grep -q "the ps exited" "$log.out" 2>/dev/null && written=
    [[ -z $written ]] && grep -q "report written" "$log/ps.log" 2>/dev/null \
      && ! grep -q "the ps exited" "$log.out" 2>/dev/null && written=$SECONDS
    [[ -n $written ]] && ((SECONDS - written > 30)) && { hosts_stop; return 125; }
    ((SECONDS > end)) && { hosts_stop; return 124; }
    sleep 0.2
  done
  wait $hosts_pid
}

dev_ns() { echo "$hosts_id-dev$1"; }

# lose DEVICE P: P of the device host's packets dropped each way from now.
lose() {
  local c
  for c in INPUT OUTPUT; do
    ip netns exec "$(dev_ns "$1")" iptables -A $c -m statistic --mode random --probability "$2" -j DROP
  done
}

# partition DEVICE on|off: every packet of the device host dropped, or none.
partition() {
  local c op=-A
  [[ $2 == off ]] && op=-D
  for c in INPUT OUTPUT; do ip netns exec "$(dev_ns "$1")" iptables $op $c -j DROP; done
}

# link DEVICE up|down: the device host's link.
link() { ip -n "$(dev_ns "$1")" link set eth0 "$2"; }

# bridge_port DEVICE: the switch's end of the device host's veth.
bridge_port() {
  local peer; peer=$(ip -n "$(dev_ns "$1")" -o link show eth0 | grep -o "eth0@if[0-9]*" | grep -o "[0-9]*$")
  ip -n "$hosts_id-sw" -o link show | awk -F': ' -v i="$peer" '$1 == i {sub(/@.*/, "", $2); print $2}'
}

# rate DEVICE MBIT: the device's uplink and downlink held to MBIT (tbf; the
# first call adds the buckets, later ones change their rate).
rate() {
  local op=add port; port=$(bridge_port "$1")
  tc -n "$(dev_ns "$1")" qdisc show dev eth0 | grep -q tbf && op=change
  tc -n "$(dev_ns "$1")" qdisc $op dev eth0 root tbf rate "${2}mbit" burst 32kb latency 50ms
  tc -n "$hosts_id-sw" qdisc $op dev "$port" root tbf rate "${2}mbit" burst 32kb latency 50ms
}

# verdicts NAME: what the detector said of the devices over run NAME, as
# "SUSPECTED DEAD REJOINED": suspicions and deaths from the planner's log,
# and devices declared dead that joined again as new members from the ps's.
verdicts() {
  echo "$(grep -c "is suspect;" "$WORK/$1/planner.log") $(grep -c "is dead;" "$WORK/$1/planner.log")" \
    "$(grep -c "joined again as" "$WORK/$1/ps.log")"
}

# hosts_stop: hosts.sh ended as Ctrl-C would (never -9: its teardown removes
# the namespaces, and with them every rule and qdisc).
hosts_stop() {
  [[ -n ${hosts_pid:-} ]] && kill -0 $hosts_pid 2>/dev/null || return 0
  kill -TERM $hosts_pid
  timeout 20 tail --pid=$hosts_pid -f /dev/null
}

# compare REF GOT: "equal" when GOT's per-step losses are REF's bit for bit,
# else the largest relative difference ("max 3.1e-07") or what is missing.
compare() {
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    ref, got = (json.load(open(p)) for p in sys.argv[1:3])
except (OSError, ValueError) as e:
    print(f"no report ({e.__class__.__name__})"); sys.exit()
if len(got["losses"]) != len(ref["losses"]): print(f"{len(got['losses'])} of {len(ref['losses'])} steps")
elif got["losses"] == ref["losses"]: print("equal")
else: print(f"max {max(abs(a - b) / abs(a) for a, b in zip(ref['losses'], got['losses'])):.1e}")
PY
}
