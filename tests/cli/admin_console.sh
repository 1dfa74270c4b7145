#!/usr/bin/env bash
# The admin console of a running in-process fleet: `GET /api/state` (and
# /status) on --admin shows the training's progress and accounts and every
# device with its detector level, live, in the schema of
# console_state_schema.py; `GET /` is the HTML page, with no external
# address and JS that node accepts; `GET /metrics` passes promtool's checks
# (format and naming); `--role=status` prints a row per device; a request
# that is not a small GET or a control is refused; every control without the
# --admin-token, or with a wrong one, is 401 and changes nothing; pause,
# resume and checkpoint with it are carried out between steps; the run itself
# is unaffected. With a churn file, the document's events show the death.
source "$(dirname "$0")/lib.sh"
export CONSOLE_HTTP=$(cd "$(dirname "$0")" && pwd)  # console_http.py, shared by the checks below

echo "console-test-token" > "$WORK/token"
"$CLEAVE" --role=all --devices=4 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --model=mlp \
  --steps=100000 --threads=1 --admin=127.0.0.1:0 --admin-token=@"$WORK/token" \
  --checkpoint-dir="$WORK/ck" > "$WORK/run.log" 2>&1 &
run=$!
port=$(console_port "$WORK/run.log")
[[ -n $port ]] || { fail "no console port: $(tail -3 "$WORK/run.log")"; finish; }

verdict=$(python3 - "$port" <<'PY'
import json, sys, time
import os, sys; sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import exchange, get as http_get
port = int(sys.argv[1])
def get(request):
    head, body = exchange(port, request)
    return head.split(b"\r\n")[0].decode(), body
problems = []
steps = []
for _ in range(100):  # until two snapshots show training moving on
    path = (b"/status", b"/api/state")[len(steps) % 2]
    status, body = get(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    if status != "HTTP/1.1 200 OK":
        problems.append(f"GET {path.decode()} gave {status}"); break
    doc = json.loads(body)
    if doc["training"] is not None:
        steps.append(doc["training"]["step"])
        if len(set(steps)) >= 2: break
    time.sleep(0.3)
else:
    problems.append(f"training never showed progress: {steps}")
fleet = doc["fleet"]
if fleet["alive"] != 4 or len(fleet["devices"]) != 4:
    problems.append(f"fleet: {fleet['alive']} alive, {len(fleet['devices'])} listed")
if not all(d["state"] == "alive" and "phi" in d for d in fleet["devices"]):
    problems.append("a device without its state or phi")
if doc["training"] and doc["training"].get("tiles", 0) <= 0:
    problems.append("no tiles in the accounts")
from console_state_schema import check as schema_problems
problems += [f"/api/state schema: {p}" for p in schema_problems(doc)]
for bad, want in ((b"POST / HTTP/1.1\r\n\r\n", "405"), (b"A" * 20000, "431"),
                  (b"GET /x HTTP/1.1\r\n\r\n", "404")):
    status, _ = get(bad)
    if want not in status:
        problems.append(f"{bad[:10]!r}... gave {status}, expected {want}")
print("; ".join(problems) if problems else "ok")
print(f"console saw steps {steps[0] if steps else None} .. {steps[-1] if steps else None}", file=sys.stderr)
PY
)
[[ $verdict == ok ]] && echo "ok: the console shows the live fleet and training" || fail "$verdict"

# The controls: 401 without the token or with a wrong one, and nothing
# changes; with it, pause stops the steps, resume goes on, checkpoint writes
# one at the next step boundary; each is in the event log with its time.
verdict=$(python3 - "$port" "$(cat "$WORK/token")" "$WORK/ck" <<'PY'
import json, os, sys, time
sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import exchange, get
port, token, ck = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def post(what, auth=None):
    head = f"POST /api/control/{what} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
    if auth is not None: head += f"Authorization: {auth}\r\n"
    status, body = exchange(port, (head + "\r\n").encode())
    return status.split(b"\r\n")[0].decode(), body.decode().strip()
def state(): return json.loads(get(port, "/api/state")[1])
problems = []
for what in ("pause", "resume", "checkpoint", "drain/1"):
    for auth in (None, "Bearer wrong", "Bearer " + token[:-1], "Basic " + token, token):
        status, _ = post(what, auth)
        if "401" not in status: problems.append(f"{what} with {auth!r}: {status}, expected 401")
doc = state()
if doc["controls"]["paused"] or any(d["state"] != "alive" for d in doc["fleet"]["devices"]) \
   or any(e["kind"] in ("pause", "drain", "checkpoint") for e in doc["events"]):
    problems.append("a refused control changed something")
status, text = post("pause", "Bearer " + token)
if "200" not in status: problems.append(f"pause: {status} {text}")
time.sleep(0.5)
first = state(); time.sleep(1.0); second = state()
if not second["controls"]["paused"] or second["training"]["step"] != first["training"]["step"]:
    problems.append(f"paused, yet steps {first['training']['step']} -> {second['training']['step']}")
if not any(e["kind"] == "paused" for e in second["events"]): problems.append("no 'paused' event")
status, text = post("checkpoint", "Bearer " + token)
if "200" not in status: problems.append(f"checkpoint: {status} {text}")
status, text = post("resume", "Bearer " + token)
if "200" not in status: problems.append(f"resume: {status} {text}")
for _ in range(50):
    doc = state()
    if doc["training"]["step"] > second["training"]["step"] and \
       any(e["kind"] == "checkpoint" and "detail" in e for e in doc["events"]): break
    time.sleep(0.1)
else: problems.append(f"after resume and checkpoint: step {doc['training']['step']}, events {doc['events'][-4:]}")
if not os.listdir(ck): problems.append("checkpoint now wrote no file")
kinds = [e["kind"] for e in doc["events"] if e["kind"] not in ("join", "suspect", "rejoin")]
# The operator's requests, and what the loop did: paused, resumed, then
# wrote the checkpoint before its next step.
if kinds[:6] != ["pause", "paused", "checkpoint", "resume", "resumed", "checkpoint"]:
    problems.append(f"event log: {kinds}")
status, _ = post("resume", "Bearer " + token)
if "409" not in status: problems.append(f"resume while running: {status}, expected 409")
print("; ".join(problems) if problems else "ok")
PY
)
[[ $verdict == ok ]] && echo "ok: controls: 401 without the right token; pause, checkpoint and resume carried out" \
  || fail "controls: $verdict"
grep -q "console: control pause accepted" "$WORK/run.log" || fail "the pause is not in the log"

# The page: HTML, self-contained, and its script parses (node --check).
python3 - "$port" "$WORK/page.html" "$WORK/page.js" <<'PY' || fail "GET /: $(cat "$WORK/page.err" 2>/dev/null)"
import re
import os, sys; sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import exchange, get as http_get
head, body = http_get(int(sys.argv[1]), "/")
page = body.decode()
open(sys.argv[2], "w").write(page)
scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
open(sys.argv[3], "w").write("\n".join(scripts))
problems = []
if not head.startswith(b"HTTP/1.1 200 "): problems.append(head.split(b"\r\n")[0].decode())
if b"Content-Type: text/html; charset=utf-8" not in head: problems.append("not text/html")
if len(scripts) != 1: problems.append(f"{len(scripts)} inline scripts")
for outside in ("http://", "https://", "<script src", "<link"):
    if outside in page: problems.append(f"the page holds {outside!r}")
if problems:
    open(sys.argv[2][:-5] + ".err", "w").write("; ".join(problems))
    sys.exit(1)
PY
if ! command -v node >/dev/null; then fail "node is missing: the page's script cannot be checked"
elif out=$(node --check "$WORK/page.js" 2>&1); then echo "ok: GET / is a self-contained page whose script node accepts"
else fail "node --check on the page's script: $out"; fi
# The live page in a browser, with its controls: console_browser.sh.

# /metrics, linted as Prometheus would read it. promtool comes with the
# prometheus package (deploy/setup.sh installs it); without it this fails.
if ! command -v promtool >/dev/null; then
  fail "promtool is missing: install the prometheus package (bash deploy/setup.sh does)"
else
  python3 - "$port" "$WORK/metrics.txt" <<'PY' || fail "GET /metrics: $(cat "$WORK/metrics.err")"
import os, sys; sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import exchange, get as http_get
head, body = http_get(int(sys.argv[1]), "/metrics")
ok = head.startswith(b"HTTP/1.1 200 ") and b"Content-Type: text/plain; version=0.0.4" in head
open(sys.argv[2], "wb").write(body)
if not ok:
    open(sys.argv[2][:-4] + ".err", "w").write(head.split(b"\r\n")[0].decode())
    sys.exit(1)
PY
  lint=$(promtool check metrics < "$WORK/metrics.txt" 2>&1); rc=$?
  if ((rc != 0)) || [[ -n $lint ]]; then fail "promtool check metrics (exit $rc): $lint"
  else echo "ok: /metrics passes promtool check metrics"; fi
  for family in cleave_training_step cleave_tiles_total 'cleave_fleet_devices{state="alive"} 4' \
                'cleave_device_tiles_total{device="0",profile="fast"}' 'cleave_device_state{device="3",state="alive"} 1'; do
    grep -qF "$family" "$WORK/metrics.txt" || fail "/metrics lacks $family"
  done
fi

# --role=status: a row per device, once; redrawn with --watch until SIGINT;
# a closed port or a bad --connect is a one-line error and a non-zero exit.
"$CLEAVE" --role=status --connect=127.0.0.1:$port > "$WORK/status.txt" 2> "$WORK/status.err"; rc=$?
rows=$(grep -cE '^ *[0-9]+ +fast +alive ' "$WORK/status.txt")
if ((rc != 0)) || [[ $rows != 4 ]] || ! grep -q '^step [0-9]* .*devices 4/0/0/0' "$WORK/status.txt"; then
  fail "--role=status gave exit $rc and $rows device row(s): $(cat "$WORK/status.txt" "$WORK/status.err")"
else echo "ok: --role=status prints a row per device"; fi
timeout --preserve-status -s INT 2.5 "$CLEAVE" --role=status --watch --connect=127.0.0.1:$port > "$WORK/watch.txt" 2>&1; rc=$?
pages=$(grep -o $'\e\[2J' "$WORK/watch.txt" | wc -l)
((rc == 0 && pages >= 2)) && echo "ok: --watch redraws ($pages pages) and stops on SIGINT" \
  || fail "--watch: exit $rc, $pages page(s)"
closed=$(free_port)
"$CLEAVE" --role=status --connect=127.0.0.1:$closed > /dev/null 2> "$WORK/closed.err"; rc=$?
if ((rc == 0)) || ! grep -q "cannot connect to 127.0.0.1:$closed" "$WORK/closed.err" \
   || (($(wc -l < "$WORK/closed.err") != 1)); then
  fail "--role=status on a closed port: exit $rc, $(cat "$WORK/closed.err")"
else echo "ok: a closed port: exit $rc, $(cat "$WORK/closed.err")"; fi
"$CLEAVE" --role=status --connect=nohost > /dev/null 2>&1; rc=$?
((rc == 2)) || fail "--role=status --connect=nohost exited $rc, expected 2"
kill -0 $run 2>/dev/null || fail "the run died: $(tail -3 "$WORK/run.log")"
kill -TERM $run 2>/dev/null
wait $run 2>/dev/null

# Churn: device 2 dies at step 20; the console's event log shows it dead
# (the console subscribed to the planner's events).
echo '{"events": [{"step": 20, "action": "die", "device": 2}]}' > "$WORK/churn.json"
"$CLEAVE" --role=all --devices=4 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --model=mlp \
  --steps=100000 --threads=1 --churn="$WORK/churn.json" --admin=127.0.0.1:0 > "$WORK/churn.log" 2>&1 &
run=$!
port=$(console_port "$WORK/churn.log")
if [[ -z $port ]]; then fail "churn run: no console port: $(tail -3 "$WORK/churn.log")"
else
  verdict=$(python3 - "$port" <<'PY'
import json, time
import os, sys; sys.path.insert(0, os.environ["CONSOLE_HTTP"])
from console_http import exchange, get as http_get
def state():
    return json.loads(http_get(int(sys.argv[1]), "/api/state")[1])
for _ in range(150):  # 30 s
    doc = state()
    events = doc.get("events", [])
    dead = [e for e in events if e["kind"] == "dead" and e.get("device") == 2]
    if dead:
        bad = [e for e in events if not isinstance(e.get("time"), (int, float)) or e["time"] < 0]
        print(f"bad times: {bad}" if bad else "ok")
        break
    time.sleep(0.2)
else:
    print(f"no dead event for device 2 by step {(doc['training'] or {}).get('step')}: {events}")
PY
)
  [[ $verdict == ok ]] && echo "ok: the console's events show device 2 dead" || fail "churn: $verdict"
fi
kill -TERM $run 2>/dev/null
wait $run 2>/dev/null
finish
