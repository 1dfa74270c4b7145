#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# SECONDS on a scratch copy of its seed corpus, so nothing is written to the
# source tree. One line per target; exits 1 on any crash, leak, sanitizer
# report or failed check (the input is kept under BUILD_DIR/crashes/).
#
#   tests/fuzz/run.sh SECONDS [BUILD_DIR]      (default BUILD_DIR: build/fuzz)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
secs=${1:?usage: tests/fuzz/run.sh SECONDS [BUILD_DIR]}
out=$(mkdir -p "${2:-$src/build/fuzz}" && cd "${2:-$src/build/fuzz}" && pwd)

# target:max_len. Lengths cover a few frames or a small file; http_head's
# passes the 8 KiB head cap.
targets=(frame:4096 tile:4096 edge:1024 enrolment:6000 checkpoint:16384 fleet:4096 churn:4096
         byzantine:4096 http_head:9000 xc:4096 modellet:4096 shard:4096)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# fuzz_enrolment signs requests with a throwaway CA.
bash "$src/deploy/ca.sh" init "$scratch/ca" > /dev/null
export CLEAVE_FUZZ_CA=$scratch/ca

probe='extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }'
if ! command -v clang++ >/dev/null; then
  echo "fuzz: FAILED: clang++ not found; install clang and libfuzzer-14-dev (bash deploy/setup.sh packages)"
  exit 1
fi
if ! echo "$probe" | clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o "$scratch/probe" 2>"$scratch/probe.log"; then
  echo "fuzz: FAILED: clang++ cannot link a libFuzzer target; install libclang-rt-14-dev and libfuzzer-14-dev"
  cat "$scratch/probe.log"
  exit 1
fi

if ! CC=clang CXX=clang++ cmake -S "$src" -B "$out" -DCLEAVE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
     >"$scratch/configure.log" 2>&1; then
  cat "$scratch/configure.log"; echo "fuzz: FAILED: configure"; exit 1
fi
if ! cmake --build "$out" -j2 >"$scratch/build.log" 2>&1; then
  grep -E "error|Error" "$scratch/build.log" | head -40; echo "fuzz: FAILED: build"; exit 1
fi

# One target: its line goes to $scratch/$t/line, and the exit status says
# whether it crashed.
run_target() {
  local entry=$1 t max_len dict=() rc=0 runs speed why
  t=${entry%%:*} max_len=${entry#*:}
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/artifacts"
  cp "$here/corpus/$t/"* "$scratch/$t/corpus/"
  [[ -f $here/dict/$t.dict ]] && dict=(-dict="$here/dict/$t.dict")
  (cd "$scratch/$t" && "$out/tests/fuzz/fuzz_$t" corpus "${dict[@]}" -max_len="$max_len" \
     -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
     -artifact_prefix="$scratch/$t/artifacts/" >log 2>&1) || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t/log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$scratch/$t/log")
  if ((rc == 0)); then
    echo "fuzz_$t: ${runs:-?} runs, ${speed:-?} exec/s, no crash" > "$scratch/$t/line"
    return 0
  fi
  mkdir -p "$out/crashes/$t"
  cp "$scratch/$t/artifacts/"* "$out/crashes/$t/" 2>/dev/null || true
  why=$(grep -m1 -E "fuzz check failed|runtime error|ERROR: |SUMMARY" "$scratch/$t/log" || echo "exit $rc")
  { echo "fuzz_$t: CRASH after ${runs:-?} runs: $why (input in $out/crashes/$t/)"
    grep -A30 -m1 -E "fuzz check failed|runtime error|ERROR: " "$scratch/$t/log" | head -40 | sed 's/^/  /'
  } > "$scratch/$t/line"
  return 1
}

# Targets run side by side, one per core (at most 2: the suite's machine has
# 2 cores, and each target is one process); lines come out in list order.
jobs_at_once=$(nproc)
((jobs_at_once > 2)) && jobs_at_once=2
status=0
for ((i = 0; i < ${#targets[@]}; i += jobs_at_once)); do
  pids=()
  for entry in "${targets[@]:i:jobs_at_once}"; do
    run_target "$entry" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for entry in "${targets[@]:i:jobs_at_once}"; do cat "$scratch/${entry%%:*}/line"; done
done
exit $status
