#!/usr/bin/env bash
# Shaped links: the simulator against a live run over real TCP whose links
# the kernel holds to known rates, not a run whose devices pace themselves
# (calibration.sh). One PS host (--role=ps with its planner and detector)
# and DEVICES device hosts (--role=device) in network namespaces on one
# bridge; token buckets (tc tbf; this kernel has no netem) on the veths set
# each device's downlink and uplink and the PS's link each way, the PS's
# slower than the devices' sum both ways so that it binds, as the issue
# asks. No latency is added by default: without netem that needs a
# delaying relay (RELAY_MS, below), whose own CPU on this 2-core host is a
# part of the step neither side models; the profiles declare about the
# veths' own (tens of microseconds; the token buckets' queues add delay
# under load, which neither the planner nor the simulator counts as
# latency).
#
#  1. Raw TCP through the shaping (tcp_rate.py): one device's downlink and
#     uplink alone, and the PS's egress and ingress with every device at
#     once, each within SANITY of the goodput the profiles declare; else the
#     shaping is not in force and nothing after it would mean anything.
#  2. gpt small trains STEPS steps over the links; the live step is the
#     median of steps 2.. (the first builds the plans and fills the caches).
#  3. --role=simulate with the same model, batch, fleet file and PS link,
#     the PS's compute and memory rates as calibration.sh measured them for
#     this host, under every PS link model the binary offers
#     (--ps-link-model, when it has the flag). Each model's residual is
#     printed; the one the docs say real TCP follows (LINK_MODEL) must be
#     within STEP_TOLERANCE on the step and BYTES_TOLERANCE on bytes.
# RELAYS=N puts N relay hosts (--role=relay, docs/RELAYS.md) between the PS
# and the devices, each with a RELAY_MBIT link both ways, the devices spread
# over them in contiguous runs as the simulator spreads a fleet file's; the
# simulation is given the same relay tier.
# Every namespace, qdisc and process it makes goes at exit (the qdiscs and
# veths live in the namespaces, so deleting them removes everything).
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "FAIL: network namespaces and tc need root"; exit 1; }
for tool in ip tc; do command -v $tool > /dev/null || { echo "FAIL: $tool is missing (iproute2)"; exit 1; }; done

DEVICES=6
# Mbit/s on the wire. Six devices' downlinks (600) and uplinks (240) both
# exceed the PS's 200, so the PS's link binds both ways.
DOWN_MBIT=100 UP_MBIT=40 PS_MBIT=200
STEPS=6
MODEL=(--model=gpt --shape=small --context=64 --batch=8)
# The planner is told a slow PS so that it splits products among devices
# (as calibration.sh does); the simulated PS computes as this host's does.
# Both plan for device processes (--pipelined-devices), which take a tile's
# operands while they compute or send another's, so that the live ps and
# the simulator run the same plans and the simulated devices overlap as
# these do. PIPELINED= (empty) plans and simulates emulated devices (one
# tile after another) instead: the simulated devices then wait where the
# processes do not (see docs/SIMULATOR.md, Shaped links).
PS_COST=(--ps-flops=5e8 --ps-memory-bandwidth=3.9e9 ${PIPELINED---pipelined-devices})
SIM_PS=(--sim-ps-flops=1e11)
# Heartbeats at 1 s, as calibration.sh: a device's heartbeat queues behind
# its results on its 40 Mbit/s uplink (0.2 s for a 1 MB result), and a
# device the detector suspects gets its tiles copied, which no churn-free
# simulation shows (the check prints live failures; 0 in every run here).
RUN=(--heartbeat=1 --steps=$STEPS)
# What a device process computes at here, one thread each, six at once on
# this 2-core host: the live reports' FLOPs over busy seconds (printed
# below) gave 3.0e10-3.7e10 on plans of one tile per device and product,
# 1.5e10-3.1e10 on the finer tiles of the later planners (c3f8422 on).
# Compute is a few percent of the step either way.
DEVICE_FLOPS=3e10
LATENCY=0.0001  # one way
# RELAY_MS=N puts a relay (delay_relay.py) in front of each device that holds
# every byte N ms each way, and the profiles declare it as their latency.
# Not by default: the relays' own CPU on this 2-core host is a cost neither
# side models (see docs/SIMULATOR.md, Shaped links).
RELAY_MS=${RELAY_MS:-0}
((RELAY_MS > 0)) && LATENCY=$(python3 -c "print($RELAY_MS / 1000 + $LATENCY)")
RELAYS=${RELAYS:-0} RELAY_MBIT=${RELAY_MBIT:-1000}
((RELAYS > 0 && RELAY_MS > 0)) && { echo "FAIL: RELAYS and RELAY_MS do not go together"; exit 1; }
((RELAYS <= DEVICES)) || { echo "FAIL: RELAYS=$RELAYS is more than the $DEVICES devices"; exit 1; }
SANITY=0.10 STEP_TOLERANCE=0.20 BYTES_TOLERANCE=0.15
# How the PS's egress queues, for looking into the link-sharing model:
# fifo (tbf's own single queue) or per-device (one queue per device,
# served in turn).
PS_QUEUE=${PS_QUEUE:-fifo}
# The link model docs/SIMULATOR.md says real TCP is closest to.
LINK_MODEL=${LINK_MODEL:-fair}

# goodput MBIT: the TCP payload bytes/s a link of MBIT carries. tbf counts
# whole Ethernet frames: 1514 bytes on the wire for 1448 of payload (MTU
# 1500, 20 IP, 32 TCP with timestamps, 14 Ethernet).
goodput() { python3 -c "print(f'{$1 * 1e6 / 8 * 1448 / 1514:.6g}')"; }
DOWN=$(goodput $DOWN_MBIT) UP=$(goodput $UP_MBIT) PS_LINK=$(goodput $PS_MBIT) RELAY_LINK=$(goodput $RELAY_MBIT)

id=shp$$
switch=$id-sw
hosts=("$id-ps")
for ((i = 1; i <= DEVICES; i++)); do hosts+=("$id-dev$i"); done
for ((r = 1; r <= RELAYS; r++)); do hosts+=("$id-rly$r"); done
teardown() {
  for ns in "${hosts[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
  for ns in "${hosts[@]}" "$switch"; do ip netns del "$ns" 2>/dev/null; done
  kill -9 $(jobs -p) 2>/dev/null
  [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$WORK"/. "$KEEP"/  # reports and logs, to look into a residual
  rm -rf "$WORK"
}
trap teardown EXIT
trap 'exit 130' INT TERM
on() { local ns=$1; shift; ip netns exec "$id-$ns" "$@"; }

# shape NS DEV MBIT: a token bucket on DEV's egress. The burst (32 KB) is
# 1.3 ms at the slowest rate, so it cannot carry a tile's operands past the
# rate; the queue holds 20 ms, enough that TCP is not cut back by drops at
# every burst of a step's sends.
shape() { tc -n "$1" qdisc add dev "$2" root tbf rate "$3mbit" burst 32kb latency 20ms; }
ip netns add "$switch"
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
# plug HOST ADDRESS OUT_MBIT IN_MBIT: HOST on the bridge, sending at OUT and
# receiving at IN (the switch port's egress is the host's ingress).
plug() {
  local host=$1 port=p${#plugged[@]}
  plugged+=("$port")
  ip netns add "$host"
  ip -n "$host" link set lo up
  ip link add eth0 netns "$host" type veth peer name "$port" netns "$switch"
  ip -n "$switch" link set "$port" master br0 up
  ip -n "$host" addr add "$2/24" dev eth0
  ip -n "$host" link set eth0 up
  shape "$host" eth0 "$3"
  shape "$switch" "$port" "$4"
}
plugged=()
plug "$id-ps" 10.79.0.1 $PS_MBIT $PS_MBIT
for ((i = 1; i <= DEVICES; i++)); do plug "$id-dev$i" "10.79.0.$((10 + i))" $UP_MBIT $DOWN_MBIT; done
for ((r = 1; r <= RELAYS; r++)); do plug "$id-rly$r" "10.79.0.$((200 + r))" $RELAY_MBIT $RELAY_MBIT; done
if [[ $PS_QUEUE == per-device ]]; then
  # One queue per device, served in turn (htb's classes borrowing from one
  # parent at the PS's rate): what a fair-queueing qdisc on the PS's NIC
  # does. This kernel has neither fq nor fq_codel.
  tc -n "$id-ps" qdisc del dev eth0 root
  tc -n "$id-ps" qdisc add dev eth0 root handle 1: htb default 99 r2q 1000
  tc -n "$id-ps" class add dev eth0 parent 1: classid 1:1 htb rate ${PS_MBIT}mbit burst 32kb cburst 32kb
  for ((i = 1; i <= DEVICES + 1; i++)); do
    c=$((i > DEVICES ? 99 : 10 + i))
    tc -n "$id-ps" class add dev eth0 parent 1:1 classid 1:$c htb rate $((PS_MBIT * 1000 / (DEVICES + 1)))kbit \
      ceil ${PS_MBIT}mbit burst 32kb cburst 32kb quantum 1514
    tc -n "$id-ps" qdisc add dev eth0 parent 1:$c bfifo limit $((PS_MBIT * 1000000 / 8 / 50))
    ((c == 99)) || tc -n "$id-ps" filter add dev eth0 parent 1: protocol ip prio 1 u32 \
      match ip dst 10.79.0.$c/32 flowid 1:$c
  done
elif [[ $PS_QUEUE != fifo ]]; then
  echo "FAIL: PS_QUEUE must be fifo or per-device, got '$PS_QUEUE'"; exit 1
fi
for ns in "$id-ps" "$id-dev1"; do
  tc -n "$ns" qdisc show dev eth0 | grep -q "tbf\|htb" || { echo "FAIL: no token bucket on $ns's eth0"; exit 1; }
done
# The congestion control is the host's (a namespace here may not change it).
echo "info: TCP congestion control $(on ps sysctl -n net.ipv4.tcp_congestion_control), the PS's egress queue: $PS_QUEUE"

# 1. Raw TCP through the shaping.
rate_tool="$CLI_DIR/tcp_rate.py"
address() { [[ $1 == ps ]] && echo 10.79.0.1 || echo "10.79.0.$((10 + ${1#dev}))"; }
# measure NAME SECONDS "SENDERS" "RECEIVERS": every sender sends to every
# receiver at once, one TCP flow each; prints the flows' rates summed (B/s)
# over the window they all ran in, each flow's in $WORK/rates_NAME.json.
measure() {
  local name=$1 seconds=$2 senders=($3) receivers=($4) targets=() pids=()
  for ns in "${receivers[@]}"; do
    on "$ns" python3 "$rate_tool" recv 5001 "$seconds" ${#senders[@]} > "$WORK/rate_$name.$ns" &
    pids+=($!)
    targets+=("$(address "$ns"):5001")
  done
  for ns in "${senders[@]}"; do on "$ns" python3 "$rate_tool" send "$seconds" "${targets[@]}" & pids+=($!); done
  wait "${pids[@]}"
  python3 "$rate_tool" rates "$WORK/rate_$name".* > "$WORK/rates_$name.json"
  json "$WORK/rates_$name.json" "d['rate']"
}
devs=$(for ((i = 1; i <= DEVICES; i++)); do printf 'dev%d ' $i; done)
got_down=$(measure down 2 ps dev1)
got_up=$(measure up 2 dev1 ps)
got_ps_out=$(measure ps_out 2 ps "$devs")
got_ps_in=$(measure ps_in 2 "$devs" ps)
sanity=$(python3 - "$SANITY" "$got_down" "$DOWN" "$got_up" "$UP" "$got_ps_out" "$PS_LINK" "$got_ps_in" "$PS_LINK" <<'PY'
import sys
tol = float(sys.argv[1])
v = list(map(float, sys.argv[2:]))
names = ["a device's downlink", "a device's uplink", "the PS's egress, all devices at once",
         "the PS's ingress, all devices at once"]
bad, parts = [], []
for name, got, want in zip(names, v[0::2], v[1::2]):
    parts.append(f"{name} {got / 1e6:.2f} MB/s (declared {want / 1e6:.2f})")
    if abs(got / want - 1) > tol: bad.append(name)
print(("ok" if not bad else "MISS: not shaped as declared: " + ", ".join(bad)) + ": raw TCP: " + "; ".join(parts))
PY
)
echo "$sanity"
# How TCP shares the PS's link among flows: equal rates are what the
# simulator's fair sharing assumes.
for dir in ps_out ps_in; do
  json "$WORK/rates_$dir.json" "(lambda r: f'info: raw TCP, $dir, {len(r)} flows at once: per flow {r[0] / 1e6:.2f} to '
    f'{r[-1] / 1e6:.2f} MB/s (max/min {r[-1] / r[0] if r[0] else float("inf"):.2f})')(sorted(d['rates']))"
done
# Transfers that start together, as a product's operands do, timed from
# their start, against the two link models.
BURST=$((1 << 20)) ROUNDS=5
for ((i = 1; i <= DEVICES; i++)); do
  on dev$i python3 "$rate_tool" burst-recv 5002 $BURST $ROUNDS > "$WORK/burst.dev$i" &
done
on ps python3 "$rate_tool" burst-send $BURST $ROUNDS $(for ((i = 1; i <= DEVICES; i++)); do
  printf '%s:5002 ' "$(address dev$i)"; done) > "$WORK/burst.ps"
wait
python3 - "$WORK" $DEVICES $BURST "$DOWN" "$PS_LINK" <<'PY'
import json, sys
work, n, size, cap, link = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
started = json.load(open(f"{work}/burst.ps"))["started"]
finished = [json.load(open(f"{work}/burst.dev{i}"))["finished"] for i in range(1, n + 1)]
rounds = [sorted(f[r] - s for f in finished) for r, s in enumerate(started)]
got = [sorted(r[k] for r in rounds)[len(rounds) // 2] for k in range(n)]  # median over rounds of the k-th
# Two models of the PS's egress, as the simulator has them: fair (max-min
# fair sharing: equal transfers end together) and scheduled (in order, each
# at its cap while the link has room, the first that does not fit taking
# what is left, the rest waiting).
def served(share):
    left, now, ends = [float(size)] * n, 0.0, [0.0] * n
    while any(x > 0 for x in left):
        rates = share([k for k in range(n) if left[k] > 0])
        dt = min(left[k] / r for k, r in rates.items() if r > 0)
        now += dt
        for k, r in rates.items():
            left[k] -= r * dt
            if left[k] <= 1e-6 * size: left[k], ends[k] = 0, now
    return sorted(ends)
def fair(active):
    return {k: min(cap, link / len(active)) for k in active}
def scheduled(active):
    room, out = link, {}
    for k in active:
        out[k] = min(cap, room)
        room -= out[k]
    return out
# Sent in order at most c at a time, each at min(cap, link / c): between
# the two (c = n is fair sharing).
def in_order(c):
    return [(k // c + 1) * size / min(cap, link / c) for k in range(n)]
dist = lambda model: (sum((g - m) ** 2 for g, m in zip(got, model)) / n) ** 0.5
fmt = lambda xs: " ".join(f"{x:.3f}" for x in xs)
best = min(range(1, n + 1), key=lambda c: dist(in_order(c)))
print(f"info: raw TCP, {n} x {size >> 20} MiB from the PS at once ({len(rounds)} rounds, median): ended at "
      f"{fmt(got)} s; fair model {fmt(served(fair))} (RMS off {dist(served(fair)):.3f} s); scheduled model "
      f"{fmt(served(scheduled))} (RMS off {dist(served(scheduled)):.3f} s); closest in order at most c at a "
      f"time: c={best} (RMS off {dist(in_order(best)):.3f} s)")
PY
[[ $sanity == ok* ]] || { fail "$sanity (tc -s: $(tc -n $id-ps -s qdisc show dev eth0 | tr '\n' ' '))"; finish; }

# 2. The live run. Each device declares its shaped link (goodput) and the
# compute it has here.
cat > "$WORK/device.json" <<J
{"devices": [{"name": "shaped", "flops": $DEVICE_FLOPS, "memory_bytes": 2e9, "downlink": $DOWN,
              "uplink": $UP, "latency": $LATENCY}]}
J
if ((RELAYS > 0)); then
  sed "s/\"latency\": $LATENCY}/\"latency\": $LATENCY, \"count\": $DEVICES, \"relay\": \"r\"}/" "$WORK/device.json" \
    | python3 -c "import json, sys; d = json.load(sys.stdin); d['relays'] = [{'name': 'r', 'count': $RELAYS,
      'downlink': $RELAY_LINK, 'uplink': $RELAY_LINK, 'fanout': $RELAY_LINK, 'latency': $LATENCY,
      'memory_bytes': 2e9}]; print(json.dumps(d))" > "$WORK/fleet.json"
else
  sed "s/\"latency\": $LATENCY}/\"latency\": $LATENCY, \"count\": $DEVICES}/" "$WORK/device.json" > "$WORK/fleet.json"
fi
PS_LINK_FLAGS=(--ps-egress=$PS_LINK --ps-ingress=$PS_LINK)
start=$SECONDS
on ps "$CLEAVE" --role=ps --listen=10.79.0.1:4300 --min-devices=$DEVICES "${MODEL[@]}" "${PS_COST[@]}" \
  "${PS_LINK_FLAGS[@]}" "${RUN[@]}" --threads=2 --eval-tokens=512 --report="$WORK/live.json" > "$WORK/ps.log" 2>&1 &
ps=$!
for _ in $(seq 1 500); do on ps ss -ltnH "sport = :4300" | grep -q . && break; sleep 0.02; done
connect=10.79.0.1:4300
if ((RELAY_MS > 0)); then
  for ((i = 1; i <= DEVICES; i++)); do
    on dev$i python3 "$CLI_DIR/delay_relay.py" 4300 10.79.0.1:4300 "$(python3 -c "print($RELAY_MS / 1000)")" \
      > "$WORK/relay-$i.log" 2>&1 &
  done
  for i in $(seq 1 500); do on dev$DEVICES ss -ltnH "sport = :4300" | grep -q . && break; sleep 0.02; done
  connect=127.0.0.1:4300
fi
if ((RELAYS > 0)); then
  for ((r = 1; r <= RELAYS; r++)); do
    on rly$r "$CLEAVE" --role=relay --connect=10.79.0.1:4300 --listen=10.79.0.$((200 + r)):4400 --relay-name=r$r \
      --relay-memory=2e9 --relay-link=$RELAY_LINK --relay-fanout=$RELAY_LINK --relay-latency=$LATENCY \
      --progress-seconds=600 > "$WORK/rly-$r.log" 2>&1 &
  done
  for ((r = 1; r <= RELAYS; r++)); do
    for _ in $(seq 1 500); do on rly$r ss -ltnH "sport = :4400" | grep -q . && break; sleep 0.02; done
  done
fi
for ((i = 1; i <= DEVICES; i++)); do
  # With relays, device i is behind relay (i - 1) * RELAYS / DEVICES + 1: runs, as the simulator spreads them.
  ((RELAYS > 0)) && connect=10.79.0.$((200 + (i - 1) * RELAYS / DEVICES + 1)):4400
  on dev$i "$CLEAVE" --role=device --connect=$connect --fleet="$WORK/device.json" --threads=1 \
    --heartbeat=1 > "$WORK/device-$i.log" 2>&1 &
done
# 6 steps take about 50 s; a device that never joins would keep the ps
# waiting for it.
timeout 150 tail --pid=$ps -f /dev/null \
  || { fail "the live run did not end within 150 s: $(tail -3 "$WORK/ps.log")"; finish; }
wait $ps || { fail "the live run exited non-zero: $(tail -3 "$WORK/ps.log")"; finish; }
echo "live run: $((SECONDS - start)) s"
if ((RELAYS > 0)); then
  for ((r = 1; r <= RELAYS; r++)); do ip netns pids $id-rly$r | xargs -r kill -TERM; done
  sleep 0.5
  for ((r = 1; r <= RELAYS; r++)); do echo "info: $(grep -o "relay r$r: .*" "$WORK/rly-$r.log" | tail -1)"; done
  json "$WORK/live.json" "f\"info: the ps sent {d['bytes_down_over_once_per_holder']:.3f}x the operand bytes of once per relay, {d['bytes_down_over_once']:.3f}x once in all\""
fi
# The relays' CPU is this host's too: what they took is time the run lost.
if ((RELAY_MS > 0)); then
  echo "info: the relays took $(for ((i = 1; i <= DEVICES; i++)); do ip netns pids $id-dev$i; done \
    | paste -sd, | xargs -r -I{} ps -o times=,args= -p {} | awk '/delay_relay/ {n += $1} END {print n + 0}') CPU seconds in all"
fi
# Drops at the token buckets cut TCP's windows back: a step that shows them
# lost time the simulator does not model.
drops() { tc -n "$1" -s qdisc show dev "$2" | grep -o "dropped [0-9]*" | awk '{n += $2} END {print n}'; }
echo "info: packets dropped by the token buckets over the whole test: PS egress $(drops $id-ps eth0)," \
  "PS ingress $(drops $switch p0), device downlinks $(for ((i = 1; i <= DEVICES; i++)); do printf '%s ' "$(drops $switch p$i)"; done)," \
  "device uplinks $(for ((i = 1; i <= DEVICES; i++)); do printf '%s ' "$(drops $id-dev$i eth0)"; done)"
json "$WORK/live.json" "'info: live steps ' + ' '.join(f'{s:.3f}' for s in d['step_seconds']) + ' s; the devices computed at '
  + f\"{sum(x['flops'] for x in d['per_device']) / sum(x['busy_seconds'] for x in d['per_device']):.3g} FLOP/s\""

# 3. The simulator on the same fleet, model and PS link, under each link
# model the binary has.
models=(fair)
"$CLEAVE" --help 2>&1 | grep -q -- "--ps-link-model" && models=(fair scheduled)
checked=0
for model in "${models[@]}"; do
  link_model=()
  ((${#models[@]} > 1)) && link_model=(--ps-link-model=$model)
  if ! "$CLEAVE" --role=simulate "${MODEL[@]}" --fleet="$WORK/fleet.json" "${PS_COST[@]}" "${SIM_PS[@]}" \
       "${PS_LINK_FLAGS[@]}" "${link_model[@]}" "${RUN[@]}" --log-level=warn --report="$WORK/sim_$model.json" \
       > "$WORK/sim_$model.out" 2>&1; then
    fail "the simulation ($model) exited non-zero: $(cat "$WORK/sim_$model.out")"; continue
  fi
  verdict=$(python3 - "$WORK/live.json" "$WORK/sim_$model.json" "$STEP_TOLERANCE" "$BYTES_TOLERANCE" "$model" <<'PY'
import json, sys
live, sim = (json.load(open(p)) for p in sys.argv[1:3])
step_tol, bytes_tol, model = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
later = sorted(live["step_seconds"][1:])
median = later[len(later) // 2] if len(later) % 2 else (later[len(later) // 2 - 1] + later[len(later) // 2]) / 2
worst_ok = True
parts = []
# Behind relays the live bytes_down is what left the PS (to the relays);
# the simulator's bytes_down is what reached the devices, and what left
# the PS is ps_bytes_down_per_step.
sim_down = sim["ps_bytes_down_per_step"] * sim["steps"] if "relays" in sim else sim["bytes_down"]
if "relays" in sim:
    parts.append(f"PS egress over once per relay live {live['bytes_down_over_once_per_holder']:.3f} "
                 f"sim {sim['ps_egress_over_relay_unique']:.3f}")
for key, l, s, tol in [("step_seconds", median, sim["mean_step_seconds"], step_tol),
                       ("bytes_down", live["bytes_down"], sim_down, bytes_tol),
                       ("bytes_up", live["bytes_up"], sim["bytes_up"], bytes_tol)]:
    r = s / l - 1 if l else float("inf")
    worst_ok &= abs(r) <= tol
    parts.append(f"{key} live {l:.4g} sim {s:.4g} ({100 * r:+.1f}%)")
# The step's two parts, for where a residual comes from: the wait on
# devices (the links) and the rest (the PS's own work: issuing tiles,
# row-wise ops, the optimizer). Means over the run, as the reports keep them.
lw, sw = live["step_split_seconds"]["wait_on_devices"], sim["step_split_seconds"]["wait_on_devices"]
parts.append(f"wait on devices live {lw:.3f} sim {sw:.3f} ({100 * (sw / lw - 1):+.1f}%), the rest live "
             f"{sum(live['step_seconds']) / len(live['step_seconds']) - lw:.3f} sim {sim['mean_step_seconds'] - sw:.3f}")
parts.append(f"live failures {live['failures_detected']}, tiles live {live['tiles']} sim {sim['tiles']}, "
             f"cache hits live {live['cache_hit_rate']:.3f} sim {sim['cache_hit_rate']:.3f}")
print(("ok" if worst_ok else "MISS") + f": {model} link model: " + "; ".join(parts))
PY
)
  echo "$verdict"
  if [[ $model == "$LINK_MODEL" ]]; then
    checked=1
    [[ $verdict == ok* ]] || fail "past the tolerance (step $STEP_TOLERANCE, bytes $BYTES_TOLERANCE) under the link model the docs say TCP follows: $verdict"
  fi
done
((checked)) || fail "no simulation under the link model LINK_MODEL=$LINK_MODEL"
finish
