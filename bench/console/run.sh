#!/usr/bin/env bash
# The admin console's cost to training: the same run (mlp on 8 emulated
# devices of the default fleet, the PS coordinating rather than computing,
# ~35 s) with and without a client polling GET /api/state and GET /metrics,
# each at 10 Hz. Both runs open the console; only the client differs. The
# runs alternate (ROUNDS pairs, default 2) so the shared host's drift falls
# on both; reported: each run's median step time (from its report), the
# ratio polled / quiet (goal: within 5%), requests answered, and each run's
# peak resident memory (GNU time's maximum RSS).
# Usage: bench/console/run.sh [path/to/cleave] [steps]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=${1:-$here/../../build/cmd/cleave}
STEPS=${2:-800}
ROUNDS=${ROUNDS:-2}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# The detector's thresholds are out of reach: on a loaded host a late
# heartbeat would otherwise suspect a device and move its work to the PS,
# which changes the step time far more than the console does.
run=(--role=all --devices=8 --ps-flops=1e9 --ps-egress=1e12 --model=mlp --steps="$STEPS" --threads=2
     --suspect-phi=1e8 --dead-phi=1e9 --admin=127.0.0.1:0)

# poller PORT: GETs both paths every 100 ms until SIGTERM; then prints the
# answered and failed counts. (exec: the signal reaches python itself.)
poller() {
  exec python3 - "$1" <<'PY'
import collections, signal, socket, sys, time
port, ok, failed = int(sys.argv[1]), 0, collections.Counter()
def done(*_):
    print(ok, sum(failed.values()), " ".join(f"{k}:{v}" for k, v in failed.items()) or "-")
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
def get(path):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        out = b""
        while chunk := s.recv(65536): out += chunk
    return out.split(b"\r\n")[0].decode(errors="replace")
next_at = time.monotonic()
while True:
    for path in ("/api/state", "/metrics"):
        try:
            status = get(path)
            if status.startswith("HTTP/1.1 200 "): ok += 1
            else: failed[status.replace(" ", "_") or "no_answer"] += 1
        except OSError as e:
            failed[type(e).__name__] += 1
    next_at += 0.1
    time.sleep(max(0.0, next_at - time.monotonic()))
PY
}

# one LABEL POLL(0|1): a run; its report in $work/LABEL.json, RSS in $work/LABEL.rss.
one() {
  local label=$1 poll=$2
  /usr/bin/time -f "%M" -o "$work/$label.rss" "$CLEAVE" "${run[@]}" --report="$work/$label.json" \
    > "$work/$label.log" 2>&1 &
  local pid=$!
  if ((poll)); then
    local port=
    for _ in $(seq 1 500); do
      port=$(grep -o "admin console: http://127.0.0.1:[0-9]*" "$work/$label.log" | grep -o "[0-9]*$" || true)
      [[ -n $port ]] && break; sleep 0.02
    done
    poller "$port" > "$work/$label.polls" &
    local client=$!
    wait $pid || { tail -3 "$work/$label.log" >&2; exit 1; }
    kill -TERM $client; wait $client || true
  else
    wait $pid || { tail -3 "$work/$label.log" >&2; exit 1; }
  fi
}

for r in $(seq 1 "$ROUNDS"); do
  one "quiet-$r" 0
  one "polled-$r" 1
done
python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def report(label): return json.load(open(f"{work}/{label}.json"))
def median_step(label): return report(label)["median_step_seconds"]
def tiles_per_step(label): return report(label)["tiles"] / report(label)["steps"]
def rss_mib(label): return int(open(f"{work}/{label}.rss").read().split()[-1]) / 1024
ratios = []
for r in range(1, rounds + 1):
    q, p = median_step(f"quiet-{r}"), median_step(f"polled-{r}")
    ok, bad, why = open(f"{work}/polled-{r}.polls").read().split()
    ratios.append(p / q)
    print(f"round {r}: quiet {q * 1e3:.2f} ms/step (peak RSS {rss_mib(f'quiet-{r}'):.0f} MiB, "
          f"{tiles_per_step(f'quiet-{r}'):.0f} tiles/step), polled {p * 1e3:.2f} ms/step (peak RSS "
          f"{rss_mib(f'polled-{r}'):.0f} MiB, {tiles_per_step(f'polled-{r}'):.0f} tiles/step, "
          f"{ok} answers, {bad} failed: {why}), ratio {p / q:.3f}")
ratio = statistics.median(ratios)
print(f"median ratio polled/quiet: {ratio:.3f} ({'within' if abs(ratio - 1) <= 0.05 else 'NOT within'} 5%)")
PY
