#!/usr/bin/env bash
# The deployment files are valid: docker-compose accepts the compose file and
# every role it starts is one the binary knows.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
docker-compose -f "$root/deploy/docker-compose.yml" config > "$WORK/compose.yml" || fail "docker-compose config failed"
for role in $(grep -o -- '--role=[a-z]*' "$WORK/compose.yml" | sort -u | cut -d= -f2); do
  out=$("$CLEAVE" --role="$role" --listen=x --connect=x --planner=x 2>&1)
  [[ $out == *"unknown role"* ]] && fail "compose starts unknown role $role"
done
echo "compose roles: $(grep -o -- '--role=[a-z]*' "$WORK/compose.yml" | sort -u | tr '\n' ' ')"
finish
