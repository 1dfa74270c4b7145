#!/usr/bin/env bash
# The multi-process example of docs/FLEET.md, run as the page writes it: the
# command of its block marked `tested by tests/cli/readme_example.sh`, from
# the repository's root, with this build's binary and a scratch report as
# the example's two optional arguments. Tiles reach the devices, every device
# process exits 0 within 10 s of the ps, and no cleave process is left behind.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
page=$root/docs/FLEET.md
mapfile -t commands < <(doc_commands "$page" readme_example)
((${#commands[@]} == 1)) || { fail "$page: expected one command in its tested block, found ${#commands[@]}"; finish; }
echo "running, from $page: ${commands[0]}"
out=$(cd "$root" && CLEAVE_PORT=0 timeout 300 bash -c "${commands[0]} \"\$@\"" example "$CLEAVE" "$WORK/report.json" 2>&1)
rc=$?
echo "$out"
((rc == 0)) || fail "the example exited $rc"
tiles=$(json "$WORK/report.json" 'd["tiles"]' 2>/dev/null || echo 0)
((tiles > 0)) && echo "ok: $tiles tiles on the devices" || fail "no tile went to a device"
codes=$(grep -o "device exit codes: [0-9 ]*" <<<"$out" | cut -d: -f2 | xargs)
[[ $codes == "0 0 0" ]] && echo "ok: every device exited 0" || fail "device exit codes: '$codes'"
lag=$(grep -o "exited [0-9.]* s after the ps" <<<"$out" | grep -o "[0-9.]*")
[[ -n $lag ]] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 10 else 1)" "$lag" \
  && echo "ok: the devices were gone ${lag} s after the ps" || fail "devices exited ${lag:-?} s after the ps"
# This example's devices only: other tests may run devices of their own meanwhile.
edge=$(grep -o "joined the device edge at 127.0.0.1:[0-9]*" <<<"$out" | grep -o "[0-9]*$" || true)
[[ -n $edge ]] || fail "the example did not say which edge its devices joined"
left=$(pgrep -f -- "--connect=127.0.0.1:${edge:-0} --profile=fast" || true)
[[ -z $left ]] && echo "ok: no device process left" || fail "device processes left: $left"
finish
