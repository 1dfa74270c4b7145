#!/usr/bin/env bash
# The console page in Debian's headless chromium, driven by playwright-core
# (bash deploy/setup.sh test installs both: chromium from Debian,
# playwright-core from npm into build/node_modules), during a live
# `--role=all` run on four devices with a churn schedule that kills device 3
# and an --admin-token: see console_browser.js for the checks. The
# screenshot goes to $CLEAVE_ARTIFACTS if set, else build/test-output/.
source "$(dirname "$0")/lib.sh"
build=$(cd "$(dirname "$CLEAVE")/.." && pwd)
out_dir=${CLEAVE_ARTIFACTS:-$build/test-output}
export NODE_PATH=$build/node_modules${NODE_PATH:+:$NODE_PATH}
if ! command -v chromium >/dev/null || ! command -v node >/dev/null; then
  fail "chromium or node is missing: bash deploy/setup.sh test installs them"; finish
fi
if ! node -e 'require.resolve("playwright-core")' 2>/dev/null; then
  fail "playwright-core is not in $build/node_modules: bash deploy/setup.sh test installs it"; finish
fi

printf 'page-token-%s\n' "$RANDOM$RANDOM" > "$WORK/token"
echo '{"events": [{"step": 150, "action": "die", "device": 3}]}' > "$WORK/churn.json"
"$CLEAVE" --role=all --devices=4 --profile=fast --ps-egress=1e12 --ps-flops=1e9 --model=mlp \
  --steps=100000 --threads=1 --churn="$WORK/churn.json" --admin=127.0.0.1:0 \
  --admin-token=@"$WORK/token" > "$WORK/run.log" 2>&1 &
run=$!
port=$(console_port "$WORK/run.log")
[[ -n $port ]] || { fail "no console port: $(tail -3 "$WORK/run.log")"; finish; }

mkdir -p "$out_dir"
shot=$out_dir/console_browser.png
if node "$(dirname "$0")/console_browser.js" "http://127.0.0.1:$port/" "$shot" 4 3 1 \
     "$(head -1 "$WORK/token")" > "$WORK/browser.txt" 2>&1; then
  cat "$WORK/browser.txt"
  echo "screenshot: $shot"
else fail "the page in headless chromium: $(cat "$WORK/browser.txt")"; fi
grep -q "console: control drain of device 1 accepted" "$WORK/run.log" \
  || fail "the drain is not in the ps's log"
kill -0 $run 2>/dev/null || fail "the run died: $(tail -3 "$WORK/run.log")"
kill -TERM $run 2>/dev/null
wait $run 2>/dev/null
finish
