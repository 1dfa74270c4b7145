#!/usr/bin/env bash
# Devices fed by shard processes (docs/PS_SHARDS.md, phase
# 3): a coordinator (--role=ps --shards --listen, hosting the planner that
# welcomes devices), two --role=ps-shard processes each with its own device
# edge (--edge) and four device processes train mlp and gpt small (context
# 64, batch 8) for 50 steps. Every per-step loss is the in-process
# --devices=0 run's within 1e-4 relative, and the in-process --ps-shards=2
# run's on the same four devices bit for bit (the same tile cut). Both
# shards sent tiles to devices (per_shard: tiles, bytes down and up, from
# each shard's stats). In the mlp run one device is killed after step 10:
# both shards drop it and move its tiles, and the losses hold. A join to a
# shard's edge without the coordinator's proof is refused with the reason.
# The gpt run's console shows both shards' tiles and memory, and passes the
# console's schema. gpt's planner is told a 1 GB/s PS link (mlp's 1e12, as
# multiprocess.sh) so that its operands stay near 1.4 GB a shard over
# loopback and the whole test near a minute on this 2-core host.
source "$(dirname "$0")/lib.sh"
export CONSOLE_HTTP=$(cd "$(dirname "$0")" && pwd)  # console_http.py, console_state_schema.py
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

common=(--steps=50 --threads=1 --eval-tokens=256 --log-level=info --progress-seconds=0.1)

start_shard() {  # start_shard NAME: sets port_NAME and pid_NAME
  : > "$1.log"
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --edge=127.0.0.1:0 --threads=1 >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  local p; p=$(wait_port "$1.log")
  [[ -n $p ]] || fail "shard $1 did not start: $(cat "$1.log")"
  printf -v "port_$1" %s "$p"
}


# forged_join PORT: joins a shard's edge with a made-up proof; prints the refusal.
forged_join() {
  python3 - "$1" "$SCHEMA" <<'PY'
import socket, struct, sys
port, schema = int(sys.argv[1]), int(sys.argv[2])
header = lambda kind, n: struct.pack("<IHHQQ", 0x46564C43, 1, kind, n, 0)
token = b"job:0:" + b"0" * 64
name = b"forger"
join = (struct.pack("<IH", schema, len(name)) + name + struct.pack("<dQddd", 1e13, 8 << 30, 1e10, 1e10, 1e-4)
        + struct.pack("<H", len(token)) + token + struct.pack("<H", 0))
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(header(0xFF00, 16) + struct.pack("<QQ", 1 << 26, 256 << 20) + header(1, len(join)) + join)
data = b""
try:
    while b"did not give" not in data:
        chunk = s.recv(4096)
        if not chunk: break
        data += chunk
except OSError:
    pass
print(data[-300:].decode("latin-1").replace("\0", ""))
PY
}
SCHEMA=$(grep -o "message_schema_version = [0-9]*" "$CONSOLE_HTTP/../../schema/messages.hpp" | grep -o "[0-9]*$")

compare() {  # compare MODEL: the processes' losses against the references
  python3 - "$1" <<'PY'
import json, os, sys
m = sys.argv[1]
got = json.load(open(f"{m}-procs.json"))
problems, notes = [], []
def worst(ref):
    return max(abs(a - b) / abs(a) for a, b in zip(ref["losses"], got["losses"]))
for name in ("ref", "inproc"):
    if not os.path.exists(f"{m}-{name}.json"): continue
    ref = json.load(open(f"{m}-{name}.json"))
    if len(ref["losses"]) != 50 or len(got["losses"]) != 50:
        problems.append(f"{len(got['losses'])} steps against {len(ref['losses'])}")
        continue
    w = worst(ref)
    if w > 1e-4: problems.append(f"losses differ from the {name} run by {w:.2e} relative")
    # The same fleet in one process cuts the same tiles: the same bits.
    if name == "inproc" and ref["losses"] != got["losses"]:
        problems.append(f"losses differ from the in-process --ps-shards=2 fleet's (worst {w:.1e})")
    notes.append(f"{name}: " + ("equal" if ref["losses"] == got["losses"] else f"worst {w:.1e}"))
shards = got.get("per_shard", [])
if len(shards) != 2: problems.append(f"per_shard has {len(shards)} entries")
for s in shards:
    if not (s.get("tiles", 0) > 0 and s.get("bytes_down", 0) > 0 and s.get("bytes_up", 0) > 0):
        problems.append(f"shard {s.get('shard')} sent no tiles to devices")
    if not 0 < s.get("step_share", 0) <= 1.05:
        problems.append(f"shard {s.get('shard')}'s share of the step is {s.get('step_share')}")
print("; ".join(problems) or "ok: " + ", ".join(notes) + "; " + ", ".join(
    f"shard {s['shard']} {s['tiles']} tiles, {s['bytes_down'] / 1e6:.0f} MB down, {s['bytes_up'] / 1e6:.0f} MB up"
    for s in shards))
PY
}

for model in mlp gpt; do
  flags=(--model=$model "${common[@]}")
  if [[ $model == gpt ]]; then flags+=(--context=64 --batch=8 --ps-egress=1e9 --ps-flops=1e9)
  else flags+=(--ps-egress=1e12 --ps-flops=1e9); fi
  "$CLEAVE" --role=all --devices=0 "${flags[@]}" --log-level=warn --report=$model-ref.json \
    || fail "$model reference run failed"
  "$CLEAVE" --role=all --ps-shards=2 --devices=4 --profile=fast "${flags[@]}" --log-level=warn \
    --report=$model-inproc.json || fail "$model in-process fleet run failed"
  start_shard a; start_shard b
  admin=()
  [[ $model == gpt ]] && admin=(--admin=127.0.0.1:0)
  timeout 300 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b --listen=127.0.0.1:0 \
    --min-devices=4 "${flags[@]}" "${admin[@]}" --report=$model-procs.json > $model-coord.log 2>&1 &
  coordinator=$!
  port=$(wait_port $model-coord.log)
  [[ -n $port ]] || { fail "$model: the coordinator did not open its edge: $(tail -3 $model-coord.log)"; continue; }
  devices=()
  for i in 1 2 3 4; do
    "$CLEAVE" --role=device --connect=127.0.0.1:$port --profile=fast --threads=1 --reconnect-seconds=0 \
      > $model-device-$i.log 2>&1 &
    devices+=($!)
  done
  if [[ $model == mlp ]]; then
    # A join to a shard's edge needs the coordinator's proof of the device's id.
    edge=$(logged_port a.log "devices join its edge on port ")
    out=$(forged_join "$edge" 2>&1)
    [[ $out == *"did not give"* ]] || fail "a forged shard join was not refused: $out"
    # A device killed mid-run: both shards' engines drop it and move its tiles.
    for _ in $(seq 1 600); do grep -q "step [1-9][0-9]/" $model-coord.log && break; sleep 0.05; done
    kill -9 "${devices[3]}"
    wait "${devices[3]}" 2>/dev/null
    unset 'devices[3]'
  fi
  if [[ $model == gpt ]]; then
    # The console shows each shard process's side as the run goes: tiles,
    # bytes, its slices' memory and its process's resident memory.
    out=$(python3 - "$(console_port $model-coord.log)" <<'PY'
import json, os, sys, time
sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import get
from console_state_schema import check
port, doc, problems = int(sys.argv[1]), None, []
for _ in range(200):
    doc = json.loads(get(port, "/api/state")[1])
    shards = (doc.get("training") or {}).get("shards") or []
    if len(shards) == 2 and all(s["tiles"] > 0 for s in shards): break
    time.sleep(0.1)
else:
    problems.append(f"the console never showed both shards sending tiles: {shards}")
problems += check(doc)
if not all(s.get("shard_peak_rss_bytes", 0) > 0 and s["memory_bytes"] > 0 for s in shards):
    problems.append(f"a shard without its memory: {shards}")
metrics = get(port, "/metrics")[1].decode()
if metrics.count("cleave_ps_shard_peak_resident_bytes{") != 2:
    problems.append("/metrics lacks each shard's resident memory")
print("; ".join(problems) or "ok: console shows " + ", ".join(
    f"shard {s['shard']} {s['tiles']} tiles, {s['shard_peak_rss_bytes'] >> 20} MiB resident" for s in shards))
PY
)
    [[ $out == ok* ]] || fail "gpt console: $out"
    echo "$out"
  fi
  wait $coordinator || fail "$model over shard processes: $(tail -3 $model-coord.log)"
  if [[ $model == mlp ]]; then
    for s in a b; do grep -q "planner: device [0-9]* is dead" $s.log || fail "shard $s did not drop the killed device"; done
  fi
  for pid in "${devices[@]}" $pid_a $pid_b; do
    timeout 10 tail --pid=$pid -f /dev/null
    wait $pid || fail "$model: a device or shard exited with $?"
  done
  grep -q "connected to PS shard 1's edge" $model-device-1.log || fail "$model: device 1 did not reach shard 1"
  if [[ -s $model-procs.json ]]; then
    verdict=$(compare $model)
    [[ $verdict == ok* ]] || fail "$model: $verdict"
    echo "$model: $verdict"
  fi
done
finish
