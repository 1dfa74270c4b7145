#!/usr/bin/env bash
# 50 steps on 16 emulated devices, with one PS shard and with two, give the
# losses of the single-process reference with the same seed, to 1e-4
# relative (mlp and gpt), and the tiles really went to devices. The PS's
# passes over blocks of 1 MiB or more shared among 2 threads
# (--ps-op-threads) train to the same losses bit for bit as on one, with
# bf16 rounding on the wire.
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

# opt-125m's blocks (d=768, 512 tokens a step, 2 devices) are over 1 MiB.
large=(--role=all --model=gpt --shape=opt-125m --context=64 --batch=8 --devices=2 --profile=fast
       --ps-egress=1e12 --ps-flops=1e9 --ps-tile-seconds=0 --steps=2 --threads=2 --eval-tokens=256
       --wire=bf16 --log-level=warn)
for t in 1 2; do
  "$CLEAVE" "${large[@]}" --ps-op-threads=$t --report="$WORK/passes-$t.json" || fail "--ps-op-threads=$t run failed"
done
python3 - "$WORK/passes-1.json" "$WORK/passes-2.json" <<'PY' \
  && echo "ok: the PS's passes on 2 threads give one thread's losses bit for bit" || fail "--ps-op-threads: see above"
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
ok = one["losses"] == two["losses"] and one["tiles"] > 0 and two["tiles_verified"] == one["tiles_verified"] > 0 \
     and two["tiles_rejected"] == 0
if not ok: print(f"losses {one['losses']} vs {two['losses']}, verified {one['tiles_verified']} vs {two['tiles_verified']}, refused {two['tiles_rejected']}")
sys.exit(0 if ok else 1)
PY
finish
