#!/usr/bin/env bash
# The relay sweep in the simulator (bench/scale/relays.py): Cleave with 0, 8,
# 32 and 128 relays against Asteroid and Megatron, OPT-6.7B and OPT-13B, PS
# links of 10 and 100 Gbit/s. Usage: bench/scale/relays.sh [path/to/cleave]
# [out-dir]; MODELS=opt-6.7b for one model. Copies relays.svg and
# relays.json into docs/scale/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cleave="$(realpath "${1:-$repo/build/cmd/cleave}")"  # before the cd below
out="${2:-$here/out}"
PY="${PYTHON:-/usr/bin/python3}"
"$PY" -c 'import matplotlib' 2>/dev/null || { echo "needs python3-matplotlib (apt-get install -y python3-matplotlib)" >&2; exit 2; }
cd "$here"
"$PY" "$here/relays.py" --cleave "$cleave" --out "$out" --devices "${DEVICES:-256,1024,4096,16384}" \
  --models "${MODELS:-opt-6.7b,opt-13b}"
mkdir -p "$repo/docs/scale"
cp "$out/relays.svg" "$out/relays.json" "$repo/docs/scale/"
