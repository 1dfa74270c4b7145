#!/usr/bin/env bash
# Sparse mode (LSH-sampled softmax, sparse updates) against the dense full
# softmax of the same extreme classifier, in one process, same seed:
#  - gcide-nextword: P@1 and P@5 of both after the same steps (goal: sparse
#    at least 97% of dense), and their step times;
#  - spell-670k (663,473 labels, as wide as Amazon-670K): step time of each
#    (goal: sparse at least 5x faster). Dense takes fewer steps there (each
#    is seconds long); sparse takes enough to include its rehashes.
# Usage: bench/sparse/run.sh [path/to/cleave] [xc data dir]   (not part of CI)
# Needs the tasks built: python3 training/data/build_xc_datasets.py
# Steps: GCIDE_STEPS (default 1000), SPELL_SPARSE_STEPS (100),
# SPELL_DENSE_STEPS (10); GCIDE_FLAGS / SPELL_FLAGS add sparse-mode flags.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cleave=${1:-$here/../../build/cmd/cleave}
data=${2:-$here/../../build/xc-data}
out=${OUT:-$(mktemp -d)}
gcide_steps=${GCIDE_STEPS:-1000}
spell_sparse_steps=${SPELL_SPARSE_STEPS:-100}
spell_dense_steps=${SPELL_DENSE_STEPS:-10}
threads=${THREADS:-2}

run() {  # run NAME FLAGS...: one training run, its report in $out/NAME.json
  local name=$1; shift
  local cmd=("$cleave" --model=xc --data-dir="$data" --seed=1 --threads="$threads"
             --log-level=warn --report="$out/$name.json" "$@")
  echo "+ ${cmd[*]}"
  "${cmd[@]}"
}

# shellcheck disable=SC2086
run gcide-sparse --dataset=gcide-nextword --steps="$gcide_steps" ${GCIDE_FLAGS:-}
run gcide-dense --dataset=gcide-nextword --steps="$gcide_steps" --dense
# shellcheck disable=SC2086
run spell-sparse --dataset=spell-670k --steps="$spell_sparse_steps" --eval-samples=2000 ${SPELL_FLAGS:-}
run spell-dense --dataset=spell-670k --steps="$spell_dense_steps" --eval-samples=2000 --dense

python3 - "$out" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json"))
     for n in ("gcide-sparse", "gcide-dense", "spell-sparse", "spell-dense")}
print(f"{'run':14} {'steps':>5} {'P@1':>7} {'P@5':>7} {'active':>7} {'bytes/sample':>12} "
      f"{'mean step s':>11} {'median s':>9}")
for n, d in r.items():
    print(f"{n:14} {d['steps']:5d} {d['p_at_1']:7.4f} {d['p_at_5']:7.4f} {d['active_fraction']:7.4f} "
          f"{d['sparse_bytes_per_sample']:12.0f} {d['mean_step_seconds']:11.4f} {d['median_step_seconds']:9.4f}")
g, s = (r["gcide-sparse"], r["gcide-dense"]), (r["spell-sparse"], r["spell-dense"])
print(f"gcide-nextword: sparse P@1 is {100 * g[0]['p_at_1'] / g[1]['p_at_1']:.1f}% of dense (goal >= 97%); "
      f"step {g[1]['mean_step_seconds'] / g[0]['mean_step_seconds']:.2f}x faster")
print(f"spell-670k: sparse mean step {s[1]['mean_step_seconds'] / s[0]['mean_step_seconds']:.2f}x faster "
      f"than dense (goal >= 5x), median {s[1]['median_step_seconds'] / s[0]['median_step_seconds']:.2f}x")
PY
echo "reports in $out"
