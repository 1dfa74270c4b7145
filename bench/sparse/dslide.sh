#!/usr/bin/env bash
# Issue 18's D-SLIDE comparison: 16 devices on emulated 1 Gbps links
# (dslide_fleet.json: 1.25e8 B/s each way, 0.5 ms, a 16-core node's FLOP/s
# and 64 GB), the same task and seed:
#  - sparse mode: the xc output layer as model-lets on the 16 emulated
#    devices, every model-let frame paced to its device's links;
#  - dense data-parallel: the dense full softmax replicated on the 16
#    devices, 1/N of the batch each, the gradients summed by a ring
#    all-reduce over the same links (--xc-baseline=data-parallel).
# Prints mean and median step (from the 2nd: the 1st places the model-lets),
# communication seconds and bytes per step (copies and placing included),
# peak RSS, and the ratio dense-DP step / sparse step (D-SLIDE claims 66-80x).
# Compute is this host's in both (2 cores here, shared by the PS and all 16
# emulated devices on the sparse side); see docs/SPARSE.md, "The D-SLIDE comparison".
# Usage: bench/sparse/dslide.sh [path/to/cleave] [xc data dir]   (not in CI)
# TASK (spell-670k), SPARSE_STEPS (60), DENSE_STEPS (10), REHASH_EVERY (50:
# the sparse steps include one rehash), EVAL (1000 test samples), FLAGS
# (more sparse-mode flags), FLEET (dslide_fleet.json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cleave=${1:-$here/../../build/cmd/cleave}
data=${2:-$here/../../build/xc-data}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
task=${TASK:-spell-670k}
sparse_steps=${SPARSE_STEPS:-60}
dense_steps=${DENSE_STEPS:-10}
rehash_every=${REHASH_EVERY:-50}
eval_samples=${EVAL:-1000}
fleet=${FLEET:-$here/dslide_fleet.json}
flags=${FLAGS:-}
threads=${THREADS:-2}

run() {  # run NAME FLAGS...: one training run; its report in $out/NAME.json, its RSS in $out/NAME.time
  local name=$1; shift
  local cmd=("$cleave" --model=xc --dataset="$task" --data-dir="$data" --seed=1 --threads="$threads"
             --fleet="$fleet" --eval-samples="$eval_samples" --log-level=warn --report="$out/$name.json" "$@")
  echo "+ ${cmd[*]}"
  /usr/bin/time -v -o "$out/$name.time" "${cmd[@]}"
}

# shellcheck disable=SC2086
# A device answers placing only once its index is built, and the 16 devices
# build theirs on this host's cores: on a busy host that passes the default
# 30 s after which a device counts as lost. Nobody dies here, so wait.
run sparse --steps="$sparse_steps" --rehash-every="$rehash_every" --tile-timeout=600 $flags
run dense_dp --steps="$dense_steps" --xc-baseline=data-parallel

python3 - "$out" "$task" "$rehash_every" <<'PY'
import json, re, statistics, sys
out, task, rehash_every = sys.argv[1], sys.argv[2], sys.argv[3]
r = {n: json.load(open(f"{out}/{n}.json")) for n in ("sparse", "dense_dp")}
rss = {}
for n in r:
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{out}/{n}.time").read())
    rss[n] = int(m.group(1)) / 1024 if m else float("nan")
s, d = r["sparse"], r["dense_dp"]
ml, dp = s["modellets"], d["data_parallel"]
if ml["failures"]:
    sys.exit(f"a device was declared lost ({ml['failures'][0]}): the sparse run is not the comparison's")
devices = dp["devices"]
# Communication per step. Sparse: the slowest device's paced link time of
# every exchange (copies and placing included), and every frame's bytes
# (the PS's link carries them all; a device carries about 1/16). Dense DP:
# the ring's time held, and the bytes every device sends (and receives).
s_comm_s = ml["link_seconds_per_step"]
s_bytes = ml["bytes_per_sample"] * s["batch"]
d_comm_s = dp["exchange_seconds_per_step"]
d_bytes_dev = dp["bytes_per_device_per_step"]
rows = [
    ("sparse, model-lets on 16 devices", s, s_comm_s, s_bytes / devices, s_bytes, rss["sparse"]),
    ("dense data-parallel, ring all-reduce", d, d_comm_s, d_bytes_dev, d_bytes_dev * devices, rss["dense_dp"]),
]
# Step 1 places the model-lets (every device builds its index) on the
# sparse side: a set-up, not a step. Both runs' steps are counted from 2.
def steady(x):
    t = x["step_seconds"][1:]
    return statistics.mean(t), statistics.median(t), x["step_seconds"][0]
print(f"\n{task}, {devices} devices at {dp['ring_bytes_per_second']:.3g} B/s, latency {dp['ring_latency_seconds'] * 1e3:.1f} ms; "
      f"steps from the 2nd (the 1st: placing)")
print(f"| run | steps | 1st step | mean step | median step | comm s/step | MB/step per device | MB/step all links | peak RSS |")
print(f"|---|---|---|---|---|---|---|---|---|")
for name, x, cs, bd, ba, m in rows:
    mean, median, first = steady(x)
    print(f"| {name} | {x['steps']} | {first:.2f} s | {mean:.3f} s | {median:.3f} s | "
          f"{cs:.3f} | {bd / 1e6:.2f} | {ba / 1e6:.1f} | {m:.0f} MiB |")
(sm, smed, _), (dm, dmed, _) = steady(s), steady(d)
print(f"\ndense-DP step / sparse step: {dm / sm:.2f}x on the mean, {dmed / smed:.2f}x on the median "
      f"(D-SLIDE claims 66-80x); with the 1st steps: {d['mean_step_seconds'] / s['mean_step_seconds']:.2f}x on the mean")
print(f"the links alone: the ring's {d_comm_s:.3f} s a step against the model-lets' {s_comm_s:.3f} s: {d_comm_s / s_comm_s:.0f}x")
print(f"dense DP per step: compute {dp['compute_seconds_per_step']:.3f} s (this host, the whole batch), "
      f"all-reduce {dp['allreduce_seconds_per_step']:.3f} s of {dp['allreduce_bytes_per_step'] / 1e6:.1f} MB, "
      f"input layer's all-gather {dp['allgather_seconds_per_step']:.4f} s of {dp['allgather_bytes_per_step'] / 1e6:.2f} MB "
      f"(the whole layer all-reduced instead: {dp['input_layer_whole_bytes_per_step'] / 1e6:.1f} MB, untimed); "
      f"a replica's state {dp['state_bytes_per_device'] / 1e9:.2f} GB")
print(f"sparse per step: PS waited on exchanges {ml['exchange_seconds_per_step']:.3f} s, of which the paced links "
      f"{ml['link_seconds_per_step']:.3f} s; frames {ml['step_bytes_per_sample']:.0f} B/sample in steps, "
      f"{ml['copy_bytes_per_sample']:.0f} copies, {ml['place_bytes_per_sample']:.0f} placing; "
      f"active {100 * s['active_fraction']:.2f}%, a rehash every {rehash_every} steps")
PY
echo "reports in $out"
