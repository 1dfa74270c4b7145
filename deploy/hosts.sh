#!/usr/bin/env bash
# The compose topology (deploy/docker-compose.yml) as separate hosts on one
# machine, without Docker: each role runs in its own network namespace with
# its own address, joined by two bridges like the compose file's networks.
#
#   servers 10.78.1.0/24: detector .2, planner .3, ps .4
#   edge    10.78.2.0/24: ps .4, device hosts .11, .12, ...
#
# The bridges live in a namespace of their own, so nothing is added to the
# machine's network: everything stays inside the namespaces this script
# makes, and they are removed when it exits (Ctrl-C included). Needs root.
#
# Usage: deploy/hosts.sh [--devices=N] [--logs=DIR] [--relay=MS[:JITTER_MS]] [--] [ps flags...]
#   --devices=N   device hosts, one device each (default 4), with the compose
#                 file's profiles in turn: phone, edge, laptop, vm
#   --relay=MS[:JITTER_MS]
#                 each device reaches the ps through a relay in its own host
#                 (tests/cli/delay_relay.py) that holds every byte MS ms each
#                 way plus a uniform draw from [0, JITTER_MS) in order: the
#                 latency and jitter this kernel's missing netem would add
#   --logs=DIR    keep every host's log there (default: a temporary folder,
#                 removed at exit)
#   ps flags      passed to the ps (default: --model=mlp --epochs=1); add
#                 --report=FILE to keep the run's report. The cost model's
#                 (--ps-egress, --ps-flops, --max-tiles-per-device) also go
#                 to the planner, which makes the plans.
# The ps serves the admin console on 10.78.1.4:8080 (servers network); the
# script prints how to look at it from inside the namespaces.
# CLEAVE (default build/cmd/cleave) names the binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CLEAVE=$(realpath "${CLEAVE:-$root/build/cmd/cleave}")
devices=4
logs=""
relay=""
ps_flags=()
for arg in "$@"; do
  case $arg in
    --devices=*) devices=${arg#*=} ;;
    --logs=*) logs=${arg#*=} ;;
    --relay=*) relay=${arg#*=} ;;
    --) ;;
    *) ps_flags+=("$arg") ;;
  esac
done
((${#ps_flags[@]})) || ps_flags=(--model=mlp --epochs=1)
# The planner makes the plans: the cost model's flags go to it too.
planner_flags=()
for flag in "${ps_flags[@]}"; do
  case $flag in --ps-egress=* | --ps-flops=* | --max-tiles-per-device=*) planner_flags+=("$flag") ;; esac
done
[[ $devices =~ ^[0-9]+$ ]] && ((devices >= 1 && devices <= 60)) \
  || { echo "hosts.sh: --devices must be 1..60, got '$devices'" >&2; exit 2; }
[[ -z $relay || $relay =~ ^[0-9]+(\.[0-9]+)?(:[0-9]+(\.[0-9]+)?)?$ ]] \
  || { echo "hosts.sh: --relay must be MS or MS:JITTER_MS, got '$relay'" >&2; exit 2; }
((EUID == 0)) || { echo "hosts.sh: network namespaces need root" >&2; exit 2; }
[[ -x $CLEAVE ]] || { echo "hosts.sh: no cleave binary at $CLEAVE (bash deploy/setup.sh build)" >&2; exit 2; }
if [[ -z $logs ]]; then
  logs=$(mktemp -d)
  keep_logs=0
else
  mkdir -p "$logs"
  logs=$(realpath "$logs")
  keep_logs=1
fi

id=cl$$  # namespaces are named after this run: several runs never collide
switch=$id-sw
hosts=("$id-detector" "$id-planner" "$id-ps")
for ((i = 1; i <= devices; i++)); do hosts+=("$id-dev$i"); done

# `ip netns exec` waits on its command: a host's processes are stopped by namespace.
stop_host() { ip netns pids "$1" 2>/dev/null | xargs -r kill "-${2:-TERM}" 2>/dev/null || true; }
teardown() {
  trap '' INT TERM  # a second Ctrl-C (or TERM) must not leave namespaces behind
  for ns in "${hosts[@]}"; do stop_host "$ns"; done
  sleep 0.3
  for ns in "${hosts[@]}" "$switch"; do
    stop_host "$ns" KILL
    ip netns del "$ns" 2>/dev/null || true
  done
  ((keep_logs)) || rm -rf "$logs"
}
trap teardown EXIT
trap 'exit 130' INT TERM

ip netns add "$switch"
ip -n "$switch" link set lo up
for net in servers edge; do
  ip -n "$switch" link add "br-$net" type bridge
  ip -n "$switch" link set "br-$net" up
done
# plug HOST NET ADDRESS [IFNAME]: a veth from HOST to NET's bridge.
plug() {
  local host=$1 net=$2 address=$3 ifname=${4:-eth0}
  local port="p$(( ${#plugged[@]} ))"
  plugged+=("$port")
  ip link add "$ifname" netns "$host" type veth peer name "$port" netns "$switch"
  ip -n "$switch" link set "$port" master "br-$net" up
  ip -n "$host" addr add "$address/24" dev "$ifname"
  ip -n "$host" link set "$ifname" up
}
plugged=()
for ns in "${hosts[@]}"; do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
plug "$id-detector" servers 10.78.1.2
plug "$id-planner" servers 10.78.1.3
plug "$id-ps" servers 10.78.1.4 eth0
plug "$id-ps" edge 10.78.2.4 eth1
for ((i = 1; i <= devices; i++)); do plug "$id-dev$i" edge "10.78.2.$((10 + i))"; done

on() { local ns=$1; shift; ip netns exec "$id-$ns" "$@"; }
# wait_listening HOST PORT LOG: until HOST listens on PORT (20 s at most).
wait_listening() {
  for _ in $(seq 1 1000); do
    on "$1" ss -ltnH "sport = :$2" 2>/dev/null | grep -q . && return 0
    sleep 0.02
  done
  echo "hosts.sh: $1 does not listen on $2: $(tail -3 "$3")" >&2
  return 1
}

echo "hosts.sh: $((devices + 3)) hosts in namespaces $id-*; logs in $logs"
on detector "$CLEAVE" --role=detector --listen=0.0.0.0:4200 > "$logs/detector.log" 2>&1 &
wait_listening detector 4200 "$logs/detector.log"
on planner "$CLEAVE" --role=planner --listen=0.0.0.0:4100 --detector=10.78.1.2:4200 \
  --min-devices="$devices" ${planner_flags[@]+"${planner_flags[@]}"} > "$logs/planner.log" 2>&1 &
wait_listening planner 4100 "$logs/planner.log"
on ps "$CLEAVE" --role=ps --planner=10.78.1.3:4100 --listen=10.78.2.4:4300 --admin=10.78.1.4:8080 \
  "${ps_flags[@]}" > "$logs/ps.log" 2>&1 &
ps=$!
wait_listening ps 4300 "$logs/ps.log"
connect=10.78.2.4:4300
if [[ -n $relay ]]; then
  IFS=: read -r delay_ms jitter_ms <<< "$relay"
  for ((i = 1; i <= devices; i++)); do
    on "dev$i" python3 "$root/tests/cli/delay_relay.py" 4300 10.78.2.4:4300 \
      "$(python3 -c "print($delay_ms / 1e3)")" "$(python3 -c "print(${jitter_ms:-0} / 1e3)")" > "$logs/relay-$i.log" 2>&1 &
  done
  for ((i = 1; i <= devices; i++)); do wait_listening "dev$i" 4300 "$logs/relay-$i.log"; done
  connect=127.0.0.1:4300
fi
profiles=(phone edge laptop vm)
for ((i = 1; i <= devices; i++)); do
  on "dev$i" "$CLEAVE" --role=device --connect=$connect --profile="${profiles[$(( (i - 1) % 4 ))]}" \
    --threads=1 --reconnect-seconds=30 > "$logs/device-$i.log" 2>&1 &
done
cat <<EOF
hosts.sh: detector 10.78.1.2, planner 10.78.1.3, ps 10.78.1.4 / 10.78.2.4, devices 10.78.2.11-$((10 + devices))
hosts.sh: the console, from inside the ps's host:
  ip netns exec $id-ps curl -s http://10.78.1.4:8080/status
hosts.sh: a host's shell: ip netns exec $id-dev1 bash; cut a device's link: ip -n $id-dev1 link set eth0 down
EOF
set +e
wait $ps
rc=$?
set -e
echo "hosts.sh: the ps exited with $rc: $(tail -1 "$logs/ps.log")"
exit $rc
