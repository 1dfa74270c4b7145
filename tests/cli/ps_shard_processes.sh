#!/usr/bin/env bash
# PS shards as processes (docs/PS_SHARDS.md): two
# --role=ps-shard processes on loopback and a --role=ps --shards coordinator
# train mlp and gpt small; every per-step loss equals the in-process
# --role=all --ps-shards=2 --devices=0 run's, bit for bit, and so does an
# mlp run resumed from a checkpoint set (the coordinator's file and each
# shard's own) on new shard processes, which load their own files. gpt runs at
# context 64 and batch 8 (as ps_link.sh) so that its 50 steps, through the
# loopback frames, stay near 20 s on this 2-core host (the default batch
# takes about 100 s for the two runs). The report's per_shard has each
# shard's bytes each way and its peak RSS. Then the failures: a coordinator
# pointed at a closed port fails fast and says which shard; a shard fed
# garbage and a lying frame refuses them and goes on serving; a shard killed
# mid-run stops the coordinator with the reason; flags that cannot go
# together are refused.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"

common=(--steps=50 --threads=1 --eval-tokens=256 --log-level=warn)

# start_shard NAME: a shard on an ephemeral loopback port, writing its own
# checkpoints into ck (shared with the coordinator); sets port_NAME and pid_NAME.
mkdir -p ck
start_shard() {
  : > "$1.log"  # emptied here, not in the child, so that wait_port cannot read the last shard's port
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 --checkpoint-dir=ck >> "$1.log" 2>&1 &
  printf -v "pid_$1" %s $!
  local p; p=$(wait_port "$1.log")
  [[ -n $p ]] || fail "shard $1 did not start: $(cat "$1.log")"
  printf -v "port_$1" %s "$p"
}

# compare NAME: the shard-process run's per-step losses against the in-process run's.
compare() {
  python3 - "$1-inproc.json" "$1-procs.json" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
problems = []
if len(got["losses"]) != len(ref["losses"]) or len(ref["losses"]) == 0:
    problems.append(f"{len(got['losses'])} steps, expected {len(ref['losses'])}")
elif got["losses"] != ref["losses"]:
    diff = [i for i, (a, b) in enumerate(zip(ref["losses"], got["losses"])) if a != b]
    problems.append(f"losses differ from step {diff[0] + 1} ({len(diff)} of {len(ref['losses'])} steps)")
shards = got.get("per_shard", [])
if len(shards) != 2: problems.append(f"per_shard has {len(shards)} entries")
for s in shards:
    if not s.get("bytes_to_shard_per_step", 0) > 0 or not s.get("bytes_from_shard_per_step", 0) > 0:
        problems.append(f"shard {s.get('shard')}: no bytes per step")
    if not s.get("shard_peak_rss_bytes", 0) > 1 << 20:
        problems.append(f"shard {s.get('shard')}: no peak RSS")
    if not 0 < s.get("shard_bytes_in", 0) <= s.get("bytes_to_shard", 0):  # payloads vs frames with headers
        problems.append(f"shard {s.get('shard')}: its count of bytes in does not match the coordinator's")
print("; ".join(problems) or "equal: " + ", ".join(
    f"shard {s['shard']} {s['bytes_to_shard_per_step'] / 1e6:.2f} MB to / {s['bytes_from_shard_per_step'] / 1e6:.2f} MB "
    f"from per step, peak RSS {s['shard_peak_rss_bytes'] / 2**20:.0f} MiB" for s in shards))
PY
}

for model in mlp gpt; do
  flags=(--model=$model "${common[@]}")
  [[ $model == gpt ]] && flags+=(--context=64 --batch=8)
  "$CLEAVE" --role=all --ps-shards=2 --devices=0 "${flags[@]}" --report=$model-inproc.json \
    > $model-inproc.out 2>&1 || fail "$model in-process run: $(tail -3 $model-inproc.out)"
  start_shard a; start_shard b
  [[ $model == mlp ]] && ck=(--checkpoint-dir=ck --checkpoint-every=25) || ck=()
  timeout 120 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b "${flags[@]}" "${ck[@]}" \
    --report=$model-procs.json > $model-procs.out 2>&1 || fail "$model over shard processes: $(tail -3 $model-procs.out)"
  # The shards leave with their coordinator, cleanly.
  for pid in $pid_a $pid_b; do
    timeout 10 tail --pid=$pid -f /dev/null
    wait $pid || fail "$model: a shard exited with $?: $(tail -n 2 a.log b.log)"
  done
  if [[ -s $model-inproc.json && -s $model-procs.json ]]; then
    verdict=$(compare $model)
    [[ $verdict == equal* ]] || fail "$model: $verdict"
    echo "$model: $verdict"
  fi
done

# The set of step 25 (the coordinator's file naming each shard's): resumed
# there on two new shard processes, which load their own files, the run goes
# on as the in-process run did.
rm -f ck/checkpoint-0000000050.clvck
start_shard a; start_shard b
timeout 120 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b --model=mlp "${common[@]}" \
  --checkpoint-dir=ck --resume --report=resumed.json > resumed.out 2>&1 || fail "resume: $(tail -3 resumed.out)"
wait $pid_a $pid_b
verdict=$(python3 - mlp-inproc.json resumed.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
ok = got.get("resumed_from_step") == 25 and got["losses"] == ref["losses"][25:]
print("equal" if ok else f"resumed at {got.get('resumed_from_step')}: losses differ from the in-process run's")
PY
)
[[ $verdict == equal ]] || fail "resume over shard processes: $verdict"

# A coordinator pointed at a closed port fails at once, naming the shard.
start_shard a
closed=$(free_port)
start=$(date +%s.%N)
out=$(timeout 20 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$closed --model=mlp --steps=2 2>&1) \
  && fail "a coordinator with an unreachable shard succeeded"
[[ $out == *"cannot reach the PS shard at 127.0.0.1:$closed"* ]] || fail "unclear refusal: $out"
python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $start < 10 else 1)" || fail "the unreachable shard took over 10 s"

# The shard that was reached goes on serving: garbage bytes, then a frame
# whose count lies, are refused and closed; it is still there afterwards.
head -c 4096 /dev/urandom > /dev/tcp/127.0.0.1/$port_a 2>/dev/null
python3 - $port_a <<'PY' > lying.out 2>&1 || fail "lying frame: $(cat lying.out)"
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
frame = lambda kind, tag, body: b"CLVF" + struct.pack("<HHQQ", 1, kind, len(body), tag) + body
s.sendall(frame(0xFF00, 0, struct.pack("<QQ", 1 << 26, 1 << 28)))   # hello
s.sendall(frame(0x101, 7, struct.pack("<I", 60000) + b"x" * 40))   # attach: 60000 parameters in 40 bytes
s.settimeout(5)
data = b""
while b"exceeds the cap" not in data:
    chunk = s.recv(4096)
    if not chunk: break
    data += chunk
print("refused" if b"exceeds the cap" in data else f"no refusal: {data[:200]!r}")
PY
grep -q '^refused' lying.out || fail "the lying attach was not refused: $(cat lying.out)"
sleep 0.3
kill -0 $pid_a 2>/dev/null || fail "the shard died on hostile input: $(tail -5 a.log)"
grep -q "bad frame magic" a.log || fail "the shard did not log the garbage: $(tail -5 a.log)"

# A shard killed mid-run stops the coordinator with the reason.
start_shard b
timeout 120 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_a,127.0.0.1:$port_b --model=gpt --steps=400 \
  --threads=1 --log-level=info > killed.out 2>&1 &
coordinator=$!
for _ in $(seq 1 300); do grep -q "step 1/\|training gpt" killed.out && break; sleep 0.05; done
sleep 1
kill -9 $pid_b
wait $coordinator && fail "the coordinator went on without a shard"
grep -q "PS shard 1 .*connection closed" killed.out || fail "unclear end: $(tail -n 2 killed.out)"
timeout 10 tail --pid=$pid_a -f /dev/null
wait $pid_a || fail "the surviving shard did not exit cleanly"

# Flags that do not go together.
for bad in "--role=ps --shards=127.0.0.1:1,127.0.0.1:2 --ps-shards=2|use one or the other" \
           "--role=ps --shards=127.0.0.1:1 --model=xc|--model=xc keeps its output layer" \
           "--role=ps --shards=localhost|has no valid port" \
           "--role=ps --shards=:4100|needs host:port" \
           "--role=ps --shards=127.0.0.1:1 --fleet=f.json|takes device processes at --listen" \
           "--role=all --edge=4000|--edge is for --role=ps-shard" \
           "--role=all --shards=127.0.0.1:1|--shards is for --role=ps" \
           "--role=ps --shards=127.0.0.1:1 --shard-wait-seconds=-1|--shard-wait-seconds must be between" \
           "--role=ps-shard|needs --listen"; do
  args=${bad%%|*} want=${bad#*|}
  # shellcheck disable=SC2086
  out=$("$CLEAVE" $args 2>&1) && fail "accepted: $args"
  [[ $out == *"$want"* ]] || fail "unclear refusal of '$args': $out"
done
many=$(python3 -c 'print(",".join(f"127.0.0.1:{p}" for p in range(1000, 1065)))')
out=$("$CLEAVE" --role=ps --shards=$many 2>&1) && fail "65 shards accepted"
[[ $out == *"more than 64 shards"* ]] || fail "unclear refusal of 65 shards: $out"
finish
