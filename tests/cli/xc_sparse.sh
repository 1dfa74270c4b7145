#!/usr/bin/env bash
# --model=xc end to end on a small xc:DIR task: sparse mode and the dense full
# softmax train, evaluate exactly and report P@1, P@5, the active fraction and
# the model-let bytes per sample by their documented formula; sparse mode's
# bad flags are refused with one line.
source "$(dirname "$0")/lib.sh"

make_xc_dir "$WORK/task"
common=(--model=xc --dataset=xc:"$WORK/task" --hidden=16 --batch=32 --lr=5e-2 --threads=2
        --log-level=warn)

"$CLEAVE" "${common[@]}" --steps=120 --lsh-k=2 --lsh-l=4 --bucket-size=4 --min-active=8 \
  --rehash-every=10 --rebuild-every=40 --report="$WORK/sparse.json" || fail "sparse run failed"
"$CLEAVE" "${common[@]}" --steps=120 --dense --report="$WORK/dense.json" || fail "dense run failed"

verdict=$(python3 - "$WORK/sparse.json" "$WORK/dense.json" <<'PY'
import json, sys
sparse, dense = (json.load(open(p)) for p in sys.argv[1:3])
hidden, labels = 16, 40
problems = []
for name, d in (("sparse", sparse), ("dense", dense)):
    for k in ("p_at_1", "p_at_5", "active_fraction", "sparse_bytes_per_sample"):
        if k not in d: problems.append(f"{name}: no {k}")
    if problems: continue
    if not (0 <= d["p_at_1"] <= 1 and 0 <= d["p_at_5"] <= 1):
        problems.append(f"{name}: P@1 {d['p_at_1']} P@5 {d['p_at_5']}")
    if d["p_at_1"] < 0.3: problems.append(f"{name}: P@1 {d['p_at_1']} (nothing learned)")
    if d["model"] != f"xc 300-{hidden}-{labels}": problems.append(f"{name}: model {d['model']}")
if not problems:
    a = sparse["active_fraction"] * labels
    if not 8 <= a < labels: problems.append(f"sparse: mean active set {a}")
    # hidden down and its gradient up, (id, logit) pairs and stats up, dlogits down
    want = 8 * hidden + 12 * a + 16
    if abs(sparse["sparse_bytes_per_sample"] - want) > 1e-6 * want:
        problems.append(f"sparse bytes {sparse['sparse_bytes_per_sample']}, formula {want}")
    if dense["active_fraction"] != 1: problems.append(f"dense active {dense['active_fraction']}")
    if dense["sparse_bytes_per_sample"] != 8 * hidden + 8 * labels:
        problems.append(f"dense bytes {dense['sparse_bytes_per_sample']}")
    if sparse["sparse"] is not True or dense["sparse"] is not False: problems.append("sparse flag")
print("; ".join(problems) or "ok")
PY
)
[[ $verdict == ok ]] && echo "ok: xc reports P@1, P@5, active fraction and bytes per sample" \
  || fail "xc report: $verdict"

refuse() {  # refuse "words the reason must contain" args...
  local want=$1; shift
  local err rc
  err=$("$CLEAVE" --steps=1 "$@" 2>&1 >/dev/null); rc=$?
  if ((rc == 0 || rc > 2)); then fail "cleave $* exited $rc: $err"; return; fi
  if [[ $(printf '%s\n' "$err" | grep -c .) -ne 1 || $err != *"$want"* ]]; then
    fail "cleave $*: expected one line with '$want', got: $err"; return
  fi
  echo "ok: cleave $* -> $err"
}
refuse "--ps-shards=1" "${common[@]}" --ps-shards=2
refuse "--dense is the single-process reference" "${common[@]}" --dense --devices=2
refuse "multiple of --rehash-every" "${common[@]}" --devices=2 --checkpoint-dir="$WORK/ck2" \
  --checkpoint-every=7
refuse "--modellet-copy-every belongs to --model=xc on --devices" "${common[@]}" --modellet-copy-every=5
refuse "--modellet-copy-every belongs to --model=xc" --model=mlp --modellet-copy-every=5
refuse "--lsh must be dwta or simhash" "${common[@]}" --lsh=minhash
refuse "--bucket-policy must be fifo or reservoir" "${common[@]}" --bucket-policy=lru
refuse "--lsh-k must be at least 1" "${common[@]}" --lsh-k=-2
refuse "multiple of --rehash-every" "${common[@]}" --checkpoint-dir="$WORK/ck" --checkpoint-every=7
refuse "--lsh-l belongs to --model=xc" --model=mlp --lsh-l=4
refuse "--dense belongs to --model=xc" --model=gpt --dense
refuse "needs --model=xc" --model=mlp --dataset=xc:"$WORK/task"
refuse "--hidden: xc has one hidden layer" "${common[@]}" --hidden=16,8
refuse "lsh:" "${common[@]}" --lsh-k=20
refuse "nowhere" --model=xc --dataset=xc:"$WORK/nowhere"
finish
