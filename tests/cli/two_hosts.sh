#!/usr/bin/env bash
# The "Two machines" section of docs/FLEET.md as written, on two hosts made of
# network namespaces joined by a veth pair (10.77.0.1 and 10.77.0.2; made
# here and removed at the end, traffic never leaves them): A runs the ps with
# TLS on 0.0.0.0:4100, B two devices with certificates from deploy/ca.sh. The
# devices train with tiles to the in-process trajectory; a device process on
# B that dials the ps by an address its certificate does not name is refused;
# a ps on A without TLS warns that its edge is exposed.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
CLEAVE=$(realpath "$CLEAVE")
((EUID == 0)) || { echo "FAIL: network namespaces need root"; exit 1; }
a=cleave-a-$$ b=cleave-b-$$
# `ip netns exec` waits on its command: stop a host's processes by namespace.
stop_host() { ip netns pids "$1" 2>/dev/null | xargs -r kill "-${2:-TERM}" 2>/dev/null; }
cleanup_hosts() {
  for ns in "$a" "$b"; do stop_host "$ns" KILL; ip netns del "$ns" 2>/dev/null; done
}
trap 'kill -9 $(jobs -p) 2>/dev/null; cleanup_hosts; rm -rf "$WORK"' EXIT
ip netns add "$a" && ip netns add "$b" || { echo "FAIL: cannot make network namespaces"; exit 1; }
ip link add "va$$" netns "$a" type veth peer name "vb$$" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "va$$" && ip -n "$a" link set "va$$" up && ip -n "$a" link set lo up
ip -n "$b" addr add 10.77.0.2/24 dev "vb$$" && ip -n "$b" link set "vb$$" up && ip -n "$b" link set lo up
on_a() { ip netns exec "$a" "$@"; }
on_b() { ip netns exec "$b" "$@"; }

cd "$WORK"
bash "$root/deploy/ca.sh" init ca > /dev/null
bash "$root/deploy/ca.sh" issue ca ps server --san 10.77.0.1 > /dev/null
bash "$root/deploy/ca.sh" issue ca wrong-name server > /dev/null
for d in phone-1 phone-2; do bash "$root/deploy/ca.sh" issue ca $d device > /dev/null; done

cost=(--ps-egress=1e12 --ps-flops=1e9)  # make the planner split the mlp's GEMMs
train=(--model=mlp --steps=100 --threads=1 --progress-seconds=30)
"$CLEAVE" --role=all --devices=2 --profile=fast "${cost[@]}" "${train[@]}" --log-level=warn \
  --report=inproc.json || fail "in-process run failed"

on_a "$CLEAVE" --role=ps --listen=0.0.0.0:4100 --min-devices=2 "${cost[@]}" "${train[@]}" \
  --tls-cert=ca/ps.pem --tls-key=ca/ps.key --tls-ca=ca/ca.pem --tls-crl=ca/crl.pem \
  --report=two-hosts.json > ps.log 2>&1 &
ps=$!
[[ -n $(wait_port ps.log) ]] || fail "the ps did not start: $(cat ps.log)"
for d in phone-1 phone-2; do
  on_b "$CLEAVE" --role=device --connect=10.77.0.1:4100 --profile=fast --threads=1 --reconnect-seconds=10 \
    --tls-cert=ca/$d.pem --tls-key=ca/$d.key --tls-ca=ca/ca.pem > $d.log 2>&1 &
done
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "the ps failed: $(tail -3 ps.log)"
wait
grep -q "without TLS" ps.log && fail "the ps with TLS warned about TLS"
verdict=$(same_trajectory inproc.json two-hosts.json)
[[ $verdict == equal ]] && echo "ok: two hosts: devices on B train with the ps on A to the in-process trajectory" \
  || fail "two hosts: $verdict"

# The device checks the ps's certificate names the address it dialled.
on_a "$CLEAVE" --role=ps --listen=0.0.0.0:4101 --min-devices=1 "${train[@]}" \
  --tls-cert=ca/wrong-name.pem --tls-key=ca/wrong-name.key --tls-ca=ca/ca.pem > wrong.log 2>&1 &
ps=$!
wait_port wrong.log > /dev/null
on_b "$CLEAVE" --role=device --connect=10.77.0.1:4101 --profile=fast --reconnect-seconds=0 \
  --tls-cert=ca/phone-1.pem --tls-key=ca/phone-1.key --tls-ca=ca/ca.pem > impostor.log 2>&1
rc=$?
((rc == 1)) && grep -q "10.77.0.1" impostor.log \
  || fail "a device accepted a ps whose certificate does not name 10.77.0.1 (exit $rc): $(tail -2 impostor.log)"
stop_host "$a"; wait $ps 2>/dev/null

# Without TLS, a ps listening beyond loopback says so.
on_a "$CLEAVE" --role=ps --listen=0.0.0.0:4102 --min-devices=1 "${train[@]}" > plain.log 2>&1 &
ps=$!
wait_port plain.log > /dev/null
grep -q "the device edge listens on every interface without TLS" plain.log \
  || fail "no warning for an exposed plain edge: $(head -3 plain.log)"
stop_host "$a"; wait $ps 2>/dev/null
finish
