#!/usr/bin/env bash
# The deployment files are valid: docker-compose accepts the compose file and
# every role it starts is one the binary knows; the ps publishes its console
# port and is health-checked through the console's /api/state; devices wait
# for it to be healthy and are scalable (no fixed name or host port).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
docker-compose -f "$root/deploy/docker-compose.yml" config > "$WORK/compose.yml" || fail "docker-compose config failed"
for role in $(grep -o -- '--role=[a-z]*' "$WORK/compose.yml" | sort -u | cut -d= -f2); do
  out=$("$CLEAVE" --role="$role" --listen=x --connect=x --planner=x 2>&1)
  [[ $out == *"unknown role"* ]] && fail "compose starts unknown role $role"
done
echo "compose roles: $(grep -o -- '--role=[a-z]*' "$WORK/compose.yml" | sort -u | tr '\n' ' ')"
# The YAML reader comes with docker-compose (python3-yaml).
verdict=$(python3 - "$WORK/compose.yml" <<'PY'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
problems = []
ps = services["ps"]
admin = next((a.split("=", 1)[1] for a in ps["command"] if a.startswith("--admin=")), None)
port = admin.rsplit(":", 1)[1] if admin else None
if not port: problems.append("the ps has no --admin console")
def target(p):  # "host:published:target[/proto]" or the long form
    return str(p.get("target")) if isinstance(p, dict) else str(p).split("/")[0].rsplit(":", 1)[-1]
if not any(target(p) == port for p in ps.get("ports", [])):
    problems.append(f"the console port {port} is not published")
test = (ps.get("healthcheck") or {}).get("test", [])
if not ("--role=status" in test and f"--connect=127.0.0.1:{port}" in test):
    problems.append(f"the ps's health check does not ask its console: {test}")
devices = [n for n, s in services.items() if "--role=device" in s.get("command", [])]
if not devices: problems.append("no device service")
for n in devices:
    s = services[n]
    if "container_name" in s or s.get("ports"): problems.append(f"{n} cannot be scaled (fixed name or port)")
    if (s.get("depends_on") or {}).get("ps", {}).get("condition") != "service_healthy":
        problems.append(f"{n} does not wait for a healthy ps")
relays = [n for n, s in services.items() if "--role=relay" in s.get("command", [])]
for n in relays:
    if "--connect=ps:4300" not in services[n]["command"]: problems.append(f"relay {n} does not reach the ps's edge")
    if (services[n].get("depends_on") or {}).get("ps", {}).get("condition") != "service_healthy":
        problems.append(f"relay {n} does not wait for a healthy ps")
behind = [n for n in devices if any(a.startswith("--connect=") and a.split("=", 1)[1].split(":")[0] in relays
                                    for a in services[n]["command"])]
if relays and not behind: problems.append("no device sits behind the relay")
for n in behind:
    connect = next(a for a in services[n]["command"] if a.startswith("--connect="))
    if not connect.endswith(",ps:4300"): problems.append(f"{n} has no way back to the ps if its relay is lost: {connect}")
print("; ".join(problems) if problems else f"ok: console port {port} published and health-checked; "
      f"{len(devices)} scalable device services wait for it; {len(behind)} behind {len(relays)} relay(s)")
PY
)
[[ $verdict == ok:* ]] && echo "$verdict" || fail "$verdict"
finish
