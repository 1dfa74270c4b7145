#!/usr/bin/env bash
# Tensor transport on loopback, measured side by side in one run: raw TCP,
# the bulk channel (CAF broker + frames), CAF BASP and, with --tls, the bulk
# channel over TLS 1.3, between two processes.
#
#   bench/transport/run.sh [path/to/bench_transport] [client options...]
#
# Client options: --rounds N (5) --mib M (4) --frames F (256) --basp-frames F
# (24) --inflight K (4) --no-basp --copy (send std::vector<float>, copied once
# by the channel, instead of a zero-copy bulk_buffer) --tls (also the bulk
# channel over TLS, with throwaway certificates from deploy/ca.sh).
# Environment (both processes): BENCH_CAF_THREADS (scheduler.max-threads),
# BENCH_CAF_POLICY (stealing|sharing), BENCH_SOCKBUF (SO_SNDBUF/SO_RCVBUF of the
# bulk channel), BENCH_TLS_THREADS (bulk_options::tls_threads: -1 the shared
# crypto pool, 0 TLS inline on the broker, n a pool of n). Exit status 2 when the median bulk/raw ratio (or, with
# --tls, tls/raw) is below 0.5.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-}"
if [[ -n "$bin" && -x "$bin" ]]; then
  shift
else
  bin=""
  for cand in "$here/../../build/bench/transport/bench_transport" "$here/../../build/bench_transport"; do
    if [[ -x "$cand" ]]; then bin="$cand"; break; fi
  done
  [[ -n "$bin" ]] || { echo "run.sh: build bench_transport first (or pass its path)" >&2; exit 1; }
fi

echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, binary $bin"
out="$(mktemp)"
pki=""
for a in "$@"; do
  if [[ "$a" == --tls ]]; then
    pki="$(mktemp -d)"
    bash "$here/../../deploy/ca.sh" init "$pki/ca" >/dev/null
    bash "$here/../../deploy/ca.sh" issue "$pki/ca" bench-server server >/dev/null
    bash "$here/../../deploy/ca.sh" issue "$pki/ca" bench-client device >/dev/null
    export BENCH_TLS_DIR="$pki/ca"
    echo "# TLS: $(openssl version), AES-NI $(grep -qw aes /proc/cpuinfo && echo yes || echo no), certificates in $pki"
  fi
done
"$bin" server </dev/null >"$out" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -f "$out"
  [[ -z "$pki" ]] || rm -rf "$pki"
}
trap cleanup EXIT

for _ in $(seq 100); do
  grep -q '^READY' "$out" && break
  kill -0 "$server" 2>/dev/null || { cat "$out" >&2; exit 1; }
  sleep 0.1
done
read -r _ raw bulk basp tls < <(grep '^READY' "$out")
echo "# server pid $server: raw port $raw, bulk port $bulk, basp port $basp, tls port $tls"
status=0
"$bin" client "$raw" "$bulk" "$basp" "$tls" "$@" || status=$?
exit $status
