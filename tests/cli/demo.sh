#!/usr/bin/env bash
# The embedded demo (`cleave --role=all` with no model or fleet flags) at a
# reduced length: tiles go to the 64 emulated devices, every scripted event
# happens and is handled, the liar is quarantined, the summary is printed,
# and the losses equal the same demo without its scenario to 1e-4 relative.
source "$(dirname "$0")/lib.sh"

common=(--steps=30 --eval-tokens=2048 --threads=2 --admin=127.0.0.1:0)
"$CLEAVE" --role=all "${common[@]}" --report="$WORK/demo.json" >"$WORK/demo.log" 2>&1 \
  || { fail "the demo failed: $(tail -3 "$WORK/demo.log")"; finish; }
"$CLEAVE" --role=all "${common[@]}" --scenario=none --log-level=warn --report="$WORK/quiet.json" \
  || { fail "the demo without its scenario failed"; finish; }

grep -q "admin console: http://127.0.0.1:" <(head -5 "$WORK/demo.log") \
  || fail "the console's address is not in the first lines of output"
grep -q "demo summary" "$WORK/demo.log" || fail "no summary at the end"
verdict=$(python3 - "$WORK/demo.json" "$WORK/quiet.json" <<'PY'
import json, sys
demo, quiet = (json.load(open(p)) for p in sys.argv[1:3])
problems = []
if demo["model_kind"] != "gpt" or demo["devices"] != 64: problems.append("not gpt small on 64 devices")
if demo["tiles"] == 0: problems.append("no tile went to a device")
applied = demo.get("churn", {}).get("applied", {})
want = {"die": 2, "hang": 1, "crash": 1, "join": 3, "slow": 1}
if applied != want: problems.append(f"scenario applied {applied}, expected {want}")
deaths = len(demo.get("churn", {}).get("detection_seconds_dead", []))
if deaths < 3: problems.append(f"{deaths} of the 3 deaths were detected")
if demo["quarantined_devices"] != [3]: problems.append(f"quarantined {demo['quarantined_devices']}, the liar is [3]")
if quiet.get("churn") or quiet["devices_quarantined"]: problems.append("--scenario=none was not quiet")
if len(demo["losses"]) != len(quiet["losses"]): problems.append("step counts differ")
else:
    worst = max(abs(a - b) / abs(a) for a, b in zip(demo["losses"], quiet["losses"]))
    if worst > 1e-4: problems.append(f"losses differ from the quiet run by {worst:.2e} relative")
if not demo.get("reference_median_step_seconds", 0) > 0: problems.append("no reference step time")
print("; ".join(problems) or "ok")
PY
)
[[ $verdict == ok ]] || fail "$verdict"

# --scenario is the demo's alone, and checked.
out=$("$CLEAVE" --role=all --model=mlp --scenario=none 2>&1); rc=$?
[[ $rc == 2 && $out == *"belongs to the embedded demo"* ]] || fail "--scenario outside the demo: rc $rc, $out"
out=$("$CLEAVE" --role=all --scenario=loud 2>&1); rc=$?
[[ $rc == 2 && $out == *"demo or none"* ]] || fail "--scenario=loud: rc $rc, $out"
finish
