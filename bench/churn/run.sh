#!/usr/bin/env bash
# Recovery benchmark: a lost device costs Cleave only its tiles; the
# baselines stop, restore the last checkpoint and redo the lost steps.
# Everything is measured in this one run, same fleet and model.
# Usage: bench/churn/run.sh [path/to/cleave]   (not part of CI; ~5 minutes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/recovery.py" "${1:-$here/../../build/cmd/cleave}"
