#!/usr/bin/env bash
# Runtime benchmarks, each a ratio measured within this one run:
#  (a) framework overhead: gpt small on 16 and 64 emulated devices faster
#      than this host, against the single-process reference (--devices=0),
#      and 64 again planned as if tiles cost the PS nothing;
#  (b) traffic scaling: bytes each device receives per step at 4, 16, 64 devices;
#  (d) heterogeneity: half fast, half 4x slower devices; the whole step
#      against its prediction, the wait on devices against the cost model's,
#      and the split it chose.
# Usage: [ROUNDS=6] [ONLY=a] bench/runtime/run.sh [path/to/cleave]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=${1:-$here/../../build/cmd/cleave}
ROUNDS=${ROUNDS:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpt=(--model=gpt --eval-tokens=2048 --log-level=warn --threads=2)
get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# (a) 16 and 64 devices at 1e11 FLOP/s with 10 GB/s links and one tile per
# device (overhead_fleet.json, and a 64-device copy): a PS that is not the
# bottleneck, devices faster than this host, so what the step costs beyond
# the reference is the framework's. Rounds interleave the three runs.
echo "== (a) overhead: gpt small on the overhead fleet at 16 and 64 devices vs --devices=0 ($ROUNDS interleaved rounds)"
sed 's/"count": 16/"count": 64/' "$here/overhead_fleet.json" > "$work/overhead64.json"
over=(--ps-egress=1e10 --max-tiles-per-device=1)
for round in $(seq "$ROUNDS"); do
  "$CLEAVE" --role=all --devices=0 "${gpt[@]}" --steps=12 --report="$work/o0-$round.json"
  "$CLEAVE" --role=all --fleet="$here/overhead_fleet.json" "${over[@]}" "${gpt[@]}" --steps=12 --report="$work/o16-$round.json"
  "$CLEAVE" --role=all --fleet="$work/overhead64.json" "${over[@]}" "${gpt[@]}" --steps=12 --report="$work/o64-$round.json"
  # The plans of a cost model whose tiles cost the PS nothing, for comparison.
  "$CLEAVE" --role=all --fleet="$work/overhead64.json" "${over[@]}" --ps-tile-seconds=0 "${gpt[@]}" --steps=12 \
    --report="$work/o64free-$round.json"
done
python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
load = lambda f: json.load(open(f"{work}/{f}.json"))
refs = [load(f"o0-{r}")["median_step_seconds"] for r in range(1, rounds + 1)]
print(f"   reference: median {statistics.median(refs):.3f} s/step, range {min(refs):.3f}-{max(refs):.3f}")
for n in (16, 64, "64free"):
    reps = [load(f"o{n}-{r}") for r in range(1, rounds + 1)]
    ratios = [d["median_step_seconds"] / ref for d, ref in zip(reps, refs)]
    used = statistics.median(sum(1 for x in d["per_device"] if x["tiles"]) for d in reps)
    name = "64 devices, tiles free to the PS (--ps-tile-seconds=0)" if n == "64free" else f"{n} devices"
    print(f"   {name}: ratio median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
          f"(rounds {', '.join('%.3f' % r for r in ratios)}); tiles/step {reps[0]['tiles'] / reps[0]['steps']:.0f}, "
          f"devices used {used:.0f}")
    split = {k: statistics.median(d["step_split_seconds"][k] for d in reps) for k in reps[0]["step_split_seconds"]}
    verify = statistics.median(d["verify_seconds"] / d["steps"] for d in reps)
    rest = statistics.median(d["mean_step_seconds"] - sum(d["step_split_seconds"][k] for k in
                             ("issue_tiles", "wait_on_devices", "allgather", "ps_compute")) for d in reps)
    print(f"      where the PS's step goes (median s/step): issuing tiles {split['issue_tiles']:.3f}, "
          f"waiting on devices {split['wait_on_devices']:.3f} (of which checking results {verify:.3f}; predicted "
          f"{split['predicted_wait_on_devices']:.3f}), folding results {split['allgather']:.3f}, "
          f"local GEMMs {split['ps_compute']:.3f}, row-wise ops and the rest {rest:.3f}")
PY

[[ ${ONLY:-} == a ]] && exit 0  # ONLY=a: the overhead rounds alone

echo "== (b) traffic scaling: gpt small, 'vm' devices, bytes down per device per step"
printf "%8s %12s %14s %12s\n" devices tiles/step "MB/device/step" "MB total/step"
for n in 4 16 64; do
  "$CLEAVE" --role=all --devices=$n --profile=vm "${gpt[@]}" --steps=3 --ps-flops=1e9 --report="$work/b$n.json"
  get "$work/b$n.json" "'%8d %12.0f %14.2f %12.1f' % ($n, d['tiles']/d['steps'], d['bytes_down_per_device_per_step']/1e6, d['bytes_down']/d['steps']/1e6)"
done

echo "== (d) heterogeneity: 4 devices at 1e10 FLOP/s + 4 at 2.5e9, same links (bench/runtime/hetero_fleet.json)"
# gpt small at its default context and batch: GEMMs large enough that the
# slow devices are worth using.
"$CLEAVE" --role=all --fleet="$here/hetero_fleet.json" "${gpt[@]}" --steps=8 --ps-flops=1e9 \
  --report="$work/d.json"
# The whole step against its prediction: the cost model's time on devices
# plus the PS's own work profiled over the steps before (see
# actors/ps/step_predictor.hpp); every step but the first is compared.
get "$work/d.json" "'whole step %.3f s/step, predicted %.3f s/step (cost model %.3f + PS profile %.3f), measured/predicted %.2f over %d steps' % (d['step_prediction']['measured_seconds'], d['step_prediction']['predicted_seconds'], d['step_prediction']['predicted_device_seconds'], d['step_prediction']['predicted_seconds'] - d['step_prediction']['predicted_device_seconds'], d['step_prediction']['measured_over_predicted'], d['step_prediction']['steps_compared'])"
get "$work/d.json" "'the cost model alone: measured wait on devices %.3f s/step, predicted %.3f s/step, ratio %.2f' % (d['step_split_seconds']['wait_on_devices'], d['step_split_seconds']['predicted_wait_on_devices'], d['step_split_seconds']['wait_on_devices']/d['step_split_seconds']['predicted_wait_on_devices'])"
get "$work/d.json" "'PS work per step: issuing tiles %.3f s, local GEMMs %.3f s, gather %.3f s' % (d['step_split_seconds']['issue_tiles'], d['step_split_seconds']['ps_compute'], d['step_split_seconds']['allgather'])"
echo "assignment chosen (share of FLOPs per device):"
get "$work/d.json" "'\n'.join('  device %2d %-5s tiles %5d  GFLOP %8.1f  share %5.1f%%' % (x['id'], x['profile'], x['tiles'], x['flops']/1e9, 100*x['flops']/sum(y['flops'] for y in d['per_device'])) for x in d['per_device'])"
