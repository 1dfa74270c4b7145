#!/usr/bin/env bash
# 50 steps on 16 emulated devices, with one PS shard and with two, give the
# losses of the single-process reference with the same seed, to 1e-4
# relative (mlp and gpt), and the tiles really went to devices.
source "$(dirname "$0")/lib.sh"

compare() {
  local name=$1; shift
  local common=(--steps=50 --threads=2 --log-level=warn "$@")
  "$CLEAVE" --role=all --devices=0 "${common[@]}" --report="$WORK/$name-0.json" || { fail "$name reference failed"; return; }
  for shards in 1 2; do
  # Fast profiles and a fast PS link make the planner split even these small GEMMs.
  "$CLEAVE" --role=all --devices=16 --profile=fast --ps-egress=1e12 --ps-flops=1e9 "${common[@]}" \
    --ps-shards=$shards --report="$WORK/$name-16.json" \
    || { fail "$name on 16 devices, $shards shard(s) failed"; return; }
  local verdict
  verdict=$(python3 - "$WORK/$name-0.json" "$WORK/$name-16.json" $shards <<'PY'
import json, sys
ref, dist = (json.load(open(p)) for p in sys.argv[1:3])
if dist["tiles"] == 0:
    print("no tile went to a device"); sys.exit()
if dist["ps_shards"] != int(sys.argv[3]):
    print(f"report says {dist['ps_shards']} shards"); sys.exit()
pred = dist["step_prediction"]  # every step but the first is predicted
if pred["steps_compared"] != 49 or not pred["predicted_seconds"] > 0:
    print(f"step prediction covers {pred['steps_compared']} steps"); sys.exit()
worst = max(abs(a - b) / abs(a) for a, b in zip(ref["losses"], dist["losses"]))
if len(ref["losses"]) != 50 or len(dist["losses"]) != 50:
    print("wrong number of steps")
elif worst > 1e-4:
    print(f"losses differ by {worst:.2e} relative")
else:
    print("equal")
    print(f"{dist['tiles']} tiles, worst relative loss difference {worst:.2e}", file=sys.stderr)
PY
)
  [[ $verdict == equal ]] && echo "ok: $name on 16 devices, $shards shard(s), equals the reference" \
    || fail "$name, $shards shard(s): $verdict"
  done
}

compare mlp --model=mlp
compare gpt --model=gpt --context=32 --batch=4 --eval-tokens=2048
finish
