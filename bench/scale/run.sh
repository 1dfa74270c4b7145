#!/usr/bin/env bash
# The paper's scale sweep in the simulator and its figures (bench/scale/sweep.py).
# Usage: bench/scale/run.sh [path/to/cleave] [out-dir]; copies the figures
# docs/RESULTS.md shows into docs/scale/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cleave="${1:-$repo/build/cmd/cleave}"
out="${2:-$here/out}"
PY="${PYTHON:-/usr/bin/python3}"
"$PY" -c 'import matplotlib' 2>/dev/null || { echo "needs python3-matplotlib (apt-get install -y python3-matplotlib)" >&2; exit 2; }
"$PY" "$here/sweep.py" --cleave "$cleave" --out "$out" --devices "${DEVICES:-16,64,256,1024,4096,16384}"
mkdir -p "$repo/docs/scale"
cp "$out"/{step_time,traffic,recovery,time_split,efficiency}.svg "$out/summary.json" "$repo/docs/scale/"
echo "figures in $out; the copies docs/RESULTS.md shows in docs/scale/"
