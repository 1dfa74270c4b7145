# Shared by the CLI tests: a scratch dir removed on exit, and assertions.
set -u
CLEAVE=${1:?usage: $0 path/to/cleave}
CLI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

finish() {
  if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# doc_commands FILE TEST: the commands of FILE's fenced block that follows the
# line `<!-- tested by tests/cli/TEST.sh -->`, one a line (backslash
# continuations joined, comments and blank lines left out); nothing when the
# page has no such block. A test that runs a page's commands finds them so.
doc_commands() {
  python3 - "$1" "$2" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
marker = f"<!-- tested by tests/cli/{sys.argv[2]}.sh -->"
at = next((i for i, l in enumerate(lines) if l.strip() == marker), None)
if at is None or at + 1 >= len(lines) or not lines[at + 1].startswith("```"): sys.exit(0)
command = ""
for line in lines[at + 2:]:
    if line.startswith("```"): break
    line = line.split(" #")[0].rstrip() if not line.lstrip().startswith("#") else ""
    if line.endswith("\\"): command += line[:-1] + " "; continue
    command += line
    if command.strip(): print(command.strip())
    command = ""
PY
}

# json FILE EXPR: evaluates a Python expression over the parsed document `d`.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# logged_port LOG TEXT: prints the port a process logged as TEXT followed by
# the number (waits up to 10 s).
logged_port() {
  for _ in $(seq 1 500); do
    local p; p=$(grep -o "$2[0-9]*" "$1" 2>/dev/null | grep -o "[0-9]*$")
    [[ -n $p ]] && { echo "$p"; return; }
    sleep 0.02
  done
}

# free_port: a loopback port nobody listens on (as of now).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for_checkpoint DIR: until a checkpoint is in DIR (up to 30 s).
wait_for_checkpoint() {
  for _ in $(seq 1 600); do
    compgen -G "$1/checkpoint-*.clvck" > /dev/null && return
    sleep 0.05
  done
  fail "no checkpoint in $1"
}

# wait_port LOG: the port a process logged it listens on.
wait_port() { logged_port "$1" "listening on port "; }

# console_port LOG: the port of the admin console a process logged.
console_port() { logged_port "$1" "admin console: http://[0-9.]*:"; }

# same_trajectory REF GOT: prints "equal" when report GOT sent tiles to devices
# and its per-step losses are REF's bit for bit, else what differs.
same_trajectory() {
  python3 - "$1" "$2" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
if got["tiles"] == 0: print("no tile went to a device")
elif len(got["losses"]) != len(ref["losses"]):
    print(f"{len(got['losses'])} steps, expected {len(ref['losses'])}")
elif got["losses"] != ref["losses"]:
    worst = max(abs(a - b) / abs(a) for a, b in zip(ref["losses"], got["losses"]))
    print(f"trajectory differs (worst {worst:.2e} relative)")
else: print("equal")
PY
}

# make_xc_dir DIR: a small extreme-classification task in DIR (train.txt,
# test.txt; 300 features, 40 labels): a key feature k < 40 among noise
# features, labels k and, for half the samples, k + 1.
make_xc_dir() {
  mkdir -p "$1"
  python3 - "$1" <<'PY'
import random, sys
def write(path, n, seed, features=300, labels=40):
    r = random.Random(seed)
    lines = [f"{n} {features} {labels}"]
    for _ in range(n):
        key = r.randrange(labels)
        f = sorted({key} | {r.randrange(labels, features) for _ in range(2 + r.randrange(3))})
        l = sorted({key, (key + 1) % labels} if r.randrange(2) else {key})
        lines.append(",".join(map(str, l)) + " " + " ".join(f"{x}:{0.5 + r.random():.3f}" for x in f))
    open(path, "w").write("\n".join(lines) + "\n")
write(sys.argv[1] + "/train.txt", 2000, 1)
write(sys.argv[1] + "/test.txt", 300, 2)
PY
}

# job_cas: in the current directory, the job's CA (ca/) and another one
# (other/) made by deploy/ca.sh; sets ca_sh. Exits when openssl is missing.
job_cas() {
  ca_sh="$CLI_DIR/../../deploy/ca.sh"
  command -v openssl > /dev/null || { echo "FAIL: openssl is missing"; exit 1; }
  bash "$ca_sh" init ca > /dev/null
  bash "$ca_sh" init other > /dev/null
}
