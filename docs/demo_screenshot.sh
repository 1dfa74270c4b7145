#!/usr/bin/env bash
# Takes docs/demo.png: the console page in headless Chromium while the demo
# (`cleave --role=all`, its default scenario) is past its deaths, hang, crash
# and joins. Needs chromium and playwright-core (bash deploy/setup.sh test
# installs them into build/node_modules).
# Usage: bash docs/demo_screenshot.sh [path/to/cleave] [out.png]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CLEAVE=${1:-$root/build/cmd/cleave}
out=${2:-$root/docs/demo.png}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
"$CLEAVE" --role=all --admin=127.0.0.1:0 --log-level=info > "$work/demo.log" 2>&1 &
for _ in $(seq 1 300); do
  port=$(grep -o "admin console: http://127.0.0.1:[0-9]*" "$work/demo.log" | grep -o "[0-9]*$" || true)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n ${port:-} ]] || { echo "the demo printed no console address" >&2; exit 1; }
NODE_PATH=$root/build/node_modules node - "http://127.0.0.1:$port/" "$out" <<'JS'
const { chromium } = require("playwright-core");
(async () => {
  const [url, out] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                          args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(url);
  // The joins come at 45% of the demo's 300 steps.
  await page.waitForFunction(() => Number(document.getElementById("h-step").textContent) >= 150,
                             null, { timeout: 600000, polling: 1000 });
  await page.screenshot({ path: out, fullPage: true });
  await browser.close();
  console.log("wrote " + out);
})().catch(e => { console.error(e.message); process.exit(1); });
JS
