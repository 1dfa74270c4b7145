#!/usr/bin/env bash
# Pins the first 20 steps' losses of three runs to the bits recorded in
# tests/golden/: the mlp on 16 fast devices (one PS shard and two) and the
# gpt small in one process. Code that only moves or restructures must give
# the same bits. The kernels pin Eigen's GEMM blocking (kernels/gemm.cpp)
# and the runs name their threads, so the bits depend only on the SIMD
# instruction sets the binary was compiled for (-march=native picks them;
# the report's "simd" names them), the compiler and the CPU model (the
# report's "cpu_model", what -march=native resolved to): an AMD znver3 and
# an Intel AVX-512 machine building with -mno-avx512f, both "avx avx2 fma",
# parted at step 2 (1.2e-7 relative by step 20), and tuning was not why
# (-mtune=generic and znver3 gave the same bits). Golden files are kept per
# instruction-set list (tests/golden/<sets>/) and name the model they were
# recorded on (files from before say none, and serve any model of their
# sets): a binary compares bit for bit with its own sets' files where the
# model is its own too. Otherwise it compares to 1e-5 relative, and says
# so: another model of the same sets drifts about 1e-7 in 20 steps; another
# set's files may drift further in the 2-shard mlp (its slices' GEMMs take
# other kernels, 3.2e-3 between AVX2 and AVX-512), so record the set with
# --record.
#
#   bash tests/cli/golden.sh build/cmd/cleave            check
#   bash tests/cli/golden.sh build/cmd/cleave --record   write this binary's golden files anew
source "$(dirname "$0")/lib.sh"
GOLDEN=$(cd "$(dirname "$0")/../golden" && pwd)
record=${2:-}

# golden_dir REPORT: the folder of the instruction sets the report names
# ("avx avx2 fma" -> avx-avx2-fma; none for SSE2 only).
golden_dir() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["simd"].replace(" ", "-") or "none")' "$1"
}

# golden_file OWN NAME: this binary's file, or else another set's.
golden_file() {
  if [[ -f $1/$2.json ]]; then echo "$1/$2.json"; return; fi
  compgen -G "$GOLDEN/*/$2.json" | head -1
}

check() {  # check NAME [cleave flags...]
  local name=$1; shift
  "$CLEAVE" --steps=20 --threads=2 --log-level=warn "$@" --report="$WORK/$name.json" \
    || { fail "$name: run failed"; return; }
  local own simd
  own="$GOLDEN/$(golden_dir "$WORK/$name.json")" || { fail "$name: the report names no SIMD sets"; return; }
  simd=$(basename "$own")
  if [[ $record == --record ]]; then
    mkdir -p "$own"
    python3 - "$WORK/$name.json" "$own/$name.json" "$simd" "$*" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
json.dump({"flags": sys.argv[4], "simd": sys.argv[3], "cpu_model": got["cpu_model"], "tiles": got.get("tiles", 0),
           "losses": got["losses"]}, open(sys.argv[2], "w"), indent=1)
PY
    echo "recorded $name"
    return
  fi
  local verdict gold
  gold=$(golden_file "$own" "$name")
  [[ -n $gold ]] || { fail "$name: no golden file in $GOLDEN"; return; }
  verdict=$(python3 - "$WORK/$name.json" "$gold" "$simd" <<'PY'
import json, sys
got, gold = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if len(got["losses"]) != 20: print(f"{len(got['losses'])} steps, expected 20"); sys.exit()
if (got.get("tiles", 0) > 0) != (gold["tiles"] > 0):
    print(f"{got.get('tiles', 0)} tiles, the golden run had {gold['tiles']}"); sys.exit()
model, gold_model = got.get("cpu_model", "unknown"), gold.get("cpu_model")
if gold["simd"] == sys.argv[3] and gold_model in (None, model):
    if got["losses"] == gold["losses"]: print("equal bits")
    else:
        bad = next(i for i, (a, b) in enumerate(zip(got["losses"], gold["losses"])) if a != b)
        print(f"step {bad + 1}: loss {got['losses'][bad]!r}, golden {gold['losses'][bad]!r}")
else:
    worst = max(abs(a - b) / abs(b) for a, b in zip(got["losses"], gold["losses"]))
    print("equal" if worst <= 1e-5 else f"losses differ by {worst:.2e} relative",
          f"(to 1e-5: recorded on SIMD '{gold['simd']}' of CPU model {gold_model}, "
          f"this binary has '{sys.argv[3]}' for {model})")
PY
)
  [[ $verdict == equal* ]] && echo "ok: $name $verdict" || fail "$name: $verdict"
}

fleet=(--role=all --devices=16 --profile=fast --ps-flops=1e9 --model=mlp --dataset=fashion-mnist)
check mlp_16_fast "${fleet[@]}"
check mlp_16_fast_2_shards "${fleet[@]}" --ps-shards=2
check gpt_small_in_process --role=all --devices=0 --model=gpt --dataset=fortunes
finish
