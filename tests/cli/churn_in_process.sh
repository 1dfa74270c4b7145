#!/usr/bin/env bash
# A seeded churn schedule on the in-process fleet: of 32 emulated devices,
# 8 fail during training (6 killed mid-step, 2 hung) and 8 new ones join,
# 2 more slow down 20x. The mlp's loss trajectory equals the churn-free run
# on the same fleet to 1e-4 relative (it is in fact bit-identical: plans
# keep their tiles when the fleet changes), it still reaches test accuracy
# 0.88, and the report shows the failures were detected and their tiles
# moved; with two PS shards, a shorter run under the same schedule is
# bit-identical too. (That the fleet's numbers match --devices=0 is
# distributed_equality's job.)
source "$(dirname "$0")/lib.sh"

python3 - "$WORK/churn.json" <<'PY'
import json, random, sys
r = random.Random(7)
steps = 4685  # 5 epochs of batch 64
victims = r.sample(range(32), 10)
events = []
for i, dev in enumerate(victims):
    action = "die" if i < 6 else "hang" if i < 8 else "slow"
    ev = {"step": r.randrange(50, steps - 200), "action": action, "device": dev,
          "after_seconds": round(r.uniform(0, 0.005), 4)}
    if action == "slow":
        ev["factor"] = 20
    events.append(ev)
events += [{"step": r.randrange(50, steps - 200), "action": "join", "profile": "fast"}
           for _ in range(8)]
events.sort(key=lambda e: e["step"])
json.dump({"events": events}, open(sys.argv[1], "w"), indent=1)
PY

# Fast profiles and a fast PS link make the planner split every GEMM.
common=(--role=all --devices=32 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --model=mlp
        --epochs=5 --threads=2 --log-level=warn)
"$CLEAVE" "${common[@]}" --report="$WORK/ref.json" || fail "churn-free run failed"
"$CLEAVE" "${common[@]}" --churn="$WORK/churn.json" --report="$WORK/churn-report.json" \
  || fail "churn run failed"

verdict=$(python3 - "$WORK/ref.json" "$WORK/churn-report.json" <<'PY'
import json, sys
ref, run = (json.load(open(p)) for p in sys.argv[1:3])
problems = []
if len(run["losses"]) != len(ref["losses"]):
    problems.append("different number of steps")
worst = max(abs(a - b) / abs(a) for a, b in zip(ref["losses"], run["losses"]))
if worst > 1e-4:
    problems.append(f"losses differ by {worst:.2e} relative")
if run["test_accuracy"] < 0.88:
    problems.append(f"test accuracy {run['test_accuracy']:.4f} < 0.88")
applied = run["churn"]["applied"]
if applied != {"die": 6, "hang": 2, "slow": 2, "join": 8}:
    problems.append(f"churn applied {applied}")
if run["failures_detected"] < 8:
    problems.append(f"only {run['failures_detected']} failures detected")
if len(run["churn"]["detection_seconds_dead"]) != 8:
    problems.append("not every failed device was declared dead")
joined = [d for d in run["per_device"] if d["id"] >= 32]
if len(joined) != 8:
    problems.append(f"{len(joined)} of the 8 joined devices entered the fleet")
if run["tiles"] == 0:
    problems.append("no tile went to a device")
print("; ".join(problems) if problems else "equal")
print(f"worst relative difference {worst:.2e}, accuracy {run['test_accuracy']:.4f}, "
      f"{run['failures_detected']} failures detected, {run['tiles_reassigned']} tiles reassigned, "
      f"{run['speculative_tiles']} speculative, {sum(d['tiles'] > 0 for d in joined)} joined devices "
      f"did work, detection (dead) {run['churn']['detection_seconds_dead']}",
      file=sys.stderr)
PY
)
[[ $verdict == equal ]] && echo "ok: churn leaves the trajectory unchanged" || fail "$verdict"

# Two PS shards under the same kind of churn (1000 steps): every shard's
# engine hears the events and moves its own tiles; the numbers do not change.
python3 - "$WORK/churn.json" "$WORK/churn-short.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["events"]
for e in events:
    e["step"] = 50 + e["step"] * 750 // 4485
json.dump({"events": events}, open(sys.argv[2], "w"))
PY
short=("${common[@]}" --steps=1000 --ps-shards=2)
"$CLEAVE" "${short[@]}" --report="$WORK/ref2.json" || fail "churn-free 2-shard run failed"
"$CLEAVE" "${short[@]}" --churn="$WORK/churn-short.json" --report="$WORK/churn2.json" \
  || fail "2-shard churn run failed"
verdict=$(python3 - "$WORK/ref2.json" "$WORK/churn2.json" <<'PY'
import json, sys
ref, run = (json.load(open(p)) for p in sys.argv[1:3])
if run["churn"]["applied"] != {"die": 6, "hang": 2, "slow": 2, "join": 8}:
    print(f"churn applied {run['churn']['applied']}")
elif run["failures_detected"] < 8:
    print(f"only {run['failures_detected']} failures detected")
elif run["losses"] != ref["losses"]:
    print("losses differ from the churn-free 2-shard run")
else:
    print("equal")
PY
)
[[ $verdict == equal ]] && echo "ok: two PS shards under churn keep the trajectory" || fail "2 shards: $verdict"
finish
