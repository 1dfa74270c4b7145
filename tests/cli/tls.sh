#!/usr/bin/env bash
# The device edge under TLS, with real processes on loopback and a job CA made
# by deploy/ca.sh. Four devices with certificates the CA signed train with a
# ps that checks them against the CA and its revocation list, and give the
# in-process trajectory exactly. Turned away at the handshake, each with its
# reason in the ps's log: a device without TLS, a client without a
# certificate, a revoked device (which exits 1 at once, saying so) and a
# certificate from another CA. A device whose certificate another CA signed
# refuses to start. Then detector, planner and ps as separate processes speak
# BASP under CAF's mutual TLS and train with the same devices.
source "$(dirname "$0")/lib.sh"
CLEAVE=$(realpath "$CLEAVE")
cd "$WORK"
job_cas
for s in ps planner detector; do bash "$ca_sh" issue ca $s server > /dev/null; done
for d in dev1 dev2 dev3 dev4 stolen; do bash "$ca_sh" issue ca $d device > /dev/null; done
bash "$ca_sh" issue other foreign device > /dev/null
bash "$ca_sh" revoke ca stolen > /dev/null
tls() { echo "--tls-cert=ca/$1.pem --tls-key=ca/$1.key --tls-ca=ca/ca.pem"; }

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
train=(--model=mlp --steps=100 --threads=1 --progress-seconds=30)
"$CLEAVE" --role=all --devices=4 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --report=inproc.json || fail "in-process run failed"

devices() {  # devices PORT LOGPREFIX: the four valid devices
  for d in dev1 dev2 dev3 dev4; do
    "$CLEAVE" --role=device --connect="127.0.0.1:$1" $(tls $d) --profile=fast --threads=1 \
      --reconnect-seconds=0 > "$2-$d.log" 2>&1 &
  done
}

# 1. A ps hosting its planner and detector; its edge checks the CRL.
"$CLEAVE" --role=ps --listen=127.0.0.1:0 $(tls ps) --tls-crl=ca/crl.pem --min-devices=4 "${cost[@]}" \
  "${train[@]}" --report=hosted.json > ps.log 2>&1 &
ps=$!
port=$(wait_port ps.log)
[[ -n $port ]] || fail "the ps did not start: $(cat ps.log)"
# The intruders first, so they meet the ps while it waits for its quorum.
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --reconnect-seconds=0 > plain.log 2>&1
plain_rc=$?
openssl s_client -connect "127.0.0.1:$port" -CAfile ca/ca.pem -quiet < /dev/null > /dev/null 2>&1
openssl s_client -connect "127.0.0.1:$port" -CAfile ca/ca.pem -cert other/foreign.pem \
  -key other/foreign.key -quiet < /dev/null > /dev/null 2>&1
"$CLEAVE" --role=device --connect="127.0.0.1:$port" $(tls stolen) --profile=fast \
  --reconnect-seconds=30 > stolen.log 2>&1
stolen_rc=$?
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --tls-cert=other/foreign.pem --tls-key=other/foreign.key \
  --tls-ca=ca/ca.pem --profile=fast > foreign.log 2>&1
foreign_rc=$?
devices "$port" hosted
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "the ps failed: $(tail -3 ps.log)"
wait

((plain_rc != 0)) || fail "a device without TLS was not turned away"
grep -q "not a TLS 1.3 peer" ps.log || fail "the ps did not say why it refused a device without TLS"
grep -q "TLS handshake refused: no certificate" ps.log || fail "a client without a certificate was not refused"
grep -q "TLS handshake refused: unknown CA" ps.log || fail "another CA's certificate was not refused"
((stolen_rc == 1)) || fail "the revoked device exited $stolen_rc, expected 1 at once"
grep -q "certificate revoked" stolen.log || fail "the revoked device did not say why: $(tail -2 stolen.log)"
grep -q "certificate revoked (peer certificate 'stolen')" ps.log || fail "the ps did not log the revocation"
((foreign_rc == 2)) && grep -q "is not signed by the CA" foreign.log \
  || fail "a device with another CA's certificate started: $(cat foreign.log)"
joined=$(grep -c "joined from 'dev" ps.log)
((joined == 4)) || fail "$joined of 4 certified devices joined"

# 2. Detector, planner and ps as processes: BASP under mutual TLS.
"$CLEAVE" --role=detector --listen=127.0.0.1:0 $(tls detector) > det.log 2>&1 &
det=$!
dport=$(wait_port det.log)
"$CLEAVE" --role=planner --listen=127.0.0.1:0 --detector="127.0.0.1:$dport" $(tls planner) --min-devices=4 \
  "${cost[@]}" > pln.log 2>&1 &
pln=$!
pport=$(wait_port pln.log)
[[ -n $dport && -n $pport ]] || fail "detector or planner did not start: $(cat det.log pln.log)"
"$CLEAVE" --role=ps --planner="127.0.0.1:$pport" --listen=127.0.0.1:0 $(tls ps) --tls-crl=ca/crl.pem \
  "${train[@]}" --report=split.json > split.log 2>&1 &
ps=$!
port=$(wait_port split.log)
devices "$port" split
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "the ps with a planner process failed: $(tail -3 split.log)"
grep -q "under mutual TLS" pln.log || fail "the planner's BASP port is not under TLS"
kill -TERM $pln $det 2>/dev/null
wait 2>/dev/null

# 3. Join tokens: a device with no certificate trades a one-time token for
# one; the same token does not work twice; the device comes back with its
# certificate.
bash "$ca_sh" tokens ca 1 > /dev/null
token=$(grep -v '^#' ca/tokens | head -1)
short=(--model=mlp --steps=20 --threads=1 --progress-seconds=30)
enrol() {  # enrol NAME REPORT [device flags...]: a ps with tokens and one device
  local name=$1 report=$2; shift 2
  "$CLEAVE" --role=ps --listen=127.0.0.1:0 $(tls ps) --tls-crl=ca/crl.pem --tls-ca-key=ca/ca.key \
    --join-tokens=ca/tokens --min-devices=1 "${cost[@]}" "${short[@]}" --report="$report" > "$name-ps.log" 2>&1 &
  local p=$!
  local port; port=$(wait_port "$name-ps.log")
  "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 --reconnect-seconds=0 \
    --tls-cert=enrolled/new.pem --tls-key=enrolled/new.key --tls-ca=ca/ca.pem "$@" > "$name-dev.log" 2>&1
  local rc=$?
  kill -TERM $p 2>/dev/null; wait $p 2>/dev/null
  return $rc
}
mkdir -p enrolled
enrol first first.json --join-token="$token" --device-name=field-phone-7 \
  || fail "the device with a join token did not train: $(tail -3 first-dev.log)"
[[ -s enrolled/new.pem ]] || fail "no certificate was written"
[[ $(stat -c %a enrolled/new.key) == 600 ]] || fail "the device key is readable by others"
openssl x509 -in enrolled/new.pem -noout -subject | grep -q "field-phone-7" || fail "the certificate names another device"
grep -q "issued a certificate" first-ps.log || fail "the ps did not log the certificate it issued"
grep -q "$token" ca/tokens && fail "the used token is still in the file"
mkdir -p thief
"$CLEAVE" --role=ps --listen=127.0.0.1:0 $(tls ps) --tls-ca-key=ca/ca.key --join-tokens=ca/tokens \
  --min-devices=1 "${short[@]}" > reuse-ps.log 2>&1 &
p=$!
port=$(wait_port reuse-ps.log)
"$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --reconnect-seconds=0 \
  --tls-cert=thief/t.pem --tls-key=thief/t.key --tls-ca=ca/ca.pem --join-token="$token" > reuse.log 2>&1
(($? == 1)) && grep -q "unknown or already used join token" reuse.log \
  || fail "a used token was honoured again: $(tail -2 reuse.log)"
kill -TERM $p 2>/dev/null; wait $p 2>/dev/null
enrol again again.json --join-token="$token" || fail "the enrolled device did not come back: $(tail -3 again-dev.log)"
grep -q "joined from 'field-phone-7'" again-ps.log || fail "the device did not come back with its certificate"

for run in hosted split; do
  verdict=$(same_trajectory inproc.json "$run.json")
  [[ $verdict == equal ]] && echo "ok: $run: devices over TLS give the in-process trajectory" || fail "$run: $verdict"
done
finish
