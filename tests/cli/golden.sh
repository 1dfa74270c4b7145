#!/usr/bin/env bash
# Pins the first 20 steps' losses of three runs to the bits recorded in
# tests/golden/: the mlp on 16 fast devices (one PS shard and two) and the
# gpt small in one process. Code that only moves or restructures must give
# the same bits. The bits depend on the instruction set the build targets
# (-march=native picks Eigen's kernels), so golden files are kept per set
# of SIMD flags (tests/golden/<flags>/, as the machine that wrote them had
# them): a machine finds its own and compares bit for bit. A machine whose
# flags have no files compares to 1e-5 relative against another set's, and
# says so; there the 2-shard mlp may drift further (its slices' GEMMs take
# other kernels), so record the machine's own set with --record.
#
#   bash tests/cli/golden.sh build/cmd/cleave            check
#   bash tests/cli/golden.sh build/cmd/cleave --record   write this machine's golden files anew
source "$(dirname "$0")/lib.sh"
GOLDEN=$(cd "$(dirname "$0")/../golden" && pwd)
record=${2:-}

simd_flags() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512f|avx512bw|avx512vl|avx2|fma|avx)$' | sort | tr '\n' ' '; }
SIMD=$(simd_flags)
OWN="$GOLDEN/$(echo $SIMD | tr ' ' '-')"
[[ -n ${SIMD// /} ]] || OWN="$GOLDEN/none"

# golden_file NAME: this machine's file, or else another set's.
golden_file() {
  if [[ -f $OWN/$1.json ]]; then echo "$OWN/$1.json"; return; fi
  compgen -G "$GOLDEN/*/$1.json" | head -1
}

check() {  # check NAME [cleave flags...]
  local name=$1; shift
  "$CLEAVE" --steps=20 --threads=2 --log-level=warn "$@" --report="$WORK/$name.json" \
    || { fail "$name: run failed"; return; }
  if [[ $record == --record ]]; then
    mkdir -p "$OWN"
    python3 - "$WORK/$name.json" "$OWN/$name.json" "$SIMD" "$*" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
json.dump({"flags": sys.argv[4], "simd": sys.argv[3], "tiles": got.get("tiles", 0),
           "losses": got["losses"]}, open(sys.argv[2], "w"), indent=1)
PY
    echo "recorded $name"
    return
  fi
  local verdict gold
  gold=$(golden_file "$name")
  [[ -n $gold ]] || { fail "$name: no golden file in $GOLDEN"; return; }
  verdict=$(python3 - "$WORK/$name.json" "$gold" "$SIMD" <<'PY'
import json, sys
got, gold = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if len(got["losses"]) != 20: print(f"{len(got['losses'])} steps, expected 20"); sys.exit()
if (got.get("tiles", 0) > 0) != (gold["tiles"] > 0):
    print(f"{got.get('tiles', 0)} tiles, the golden run had {gold['tiles']}"); sys.exit()
if gold["simd"] == sys.argv[3]:
    if got["losses"] == gold["losses"]: print("equal bits")
    else:
        bad = next(i for i, (a, b) in enumerate(zip(got["losses"], gold["losses"])) if a != b)
        print(f"step {bad + 1}: loss {got['losses'][bad]!r}, golden {gold['losses'][bad]!r}")
else:
    worst = max(abs(a - b) / abs(b) for a, b in zip(got["losses"], gold["losses"]))
    print("equal" if worst <= 1e-5 else f"losses differ by {worst:.2e} relative",
          f"(to 1e-5: recorded on SIMD '{gold['simd']}', this machine has '{sys.argv[3]}')")
PY
)
  [[ $verdict == equal* ]] && echo "ok: $name $verdict" || fail "$name: $verdict"
}

fleet=(--role=all --devices=16 --profile=fast --ps-flops=1e9 --model=mlp --dataset=fashion-mnist)
check mlp_16_fast "${fleet[@]}"
check mlp_16_fast_2_shards "${fleet[@]}" --ps-shards=2
check gpt_small_in_process --role=all --devices=0 --model=gpt --dataset=fortunes
finish
