# Shared by the CLI tests: a scratch dir removed on exit, and assertions.
set -u
CLEAVE=${1:?usage: $0 path/to/cleave}
WORK=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

finish() {
  if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# json FILE EXPR: evaluates a Python expression over the parsed document `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# wait_port LOG: prints the port a process logged it listens on (waits up to 10 s).
wait_port() {
  for _ in $(seq 1 500); do
    local p; p=$(grep -o "listening on port [0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$")
    [[ -n $p ]] && { echo "$p"; return; }
    sleep 0.02
  done
}
