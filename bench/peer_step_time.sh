#!/usr/bin/env bash
# Peer benchmark: cleave's reference per-step training time against PyTorch
# 1.13 (Debian python3-torch, CPU, OpenBLAS) on identical shapes, batch and
# thread count. Prints a table of median seconds per step and the ratio
# ours/torch (goal: <= 1.0). Not part of CI.
#
#   bench/peer_step_time.sh [--threads=N] [--rounds=R] [--cases=mlp,gpt-small,opt-125m]
#                           [--opt-context=C] [--opt-batch=B] [--cleave=PATH]
#
# Each round runs every case as ours then torch, back to back; a side's figure
# is the best (lowest) of its per-round medians. Installs python3-torch and
# libopenblas0-pthread with apt-get if they are missing (needs root or sudo).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cleave="${CLEAVE:-$root/build/cmd/cleave}"
threads="$(nproc)"
rounds=3
cases="mlp,gpt-small,opt-125m"
opt_context=128
opt_batch=4
py=/usr/bin/python3   # Debian's interpreter: python3-torch is installed for it

for arg in "$@"; do
  case "$arg" in
    --threads=*) threads="${arg#*=}" ;;
    --rounds=*) rounds="${arg#*=}" ;;
    --cases=*) cases="${arg#*=}" ;;
    --opt-context=*) opt_context="${arg#*=}" ;;
    --opt-batch=*) opt_batch="${arg#*=}" ;;
    --cleave=*) cleave="${arg#*=}" ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "peer_step_time.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# --- dependencies (idempotent) ---------------------------------------------
missing=()
for pkg in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[[ -x "$cleave" ]] || { echo "no cleave binary at $cleave (build it or pass --cleave=PATH)" >&2; exit 1; }

# --- environment report ------------------------------------------------------
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== torch configuration"
"$py" "$here/peer_torch.py" --threads="$threads" --show-config
echo "== libblas.so.3 alternative"
update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep -E '^(Status|Value):' \
  || echo "(update-alternatives has no libblas.so.3-x86_64-linux-gnu)"
echo

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

json_field() {  # file field
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# case name | description | cleave arguments | peer_torch.py arguments
# Step counts: ours' first step includes allocation (the median ignores it);
# torch gets untimed warm-up steps instead.
declare -A desc ours peer
desc[mlp]="mlp 784-512-256-10, batch 64"
ours[mlp]="--model=mlp --hidden=512,256 --batch=64 --steps=300"
peer[mlp]="--model=mlp --hidden=512,256 --batch=64 --steps=300 --warmup-steps=10"
desc[gpt-small]="gpt small d256 L4 H4 ffn1024 vocab256, ctx 128, batch 16"
ours[gpt-small]="--model=gpt --shape=small --vocab=256 --context=128 --batch=16 --steps=16 --eval-tokens=2048"
peer[gpt-small]="--model=gpt --shape=small --vocab=256 --context=128 --batch=16 --steps=15 --warmup-steps=2"
desc[opt-125m]="gpt opt-125m vocab50272, ctx $opt_context, batch $opt_batch"
ours[opt-125m]="--model=gpt --shape=opt-125m --vocab=50272 --context=$opt_context --batch=$opt_batch --steps=6 --eval-tokens=$((opt_context * opt_batch))"
peer[opt-125m]="--model=gpt --shape=opt-125m --vocab=50272 --context=$opt_context --batch=$opt_batch --steps=5 --warmup-steps=1"

IFS=, read -r -a case_list <<<"$cases"
declare -A best_ours best_torch per_round
for c in "${case_list[@]}"; do
  [[ -n "${desc[$c]:-}" ]] || { echo "unknown case '$c' (mlp, gpt-small, opt-125m)" >&2; exit 2; }
done

# Both sides spin OpenMP barriers over every core: anything else running
# (a build, tests) inflates the medians far beyond its share. Run on a quiet box.
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (cores: $(nproc))"
start=$SECONDS
for ((r = 1; r <= rounds; ++r)); do
  for c in "${case_list[@]}"; do
    # shellcheck disable=SC2086
    "$cleave" --role=all --devices=0 ${ours[$c]} --threads="$threads" \
      --report="$tmp/ours.json" --log-level=warn >/dev/null
    o="$(json_field "$tmp/ours.json" median_step_seconds)"
    # shellcheck disable=SC2086
    "$py" "$here/peer_torch.py" ${peer[$c]} --threads="$threads" >"$tmp/torch.json"
    t="$(json_field "$tmp/torch.json" median_step_seconds)"
    printf '[round %d] %-10s ours %.5f s/step  torch %.5f s/step  (%ds elapsed, load %s)\n' \
      "$r" "$c" "$o" "$t" $((SECONDS - start)) "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
    per_round[$c]+="${per_round[$c]:+ }$o/$t"
    best_ours[$c]="$("$py" -c 'import sys; print(min(float(sys.argv[1]), float(sys.argv[2] or "inf")))' "$o" "${best_ours[$c]:-}")"
    best_torch[$c]="$("$py" -c 'import sys; print(min(float(sys.argv[1]), float(sys.argv[2] or "inf")))' "$t" "${best_torch[$c]:-}")"
  done
done

echo
echo "Peer step time: cleave (reference, --role=all --devices=0) vs PyTorch $("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) CPU"
echo "threads=$threads (torch: set_num_threads($threads), interop 1, OpenBLAS pthread, OMP_WAIT_POLICY=passive, AdamW foreach=False), rounds=$rounds, best of per-round medians"
printf '%-11s %-56s %12s %12s %12s\n' case shape "ours s/step" "torch s/step" "ours/torch"
for c in "${case_list[@]}"; do
  printf '%-11s %-56s %12.5f %12.5f %11.2fx\n' "$c" "${desc[$c]}" "${best_ours[$c]}" "${best_torch[$c]}" \
    "$("$py" -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' "${best_ours[$c]}" "${best_torch[$c]}")"
done
echo "per-round medians ours/torch:"
for c in "${case_list[@]}"; do echo "  $c: ${per_round[$c]}"; done
echo "total $((SECONDS - start)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
