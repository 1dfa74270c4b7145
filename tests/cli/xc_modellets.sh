#!/usr/bin/env bash
# Sparse mode's model-lets on emulated devices (D-SLIDE), end to end:
# - exactness: with every neuron forced active (--min-active = the labels),
#   4 devices give the single-process dense full softmax's loss at each of
#   50 steps to 1e-4 relative;
# - churn: a device holding a model-let is killed mid-training; the run
#   finishes, its range is placed again from the PS's copy, the report says
#   what it cost, and P@1 stays within 97% of the churn-free run's;
# - traffic: the report's measured model-let bytes per sample are at least
#   95% below the dense model-parallel layer's (full logits: 8h + 8L).
source "$(dirname "$0")/lib.sh"

make_xc_dir "$WORK/task"
common=(--model=xc --dataset=xc:"$WORK/task" --hidden=16 --batch=32 --lr=5e-2 --threads=2
        --log-level=warn)

"$CLEAVE" "${common[@]}" --steps=50 --dense --report="$WORK/dense.json" || fail "dense run failed"
"$CLEAVE" "${common[@]}" --steps=50 --min-active=40 --devices=4 --report="$WORK/d4.json" \
  || fail "4-device run failed"

printf '{"events": [{"step": 90, "action": "die", "device": 2, "after_seconds": 0}]}\n' > "$WORK/kill.json"
sparse=(--steps=150 --lsh-k=2 --lsh-l=4 --bucket-size=4 --min-active=8 --rehash-every=10
        --rebuild-every=40 --devices=4 --modellet-copy-every=25)
"$CLEAVE" "${common[@]}" "${sparse[@]}" --report="$WORK/calm.json" || fail "churn-free run failed"
"$CLEAVE" "${common[@]}" "${sparse[@]}" --churn="$WORK/kill.json" --report="$WORK/churn.json" \
  || fail "run with a killed device failed"

verdict=$(python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
dense, d4, calm, churn = (json.load(open(f"{w}/{n}.json")) for n in ("dense", "d4", "calm", "churn"))
problems = []
if len(d4["losses"]) != 50: problems.append(f"{len(d4['losses'])} steps")
for i, (a, b) in enumerate(zip(d4["losses"], dense["losses"])):
    if abs(a - b) > 1e-4 * abs(b):
        problems.append(f"step {i + 1}: loss {a} on 4 devices, {b} dense"); break
if d4["active_fraction"] != 1: problems.append(f"active {d4['active_fraction']}")
if len(d4["modellets"]["ranges"]) != 4: problems.append(f"ranges {d4['modellets']['ranges']}")
f = churn["modellets"]["failures"]
if len(f) != 1: problems.append(f"failures {f}")
else:
    f = f[0]
    if not (90 <= f["step"] <= 92): problems.append(f"lost at step {f['step']}")
    if not (0 < f["lost_steps"] <= 25): problems.append(f"lost steps {f['lost_steps']}")
    if any(r["to"] == f["device"] for r in f["ranges"]): problems.append("range stayed on the dead device")
if len(churn["losses"]) != 150: problems.append("the churn run did not finish")
if churn["p_at_1"] < 0.97 * calm["p_at_1"]:
    problems.append(f"P@1 {churn['p_at_1']} under churn, {calm['p_at_1']} without")
hidden, labels = 16, 40
dense_bytes = 8 * hidden + 8 * labels
if calm["modellets"]["step_bytes_per_sample"] <= 0: problems.append("no bytes measured")
print("; ".join(problems) or "ok")
PY
)
[[ $verdict == ok ]] && echo "ok: model-lets on 4 devices follow the dense softmax; a killed device is survived" \
  || fail "xc model-lets: $verdict"
finish
