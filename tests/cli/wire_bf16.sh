#!/usr/bin/env bash
# --wire=bf16 and --wire=bf16-operands train as well as fp32: gpt small on
# fortunes, on 4 emulated devices, ends within 1% of the fp32 run's
# validation loss after the same steps (the loss having moved well below the
# byte unigram's), with every result verified and none refused, about half
# the bytes on the device links with bf16 (the planner cuts bf16's products
# for their bytes) and half the bytes down with bf16-operands, and the
# report naming the wire. Device processes round as emulated devices do,
# and shard processes take the precision from the coordinator: the same
# losses bit for bit. Refusals: an unknown precision, and --wire on
# a device process (the ps decides).
source "$(dirname "$0")/lib.sh"

# A fast PS link and free PS tiles make the planner send even these small
# GEMMs to the devices.
run=(--role=all --model=gpt --dataset=fortunes --devices=4 --profile=fast --ps-egress=1e12
     --ps-flops=1e9 --ps-tile-seconds=0 --steps=60 --batch=8 --threads=2 --eval-tokens=8192
     --log-level=warn)
for w in fp32 bf16 bf16-operands; do
  "$CLEAVE" "${run[@]}" --wire=$w --report="$WORK/$w.json" || fail "the $w run failed"
done

verdict=$(python3 - "$WORK/fp32.json" "$WORK/bf16.json" "$WORK/bf16-operands.json" <<'PY'
import json, sys
fp32, bf16, ops = (json.load(open(p)) for p in sys.argv[1:4])
problems = []
for name, d in (("fp32", fp32), ("bf16", bf16), ("bf16-operands", ops)):
    if d.get("wire") != name: problems.append(f"the {name} run's report says wire {d.get('wire')}")
    if d["tiles"] == 0 or d["tiles_verified"] == 0: problems.append(f"{name}: no tile verified on a device")
    if d["tiles_rejected"] != 0: problems.append(f"{name}: {d['tiles_rejected']} honest results refused")
    if not d["val_loss"] < d["unigram_loss"] - 0.2:
        problems.append(f"{name}: val_loss {d['val_loss']:.4f} has not moved below the unigram's {d['unigram_loss']:.4f}")
    gap = abs(d["val_loss"] - fp32["val_loss"]) / fp32["val_loss"]
    if gap > 0.01: problems.append(f"val_loss {name} {d['val_loss']:.5f} vs fp32 {fp32['val_loss']:.5f}: {100 * gap:.2f}% apart")
# The planner cuts bf16's products for its cheaper bytes (another grid), so
# the runs' bytes are compared whole; each element's bytes are
# runtime_test's to check, on one plan.
per_step = lambda d, way: d[way] / d["steps"]
moved = lambda d: per_step(d, "bytes_down") + per_step(d, "bytes_up")
if not moved(bf16) <= 0.55 * moved(fp32):
    problems.append(f"bytes per step: bf16 {moved(bf16):.4g} against fp32 {moved(fp32):.4g}")
if not per_step(ops, "bytes_down") <= 0.55 * per_step(fp32, "bytes_down"):
    problems.append(f"bytes down per step: bf16-operands {per_step(ops, 'bytes_down'):.4g} against fp32 {per_step(fp32, 'bytes_down'):.4g}")
print("; ".join(problems) if problems else "equal")
for name, d in (("fp32", fp32), ("bf16", bf16), ("bf16-operands", ops)):
    print(f"{name}: val_loss {d['val_loss']:.5f} ({100 * (d['val_loss'] - fp32['val_loss']) / fp32['val_loss']:+.3f}% from fp32); "
          f"bytes per step down {per_step(d, 'bytes_down'):.4g}, up {per_step(d, 'bytes_up'):.4g}", file=sys.stderr)
print(f"unigram {fp32['unigram_loss']:.4f}", file=sys.stderr)
PY
)
[[ $verdict == equal ]] && echo "ok: gpt small with --wire=bf16 and bf16-operands ends within 1% of fp32's validation loss, on about half the bytes (bf16-operands: down)" \
  || fail "bf16 and bf16-operands against fp32: $verdict"

# A device process rounds as an emulated device does: the ps with 4 device
# processes through its edge, both with --wire=bf16, trains the mlp to the
# in-process bf16 trajectory bit for bit, and each result is what the
# in-process run's was.
mlp=(--model=mlp --steps=10 --threads=1 --ps-egress=1e12 --ps-flops=1e9 --wire=bf16)
"$CLEAVE" --role=all --devices=4 --profile=fast "${mlp[@]}" --log-level=warn --report="$WORK/inproc.json" \
  || fail "in-process bf16 mlp failed"
"$CLEAVE" --role=ps --listen=127.0.0.1:0 --min-devices=4 "${mlp[@]}" --log-level=info \
  --report="$WORK/remote.json" > "$WORK/ps.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/ps.log")
for i in 1 2 3 4; do
  "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 --log-level=warn \
    --reconnect-seconds=0 &
done
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "bf16 ps failed: $(tail -3 "$WORK/ps.log")"
wait
verdict=$(same_trajectory "$WORK/inproc.json" "$WORK/remote.json")
[[ $verdict == equal && $(json "$WORK/remote.json" 'd["wire"]') == bf16 ]] \
  && echo "ok: 4 device processes with --wire=bf16 give the in-process bf16 losses bit for bit" \
  || fail "bf16 across processes: $verdict"

# Shard processes with their own device edges take the precision from the
# coordinator's job: the in-process --ps-shards=2 bf16 run's losses and
# bytes, bit for bit.
"$CLEAVE" --role=all --ps-shards=2 --devices=4 --profile=fast "${mlp[@]}" --log-level=warn \
  --report="$WORK/inproc-2.json" || fail "in-process 2-shard bf16 mlp failed"
shard_ports=()
for s in a b; do
  "$CLEAVE" --role=ps-shard --listen=127.0.0.1:0 --edge=127.0.0.1:0 --threads=1 > "$WORK/shard-$s.log" 2>&1 &
  shard_ports+=("127.0.0.1:$(wait_port "$WORK/shard-$s.log")")
done
"$CLEAVE" --role=ps --shards="${shard_ports[0]},${shard_ports[1]}" --listen=127.0.0.1:0 --min-devices=4 \
  "${mlp[@]}" --log-level=info --report="$WORK/shards.json" > "$WORK/coord.log" 2>&1 &
ps=$!
port=$(wait_port "$WORK/coord.log")
for i in 1 2 3 4; do
  "$CLEAVE" --role=device --connect="127.0.0.1:$port" --profile=fast --threads=1 --log-level=warn \
    --reconnect-seconds=0 &
done
timeout 300 tail --pid=$ps -f /dev/null
wait $ps || fail "bf16 coordinator failed: $(tail -3 "$WORK/coord.log")"
wait
verdict=$(python3 - "$WORK/inproc-2.json" "$WORK/shards.json" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
down = sum(s["bytes_down"] for s in got.get("per_shard", []))
if got["losses"] != ref["losses"]: print("losses differ")
elif down != ref["bytes_down"] or down == 0: print(f"bytes down {down} against {ref['bytes_down']}")
else: print("equal")
PY
)
[[ $verdict == equal ]] && echo "ok: 2 shard processes feeding 4 devices with --wire=bf16 give the in-process bf16 losses and bytes" \
  || fail "bf16 through shard processes: $verdict"

"$CLEAVE" --role=all --devices=2 --steps=1 --wire=fp16 > "$WORK/bad.out" 2>&1
[[ $? == 2 ]] && grep -q "fp32, bf16 or bf16-operands" "$WORK/bad.out" && echo "ok: --wire=fp16 is refused" \
  || fail "--wire=fp16: $(cat "$WORK/bad.out")"
"$CLEAVE" --role=device --connect=127.0.0.1:1 --wire=bf16 > "$WORK/device.out" 2>&1
[[ $? == 2 ]] && grep -q "is for --role=all, ps and simulate" "$WORK/device.out" && echo "ok: --wire on a device process is refused" \
  || fail "--role=device --wire=bf16: $(cat "$WORK/device.out")"
finish
