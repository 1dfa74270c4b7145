#!/usr/bin/env bash
# PS shard links under TLS (docs/PS_SHARDS.md): with --tls-*
# on both ends, a coordinator and two --role=ps-shard processes speak TLS 1.3
# against the job's CA (deploy/ca.sh) and train mlp to the in-process
# --ps-shards=2 run's losses, bit for bit. Turned away at the handshake, each
# with its reason in the shard's log, while the shard goes on serving: a
# coordinator without TLS, a device's certificate (client-only: it cannot
# attach to a shard's link), and another CA's certificate. A coordinator with
# TLS facing a plaintext shard stops and says so. Last, shards that feed
# devices: a device with a join token and no certificate enrols at the
# coordinator's edge and serves both shards' edges on the same connection.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"
job_cas
for s in coord shard_a shard_b; do bash "$ca_sh" issue ca $s server > /dev/null; done
bash "$ca_sh" issue ca phone device > /dev/null
bash "$ca_sh" issue other foreign server > /dev/null
tls() { echo "--tls-cert=$1.pem --tls-key=$1.key --tls-ca=ca/ca.pem"; }

train=(--model=mlp --steps=30 --threads=1 --eval-tokens=256 --log-level=warn)
"$CLEAVE" --role=all --ps-shards=2 --devices=0 "${train[@]}" --report=inproc.json > inproc.out 2>&1 \
  || fail "in-process run: $(tail -3 inproc.out)"

# start_shard NAME [flags...]: sets port_NAME and pid_NAME.
start_shard() {
  local name=$1; shift
  : > "$name.log"
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --threads=1 "$@" >> "$name.log" 2>&1 &
  printf -v "pid_$name" %s $!
  local p; p=$(wait_port "$name.log")
  [[ -n $p ]] || fail "shard $name did not start: $(cat "$name.log")"
  printf -v "port_$name" %s "$p"
}
start_shard a $(tls ca/shard_a)
start_shard b $(tls ca/shard_b)
grep -q "under TLS" a.log || fail "shard a does not say its link is under TLS: $(cat a.log)"
shards="--shards=127.0.0.1:$port_a,127.0.0.1:$port_b"

# The intruders first; shard a must turn each away and go on serving.
timeout 30 "$CLEAVE" --role=ps $shards "${train[@]}" > plain.out 2>&1 \
  && fail "a coordinator without TLS trained over TLS shards"
grep -q "takes only a coordinator with --tls-\*" plain.out \
  || fail "the plaintext coordinator did not say why: $(tail -2 plain.out)"
openssl s_client -connect "127.0.0.1:$port_a" -CAfile ca/ca.pem -cert ca/phone.pem -key ca/phone.key \
  -quiet < /dev/null > /dev/null 2>&1
timeout 30 "$CLEAVE" --role=ps $shards $(tls other/foreign) --tls-ca=other/ca.pem "${train[@]}" > foreign.out 2>&1 \
  && fail "a coordinator with another CA's certificate trained"
sleep 0.5
grep -q "not a TLS 1.3 peer" a.log || fail "shard a did not say why it refused a plaintext coordinator: $(cat a.log)"
grep -q "certificate not valid for this role" a.log \
  || fail "shard a took a device's certificate on its link, or did not say why: $(cat a.log)"
grep -q "unknown CA" a.log || fail "shard a did not refuse another CA's certificate: $(cat a.log)"
echo "ok: a plaintext coordinator, a device's certificate and another CA's are turned away at the handshake"

timeout 120 "$CLEAVE" --role=ps $shards $(tls ca/coord) "${train[@]}" --report=tls.json > tls.out 2>&1 \
  || fail "the coordinator over TLS shard links failed: $(tail -3 tls.out)"
for pid in $pid_a $pid_b; do
  timeout 10 tail --pid=$pid -f /dev/null
  wait $pid || fail "a shard exited with $?: $(tail -n 2 a.log b.log)"
done
verdict=$(python3 - inproc.json tls.json <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
if not ref["losses"] or got["losses"] != ref["losses"]:
    print(f"losses differ ({len(got['losses'])} steps against {len(ref['losses'])})")
elif len(got.get("per_shard", [])) != 2 or not all(s.get("bytes_to_shard", 0) > 0 for s in got["per_shard"]):
    print("the report does not show both shards' traffic")
else:
    print("equal")
PY
)
[[ $verdict == equal ]] && echo "ok: mlp over TLS shard links equals the in-process 2-shard run bit for bit" \
  || fail "TLS run: $verdict"

# A coordinator with TLS does not fall back to a plaintext shard.
start_shard plain
timeout 30 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_plain $(tls ca/coord) "${train[@]}" > downgrade.out 2>&1 \
  && fail "a TLS coordinator trained over a plaintext shard"
grep -q "takes only shards started with --tls-\*" downgrade.out \
  && echo "ok: a TLS coordinator refuses a plaintext shard: $(tail -1 downgrade.out)" \
  || fail "the coordinator did not say the shard spoke no TLS: $(tail -3 downgrade.out)"
kill $pid_plain 2>/dev/null; wait $pid_plain 2>/dev/null

# Shards that feed devices, all under TLS: a device with a join token and no
# certificate trades the token at the coordinator's edge, and shows the
# certificate it got to both shards' edges on the same connection.
bash "$ca_sh" tokens ca 1 > /dev/null
token=$(grep -v '^#' ca/tokens | head -1)
start_shard ea $(tls ca/shard_a) --edge=127.0.0.1:0
start_shard eb $(tls ca/shard_b) --edge=127.0.0.1:0
cost=(--ps-egress=1e12 --ps-flops=1e9)  # the planner splits the mlp's products
timeout 120 "$CLEAVE" --role=ps --shards=127.0.0.1:$port_ea,127.0.0.1:$port_eb --listen=127.0.0.1:0 \
  $(tls ca/coord) --tls-ca-key=ca/ca.key --join-tokens=ca/tokens --min-devices=1 "${cost[@]}" "${train[@]}" \
  --log-level=info \
  --report=enrolled.json > coord.log 2>&1 &
coordinator=$!
port=$(wait_port coord.log)
[[ -n $port ]] || fail "the coordinator did not open its edge: $(tail -3 coord.log)"
mkdir -p newdev
"$CLEAVE" --role=device --connect=127.0.0.1:$port --profile=fast --threads=1 --reconnect-seconds=0 \
  --join-token="$token" --device-name=field-phone-9 --tls-cert=newdev/me.pem --tls-key=newdev/me.key \
  --tls-ca=ca/ca.pem > newdev.log 2>&1 &
device=$!
wait $coordinator || fail "the coordinator with an enrolling device failed: $(tail -3 coord.log)"
wait $device 2>/dev/null
[[ -s newdev/me.pem ]] || fail "the device got no certificate: $(tail -3 newdev.log)"
tiles=$(python3 -c "import json,sys; print(' '.join(str(s.get('tiles', 0)) for s in json.load(open(sys.argv[1]))['per_shard']))" enrolled.json)
read -r ta tb <<< "$tiles"
((ta > 0 && tb > 0)) && echo "ok: an enrolled device serves both shards on its first connection (tiles $ta and $tb)" \
  || fail "a device that enrolled did not serve both shards (tiles: $tiles): $(grep -h -i 'refused\|warn' ea.log eb.log newdev.log | head -3)"
finish
