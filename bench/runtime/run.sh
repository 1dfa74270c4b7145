#!/usr/bin/env bash
# Runtime benchmarks, each a ratio measured within this one run:
#  (a) framework overhead: gpt small on 16 emulated devices faster than this
#      host, against the single-process reference (--devices=0);
#  (b) traffic scaling: bytes each device receives per step at 4, 16, 64 devices;
#  (d) heterogeneity: half fast, half 4x slower devices; the whole step
#      against its prediction, the wait on devices against the cost model's,
#      and the split it chose.
# Usage: bench/runtime/run.sh [path/to/cleave]   (not part of CI)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CLEAVE=${1:-$here/../../build/cmd/cleave}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gpt=(--model=gpt --eval-tokens=2048 --log-level=warn --threads=2)
get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

echo "== (a) overhead: gpt small, 16 'fast' devices vs --devices=0 (median step, 3 interleaved rounds)"
for round in 1 2 3; do
  "$CLEAVE" --role=all --devices=0 "${gpt[@]}" --steps=12 --report="$work/a0-$round.json"
  "$CLEAVE" --role=all --devices=16 --profile=fast "${gpt[@]}" --steps=12 --report="$work/a16-$round.json"
  r0=$(get "$work/a0-$round.json" 'd["median_step_seconds"]')
  r16=$(get "$work/a16-$round.json" 'd["median_step_seconds"]')
  python3 -c "print(f'round $round: reference {$r0:.3f} s, 16 devices {$r16:.3f} s, ratio {$r16/$r0:.3f}  (tiles/step {$(get "$work/a16-$round.json" 'd["tiles"]/d["steps"]'):.0f})')"
done

# (b) and (d) model a PS that coordinates rather than computes (--ps-flops=1e9),
# so every GEMM worth splitting goes to the fleet.
echo "   same, 16 devices at 1e11 FLOP/s each, 10 GB/s links, one tile per device (bench/runtime/overhead_fleet.json): the"
echo "   'fast' fleet above is bound only by PS egress, so the planner packs its tiles onto one device"
for round in 1 2 3; do
  "$CLEAVE" --role=all --devices=0 "${gpt[@]}" --steps=12 --report="$work/o0-$round.json"
  "$CLEAVE" --role=all --fleet="$here/overhead_fleet.json" --ps-egress=1e10 --max-tiles-per-device=1 "${gpt[@]}" --steps=12 --report="$work/o16-$round.json"
  "$CLEAVE" --role=all --fleet="$here/overhead_fleet.json" --ps-egress=1e10 --max-tiles-per-device=1 --ps-shards=2 "${gpt[@]}" --steps=12 --report="$work/o16s2-$round.json"
  r0=$(get "$work/o0-$round.json" 'd["median_step_seconds"]')
  get "$work/o16-$round.json" "'   round $round: reference %.3f s, 16 devices %.3f s, ratio %.3f (tiles/step %.0f, devices used %d); with --ps-shards=2 ratio %.3f' % ($r0, d['median_step_seconds'], d['median_step_seconds']/$r0, d['tiles']/d['steps'], sum(1 for x in d['per_device'] if x['tiles']), $(get "$work/o16s2-$round.json" 'd["median_step_seconds"]')/$r0)"
done
python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
step = lambda f: json.load(open(f"{work}/{f}.json"))["median_step_seconds"]
# A round whose reference ran >10% slower than the run's fastest was slowed
# by the shared host, which flatters its ratio: it is shown but set apart.
refs = {r: step(f"o0-{r}") for r in (1, 2, 3)}
steady = [r for r in refs if refs[r] <= 1.1 * min(refs.values())]
for label, stem in (("one shard", "o16"), ("two shards", "o16s2")):
    ratios = {r: step(f"{stem}-{r}") / refs[r] for r in refs}
    print(f"   median ratio over the rounds, {label}: {statistics.median(ratios.values()):.3f}; "
          f"over the {len(steady)} whose reference was not slowed: "
          f"{statistics.median(ratios[r] for r in steady):.3f}")
PY
get "$work/o16-3.json" "'   step split of round 3 (s/step): ' + ', '.join('%s %.3f' % kv for kv in sorted(d['step_split_seconds'].items())) + ', PS issue time per tile %.3f ms' % (1e3 * d['ps_seconds_per_tile'])"

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
