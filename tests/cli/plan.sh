#!/usr/bin/env bash
# --role=plan: the predicted step of a model on a fleet described by counts,
# every product listed, the report as JSON, and clean refusals of bad input.
source "$(dirname "$0")/lib.sh"

cat > "$WORK/fleet.json" <<'JSON'
{"devices": [{"name": "paper", "flops": 3e12, "memory_bytes": 4e9, "downlink": 1e8,
              "uplink": 5e6, "latency": 0.005, "count": 5000},
             {"preset": "laptop", "count": 24}]}
JSON

out=$("$CLEAVE" --role=plan --model=gpt --shape=opt-125m --batch=8 --context=256 \
      --fleet="$WORK/fleet.json" --ps-shards=2 --report="$WORK/plan.json" 2>"$WORK/err"); rc=$?
((rc == 0)) || fail "plan exited $rc: $(cat "$WORK/err")"
[[ $out == *"5024 devices, 2 PS shards"* ]] || fail "header lacks the fleet and shards: $(head -1 <<<"$out")"
[[ $out == *"step: "* ]] || fail "no step line"

# The report parses, lists every product of the step once, and its parts add up.
check=$(python3 - "$WORK/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [p["name"] for p in d["products"]]
problems = []
if len(names) != 19 or len(set(names)) != 19: problems.append(f"{len(names)} products")
if not d["step_seconds"] > 0: problems.append("no step time")
parts = sum(d["parts"].values())
if abs(parts - d["step_seconds"]) > 1e-9 * d["step_seconds"]: problems.append("parts do not add up")
if len(d["bytes_per_shard"]["down"]) != 2: problems.append("not two shards")
if not any(p["split"] for p in d["products"]): problems.append("nothing split")
if d["devices_offered"] != 5024: problems.append("fleet size")
print("; ".join(problems) if problems else "ok")
for n in names: print(n)
PY
)
[[ $(head -1 <<<"$check") == ok ]] || fail "report: $(head -1 <<<"$check")"
while read -r name; do
  grep -q "^$name " <<<"$out" || fail "product '$name' missing from the table"
done < <(tail -n +2 <<<"$check")

expect_refusal() {  # expect_refusal "words the reason must contain" args...
  local want=$1; shift
  local err rc
  err=$("$CLEAVE" --role=plan --model=gpt --batch=8 "$@" 2>&1 >/dev/null); rc=$?
  if ((rc != 2)); then fail "cleave --role=plan $* exited $rc, expected 2: $err"; return; fi
  if [[ $(printf '%s\n' "$err" | grep -c .) -ne 1 ]]; then fail "not one line: $err"; return; fi
  if [[ $err != *"$want"* ]]; then fail "reason lacks '$want': $err"; return; fi
  echo "ok: --role=plan $* -> $err"
}
expect_refusal "unknown gpt shape" --shape=opt-999b --fleet="$WORK/fleet.json"
expect_refusal "$WORK/missing.json" --shape=small --fleet="$WORK/missing.json"
expect_refusal "--batch must be positive, got 0" --shape=small --fleet="$WORK/fleet.json" --batch=0
expect_refusal "needs --fleet" --shape=small
echo '{"devices": [{"preset": "phone", "count": 2000000}]}' > "$WORK/huge.json"
expect_refusal "count must be an integer in [1, 1000000]" --shape=small --fleet="$WORK/huge.json"
finish
