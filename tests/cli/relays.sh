#!/usr/bin/env bash
# Relays (--role=relay) on loopback. (1) A ps, 2 relay processes and 8
# device processes (4 behind each) train mlp and gpt small for 50 steps with
# the in-process fleet's trajectory bit for bit, and the bytes leaving the
# ps are at most 1.5x what they would be if every operand left it once per
# relay. (2) kill -9 of one relay mid-training: training finishes with the
# undisturbed losses, and its devices rejoin through the ps itself; then the
# other relay hangs (SIGSTOP): the detector declares its devices dead and
# training still finishes undisturbed on the four that rejoined. (3) With
# TLS: the relay shows the ps a server certificate of the job's CA and
# admits only devices with the CA's certificates, or with a join token the
# ps trades for one; a relay whose name is not its certificate's is refused. (4) A device whose join carries a relay's
# seat is refused at the relay's door, with the reason. Each relay holds one
# connection to the ps for all its devices.
source "$(dirname "$0")/lib.sh"

# vm devices and a slow PS make the planner spread every product over all
# eight devices, so blocks are shared between the devices behind a relay.
cost=(--ps-egress=1e12 --ps-flops=1e8)
mlp=(--model=mlp --steps=50 --threads=1 --progress-seconds=60)
gpt=(--model=gpt --context=32 --batch=4 --eval-tokens=2048 --steps=50 --threads=1 --progress-seconds=60)

wait_for() {  # wait_for SECONDS COMMAND...: polls until COMMAND succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.05; done
}

# relayed NAME DEVICE_FLAGS TRAIN_FLAGS...: a ps, relays r1 and r2, 4 devices
# behind each; each device falls back to the ps itself when its relay is lost.
# Sets ps, relay_pids, device_pids (behind r1, then r2); returns once the
# devices are started.
relayed() {
  local name=$1 devflags=$2; shift 2
  "$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=8 "${cost[@]}" "$@" \
    --report="$WORK/$name.json" > "$WORK/$name-ps.log" 2>&1 &
  ps=$!
  local port; port=$(wait_port "$WORK/$name-ps.log")
  [[ -n $port ]] || { fail "$name: the ps did not start: $(tail -3 "$WORK/$name-ps.log")"; return 1; }
  relay_pids=() device_pids=()
  local r
  for r in 1 2; do
    "$CLEAVE" --role=relay --connect="127.0.0.1:$port" --listen=127.0.0.1:0 --relay-name="r$r" \
      --relay-memory=1e9 > "$WORK/$name-relay$r.log" 2>&1 &
    relay_pids+=($!)
    local rport; rport=$(wait_port "$WORK/$name-relay$r.log")
    [[ -n $rport ]] || { fail "$name: relay r$r did not start: $(tail -3 "$WORK/$name-relay$r.log")"; return 1; }
    for i in 1 2 3 4; do
      "$CLEAVE" --role=device --connect="127.0.0.1:$rport,127.0.0.1:$port" --profile=vm --threads=1 \
        --log-level=info $devflags > "$WORK/$name-dev$r$i.log" 2>&1 &
      device_pids+=($!)
    done
  done
}

# finish_run NAME: waits for the ps, then stops the relays (they log their counts).
finish_run() {
  timeout 300 tail --pid=$ps -f /dev/null
  wait $ps || fail "$1: the ps failed: $(tail -3 "$WORK/$1-ps.log")"
  kill -TERM "${relay_pids[@]}" 2>/dev/null
  wait 2>/dev/null
}

# egress NAME: the ps's bytes over once per holder (each relay), at most 1.5.
egress() {
  python3 - "$WORK/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ratio, once = d["bytes_down_over_once_per_holder"], d["bytes_down_over_once"]
print(f"{ratio:.3f} {once:.3f}")
sys.exit(0 if 0 < ratio <= 1.5 else 1)
PY
}

for model in mlp gpt; do
  declare -n flags=$model
  "$CLEAVE" --role=all --devices=8 --profile=vm --unpaced-devices "${cost[@]}" "${flags[@]}" --log-level=warn \
    --report="$WORK/$model-ref.json" || fail "$model: in-process run failed"
  relayed "$model" "--reconnect-seconds=0 --log-level=warn" "${flags[@]}" || continue
  finish_run "$model"
  verdict=$(same_trajectory "$WORK/$model-ref.json" "$WORK/$model.json")
  [[ $verdict == equal ]] && echo "ok: $model through 2 relays equals the in-process fleet" || fail "$model: $verdict"
  if figures=$(egress "$model"); then
    echo "ok: $model: the ps sent $(cut -d' ' -f1 <<< "$figures")x the bytes of every operand once per relay ($(cut -d' ' -f2 <<< "$figures")x once in all)"
  else
    fail "$model: the ps's egress over once per relay is $figures"
  fi
  grep -q "edge: 2 connections (2 of relays), 8 devices admitted" "$WORK/$model-ps.log" \
    && echo "ok: $model: the ps held one connection per relay for their 8 devices" \
    || fail "$model: the ps's edge: $(grep -o 'edge: [0-9]* connections.*admitted' "$WORK/$model-ps.log")"
  grep -q "store: [1-9][0-9]* blocks in" "$WORK/$model-relay1.log" || fail "$model: relay r1 kept no block"
  grep -q "[1-9][0-9]* served" "$WORK/$model-relay1.log" || fail "$model: relay r1 served no block from its store"
done

# 4. A join with a relay's seat after it, sent by hand to a relay: refused
# with the reason, then closed (a relay speaks for itself in its own hello).
"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=1 "${mlp[@]}" > "$WORK/forged-ps.log" 2>&1 &
forged_ps=$!
fport=$(wait_port "$WORK/forged-ps.log")
"$CLEAVE" --role=relay --connect="127.0.0.1:$fport" --listen=127.0.0.1:0 > "$WORK/forged-relay.log" 2>&1 &
forged_relay=$!
rport=$(wait_port "$WORK/forged-relay.log")
verdict=$(python3 - "$rport" "$CLI_DIR/../../schema/messages.hpp" <<'PY'
import re, socket, struct, sys
version = int(re.search(r"message_schema_version = (\d+);", open(sys.argv[2]).read()).group(1))
def header(kind, length): return struct.pack("<IHHQQ", 0x46564C43, 1, kind, length, 0)
hello = header(0xFF00, 16) + struct.pack("<QQ", 1 << 26, 256 << 20)
name = b"liar"
join = (struct.pack("<IH", version, len(name)) + name + struct.pack("<dQddd", 1e10, 1 << 30, 1e7, 1e7, 0.01)
        + struct.pack("<HH", 0, 0) + struct.pack("<H", 1) + b"x" + struct.pack("<Qdddd", 1 << 20, 1e9, 1e9, 1e9, 0.0))
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(hello + header(1, len(join)) + join)
s.settimeout(10)
got = b""
while True:
    chunk = s.recv(4096)
    if not chunk: break
    got += chunk
print("refused" if b"join frame: 43 trailing bytes" in got else f"no refusal in {len(got)} bytes: {got[-80:]}")
PY
)
[[ $verdict == refused ]] && echo "ok: a device's join that carries a relay's seat is refused at the relay, with the reason" \
  || fail "a join with a relay's seat: $verdict"
kill -9 $forged_relay $forged_ps; wait $forged_relay $forged_ps 2>/dev/null

# 2. kill -9 of relay r1 mid-training, then SIGSTOP of relay r2.
gpt_long=("${gpt[@]}" --steps=100)
"$CLEAVE" --role=all --devices=8 --profile=vm --unpaced-devices "${cost[@]}" "${gpt_long[@]}" --log-level=warn \
  --report="$WORK/killed-ref.json" || fail "in-process run failed"
if relayed killed "--reconnect-seconds=30" "${gpt_long[@]}"; then
  wait_for 60 grep -q "training gpt" "$WORK/killed-ps.log" || fail "training did not start"
  sleep 3
  kill -9 "${relay_pids[0]}"
  rejoined() { (($(grep -l "reconnected to 127.0.0.1" "$WORK"/killed-dev1*.log 2>/dev/null | wc -l) == 4)); }
  wait_for 30 rejoined || fail "the killed relay's devices did not rejoin the ps within 30 s"
  kill -STOP "${relay_pids[1]}"
  timeout 300 tail --pid=$ps -f /dev/null
  # Behind the hung relay its devices never heard the run end: let it go, and stop them.
  kill -CONT "${relay_pids[1]}"
  kill -9 "${device_pids[@]:4}" 2>/dev/null
  finish_run killed
  verdict=$(same_trajectory "$WORK/killed-ref.json" "$WORK/killed.json")
  [[ $verdict == equal ]] && echo "ok: a relay killed and another hung mid-training leave the trajectory undisturbed" \
    || fail "relay killed: $verdict"
  dead=$(grep -c "is dead" "$WORK/killed-ps.log")
  ((dead >= 8)) && echo "ok: the ps saw both relays' devices die ($dead deaths)" \
    || fail "the ps saw $dead devices die, expected the 8 behind the killed and the hung relay"
  rejoined && echo "ok: the killed relay's 4 devices rejoined through the ps"
  python3 - "$WORK/killed.json" <<'PY' || fail "relay killed: the report"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["losses"]) == 100, len(d["losses"])
assert d["failures_detected"] >= 8, d["failures_detected"]
print(f"  {d['failures_detected']} failures detected, {d['tiles_reassigned']} tiles reassigned", file=sys.stderr)
PY
fi
# 3. TLS: ps, relay and devices with the job CA's certificates (deploy/ca.sh).
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"
job_cas
for s in ps relay1; do bash "$ca_sh" issue ca $s server > /dev/null; done
for d in dev1 dev2; do bash "$ca_sh" issue ca $d device > /dev/null; done
tls() { echo "--tls-cert=ca/$1.pem --tls-key=ca/$1.key --tls-ca=ca/ca.pem"; }
short=(--model=mlp --steps=20 --threads=1 --progress-seconds=60)
"$CLEAVE" --role=all --devices=2 --profile=vm --unpaced-devices "${cost[@]}" "${short[@]}" --log-level=warn \
  --report=tls-ref.json || fail "in-process run failed"
bash "$ca_sh" tokens ca 1 > /dev/null
token=$(grep -v '^#' ca/tokens | head -1)
"$CLEAVE" --role=ps --listen=127.0.0.1:0 $(tls ps) --tls-ca-key=ca/ca.key --join-tokens=ca/tokens --min-devices=2 \
  "${cost[@]}" "${short[@]}" --report=tls.json > tls-ps.log 2>&1 &
ps=$!
port=$(wait_port tls-ps.log)
# A relay that calls itself by another name than its certificate's is turned away.
"$CLEAVE" --role=relay --connect="127.0.0.1:$port" --listen=127.0.0.1:0 $(tls relay1) --relay-name=impostor \
  > impostor.log 2>&1 &
impostor=$!
timeout 20 tail --pid=$impostor -f /dev/null
wait $impostor && fail "the impostor relay ran on"
grep -q "came with the certificate of 'relay1'" impostor.log \
  && echo "ok: a relay named otherwise than its certificate is refused, and ends" \
  || fail "the impostor relay: $(tail -2 impostor.log)"
# So is a relay hello over a device's (client-only) certificate, even under
# the name in it (by hand: --role=relay refuses to start with one).
verdict=$(python3 - "$port" "$CLI_DIR/../../schema/messages.hpp" <<'PY'
import re, socket, ssl, struct, sys
version = int(re.search(r"message_schema_version = (\d+);", open(sys.argv[2]).read()).group(1))
def frame(kind, payload): return struct.pack("<IHHQQ", 0x46564C43, 1, kind, len(payload), 0) + payload
ctx = ssl.create_default_context(cafile="ca/ca.pem")
ctx.load_cert_chain("ca/dev2.pem", "ca/dev2.key")
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="localhost")
name = b"dev2"
hello = struct.pack("<IH", version, len(name)) + name + struct.pack("<Qdddd", 1 << 30, 1e9, 1e9, 1e10, 0.005)
s.sendall(frame(0xFF00, struct.pack("<QQ", 1 << 26, 256 << 20)) + frame(20, hello))
s.settimeout(10)
got = b""
try:
    while chunk := s.recv(4096): got += chunk
except (ssl.SSLError, OSError): pass
print("refused" if b"came with a device's certificate" in got else f"no refusal in {len(got)} bytes")
PY
)
[[ $verdict == refused ]] && echo "ok: a relay hello over a device's certificate is refused" \
  || fail "a relay hello over a device's certificate: $verdict"
"$CLEAVE" --role=relay --connect="127.0.0.1:$port" --listen=127.0.0.1:0 $(tls relay1) --relay-name=relay1 \
  --relay-join-tokens > tls-relay.log 2>&1 &
relay_pids=($!)
rport=$(wait_port tls-relay.log)
# A device without a certificate is refused at the relay's door.
"$CLEAVE" --role=device --connect="127.0.0.1:$rport" --profile=vm --reconnect-seconds=0 > plain-dev.log 2>&1 \
  && fail "a device without TLS joined through the relay"
mkdir -p enrolled
# One device with its certificate, one that trades a join token through the relay for one.
"$CLEAVE" --role=device --connect="127.0.0.1:$rport" $(tls dev1) --profile=vm --threads=1 --reconnect-seconds=0 \
  > tls-dev1.log 2>&1 &
"$CLEAVE" --role=device --connect="127.0.0.1:$rport" --tls-cert=enrolled/new.pem --tls-key=enrolled/new.key \
  --tls-ca=ca/ca.pem --join-token="$token" --device-name=behind-relay --profile=vm --threads=1 \
  --reconnect-seconds=0 > tls-dev2.log 2>&1 &
finish_run tls
openssl x509 -in enrolled/new.pem -noout -subject 2>/dev/null | grep -q "behind-relay" \
  && grep -q "issued a certificate" tls-ps.log \
  && echo "ok: a device without a certificate traded a join token for one through the relay" \
  || fail "the join token through the relay: $(tail -2 tls-dev2.log)"
verdict=$(same_trajectory tls-ref.json tls.json)
[[ $verdict == equal ]] && echo "ok: TLS from devices to the relay and from the relay to the ps; the trajectory is the in-process one" \
  || fail "TLS through a relay: $verdict"
finish
