#!/usr/bin/env bash
# deploy/docker-compose.yml on a real Docker engine: the image is built from
# deploy/Dockerfile, the compose file is brought up (detector, planner, ps,
# the phone, edge, laptop and vm device containers, and a relay with a
# laptop device behind it), and
#   1. the device containers compute tiles (the phone's first may come later);
#   2. one device container is killed (`docker kill`, so it stays down) and
#      training goes on without it;
#   3. the vm devices are scaled up (`up --scale device-vm=2`) while it
#      trains, and the new container joins and computes tiles;
#   4. the ps reaches its last step, exits 0, and its report (copied out of
#      the cleave-data volume) shows tiles for every device container.
# The ps trains as the compose file says (the mlp, 5 epochs: 4685 steps) or
# STEPS steps; the planner is given the cost model of tests/cli/multiprocess.sh
# (--ps-egress=1e12 --ps-flops=1e9) so that it splits the mlp's GEMMs over the
# devices: a compose override made from `docker-compose config` changes those
# two commands and nothing else.
#
# The engine is private: a dockerd of its own (socket, exec root and pid file
# in a temporary folder), with --iptables=false --ip-masq=false --bridge=none,
# so the machine's firewall and its docker0 are not touched. The compose
# networks are bridges of that daemon: containers reach each other through
# them (and its embedded DNS), not the outside. Docker Hub is not needed:
# debian:12 is imported from a debootstrap root tarball (deploy/base-image.sh,
# /var/cache/cleave-debian12.tar, made once), and `docker build --network
# host` fetches the Debian packages. The daemon's data root (images, build
# cache) is kept in CLEAVE_DOCKER_CACHE (default /var/cache/cleave-compose-docker)
# so that a rerun reuses the package layers; the containers, networks and the
# volume are removed at the end, and the daemon is stopped.
#
# Slow (it builds the image), so under ctest it runs only on request:
# `CLEAVE_DOCKER_TESTS=1 ctest -L docker`; otherwise ctest counts it as
# skipped (exit 77), and CI's run of the suite stays within its budget. Run
# directly, it always runs: `bash tests/cli/compose_up.sh build/cmd/cleave`.
# Needs root; installs docker.io, docker-compose and debootstrap if missing.
# Environment: STEPS (train this many steps instead),
# CLEAVE_DOCKER_JOBS (compile jobs in the image build, default 2),
# CLEAVE_COMPOSE_ENGINE=unix:///path/docker.sock (an engine that runs already:
# no dockerd is started; only this test's project is removed at the end),
# CLEAVE_COMPOSE_IMAGE=name:tag (an image the engine has, instead of building).
source "$(dirname "$0")/lib.sh"
set -eo pipefail
# lib.sh's trap, made safe under set -e (until the cleanup below replaces it).
trap 'kill -9 $(jobs -p) 2> /dev/null || true; rm -rf "$WORK"' EXIT
if [[ ${CLEAVE_COMPOSE_UP_FROM_CTEST:-0} == 1 && ${CLEAVE_DOCKER_TESTS:-0} != 1 ]]; then
  echo "compose_up: skipped (minutes of image build); run it with CLEAVE_DOCKER_TESTS=1 ctest -L docker"
  exit 77
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
steps=${STEPS:-}
cache=${CLEAVE_DOCKER_CACHE:-/var/cache/cleave-compose-docker}
project=cleaveup
((EUID == 0)) || { echo "FAIL: dockerd needs root"; exit 1; }
t0=$SECONDS
phase() { echo "compose_up: [$((SECONDS - t0)) s] $*"; }

# --- the tools ---
missing=()
command -v dockerd > /dev/null || missing+=(docker.io)
command -v debootstrap > /dev/null || missing+=(debootstrap)
command -v docker-compose > /dev/null || missing+=(docker-compose)
if ((${#missing[@]})); then
  phase "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$WORK/apt.log" 2>&1 \
    || { echo "FAIL: apt-get install ${missing[*]} failed: $(tail -3 "$WORK/apt.log")"; exit 1; }
fi
# The client that comes with the daemon (docker.io): another docker on PATH
# may want a buildx plugin that is not there.
docker_cli=$(command -v docker)
[[ -x /usr/bin/docker ]] && docker_cli=/usr/bin/docker
docker() { "$docker_cli" "$@"; }
compose() { docker-compose -p "$project" -f "$root/deploy/docker-compose.yml" -f "$WORK/override.yml" "$@"; }

# --- the engine: a private dockerd, or CLEAVE_COMPOSE_ENGINE's ---
state=$WORK/docker
mkdir -p "$state"
dockerd_pid=""
cleanup() {
  local rc=$?
  set +e
  if [[ -f $WORK/override.yml ]] && docker info > /dev/null 2>&1; then
    if ((rc != 0 && rc != 77 || failures)); then
      echo "--- the containers' last lines:"
      compose logs --no-color --tail=12 2>&1 | grep -v '^Attaching'
    fi
    compose down -v --remove-orphans -t 3 > /dev/null 2>&1
  fi
  if [[ -n $dockerd_pid ]] && kill -0 "$dockerd_pid" 2> /dev/null; then
    docker ps -aq | xargs -r "$docker_cli" rm -f > /dev/null 2>&1
    kill -TERM "$dockerd_pid"
    for _ in $(seq 1 150); do kill -0 "$dockerd_pid" 2> /dev/null || break; sleep 0.2; done
    kill -KILL "$dockerd_pid" 2> /dev/null
  fi
  # dockerd stops the containerd it started; if it could not, stop that too.
  local cpid
  cpid=$(cat "$state/exec/containerd/containerd.pid" 2> /dev/null)
  [[ -n $cpid ]] && kill -0 "$cpid" 2> /dev/null && kill -KILL "$cpid"
  # Mounts the daemon left behind (network namespaces, overlays).
  [[ -n $dockerd_pid ]] && grep -oE " ($state|$cache)/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2> /dev/null
  kill -9 $(jobs -p) 2> /dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -n ${CLEAVE_COMPOSE_ENGINE:-} ]]; then
  export DOCKER_HOST=$CLEAVE_COMPOSE_ENGINE
  phase "the engine at $DOCKER_HOST"
  docker info > /dev/null 2>&1 || { echo "FAIL: no Docker engine answers at $DOCKER_HOST"; exit 1; }
else
  mkdir -p "$cache"
  export DOCKER_HOST=unix://$state/docker.sock
  exec 9> "$cache.lock"  # one daemon per data root
  flock -n 9 || { echo "FAIL: another compose_up.sh uses $cache"; exit 1; }
  phase "dockerd (data root $cache)"
  dockerd --data-root="$cache" --exec-root="$state/exec" --pidfile="$state/dockerd.pid" \
    --host="$DOCKER_HOST" --iptables=false --ip-masq=false --bridge=none \
    --default-address-pool base=10.231.0.0/16,size=24 > "$state/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 300); do
    docker info > /dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2> /dev/null || { echo "FAIL: dockerd exited: $(tail -3 "$state/dockerd.log")"; exit 1; }
    sleep 0.2
  done
  docker info > /dev/null 2>&1 || { echo "FAIL: dockerd did not answer in 60 s: $(tail -3 "$state/dockerd.log")"; exit 1; }
  docker ps -aq | xargs -r "$docker_cli" rm -f > /dev/null  # a killed earlier run's
fi
docker volume ls -q | grep "^${project}_" | xargs -r "$docker_cli" volume rm > /dev/null || true

# --- the image: built here, or CLEAVE_COMPOSE_IMAGE ---
image=${CLEAVE_COMPOSE_IMAGE:-cleave:latest}
build_seconds=0
if [[ -z ${CLEAVE_COMPOSE_IMAGE:-} ]]; then
  phase "debian:12 from the debootstrap tarball"
  bash "$root/deploy/base-image.sh" --import || { echo "FAIL: no debian:12 base image"; exit 1; }
  phase "docker build (deploy/Dockerfile, JOBS=${CLEAVE_DOCKER_JOBS:-2})"
  build_start=$SECONDS
  # In the background: a signal to this script is handled while it builds.
  docker build --network host ${CLEAVE_DOCKER_JOBS:+--build-arg JOBS="$CLEAVE_DOCKER_JOBS"} \
    -f "$root/deploy/Dockerfile" -t cleave:latest "$root" > "$WORK/build.log" 2>&1 &
  wait $! || { echo "FAIL: docker build failed:"; tail -30 "$WORK/build.log"; exit 1; }
  build_seconds=$((SECONDS - build_start))
  phase "built in $build_seconds s"
fi
docker image inspect "$image" > /dev/null 2>&1 || { echo "FAIL: the engine has no image $image"; exit 1; }
image_size=$(docker image ls "$image" --format '{{.Size}}')
phase "image $image: $image_size; the packages of the binary's libraries (the builder's ldd):"
docker run --rm --network none --entrypoint cat "$image" /usr/local/share/cleave/runtime-libraries \
  | awk '{print "  " $0}' || fail "the image has no /usr/local/share/cleave/runtime-libraries"

# --- compose up ---
console=$(free_port)
export CLEAVE_CONSOLE_PORT=$console
docker-compose -f "$root/deploy/docker-compose.yml" config > "$WORK/config.yml"
python3 - "$WORK/config.yml" "$steps" "$image" > "$WORK/override.yml" <<'PY'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
override = {name: {"image": sys.argv[3]} for name in services}
ps = services["ps"]["command"]
if sys.argv[2]: ps = [a for a in ps if not a.startswith(("--epochs=", "--steps="))] + [f"--steps={sys.argv[2]}"]
ps += ["--progress-seconds=5"]
planner = services["planner"]["command"] + ["--ps-egress=1e12", "--ps-flops=1e9"]
override["ps"]["command"], override["planner"]["command"] = ps, planner
yaml.safe_dump({"version": "3.8", "services": override}, sys.stdout, default_flow_style=None)
PY
phase "compose up: $(grep -o -- '--model=[a-z0-9-]*\|--epochs=[0-9]*\|--steps=[0-9]*' "$WORK/override.yml" | xargs); console on 127.0.0.1:$console"
up_start=$SECONDS
compose up -d --no-build > "$WORK/up.log" 2>&1 || { echo "FAIL: compose up failed: $(tail -5 "$WORK/up.log")"; exit 1; }

# container SERVICE [N]: the name of the service's Nth container (default 1).
container() {
  docker ps -a --filter "label=com.docker.compose.project=$project" \
    --filter "label=com.docker.compose.service=$1" \
    --filter "label=com.docker.compose.container-number=${2:-1}" --format '{{.Names}}'
}
ps_c=$(container ps)
devices=(device-phone device-edge device-laptop device-vm device-relayed)
# tiles_by_container SOURCE: a JSON {container: {"ids": [...], "tiles": n},
# "step": s} from SOURCE, a report or "api" for the console's live
# /api/state. A device logs the id it joined as; the ps logs the new id of a
# device that joins again.
tiles_by_container() {
  docker logs "$ps_c" > "$WORK/ps.log" 2>&1
  local c
  for c in $(docker ps -a --filter "label=com.docker.compose.project=$project" --format '{{.Names}}' | grep device); do
    docker logs "$c" 2>&1 | sed -n "s/.*joined the fleet as device \([0-9]*\).*/$c \1/p"
  done > "$WORK/ids"
  python3 - "$WORK/ps.log" "$WORK/ids" "$1" "$console" <<'PY'
import json, re, sys, urllib.request
log, ids, source, port = sys.argv[1:5]
owner = {int(w[1]): w[0] for w in (line.split() for line in open(ids)) if len(w) == 2}
for line in open(log):
    m = re.search(r"edge: device (\d+) \(.*\) joined again as (\d+)", line)
    if m and int(m.group(1)) in owner: owner[int(m.group(2))] = owner[int(m.group(1))]
if source == "api":
    try: doc = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5))["training"] or {}
    except Exception: doc = {}
else:
    doc = json.load(open(source))
out = {}
for d in doc.get("per_device", []):
    c = out.setdefault(owner.get(d["id"], f"unknown device {d['id']}"), {"ids": [], "tiles": 0})
    c["ids"].append(d["id"]); c["tiles"] += d["tiles"]
for dev, c in owner.items(): out.setdefault(c, {"ids": [dev], "tiles": 0})
out["step"] = doc.get("step", doc.get("steps", 0))
print(json.dumps(out))
PY
}
# wait_until SECONDS WHAT PYTHON-CONDITION: until the condition over `t`
# (tiles_by_container api) holds; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1)) t=""
  while ((SECONDS < deadline)); do
    t=$(tiles_by_container api)
    python3 -c "import json,sys; t=json.loads(sys.argv[1]); sys.exit(0 if ($3) else 1)" "$t" && return 0
    [[ $(docker inspect -f '{{.State.Running}}' "$ps_c") == true ]] || break
    sleep 2
  done
  fail "$2: not within $1 s: $t"
  echo "--- ps log:"; docker logs --tail 20 "$ps_c" 2>&1
  return 1
}
names=()
for s in "${devices[@]}"; do names+=("$(container "$s")"); done
phase "containers: $ps_c, $(container detector), $(container planner), ${names[*]}"
# The planner gives the slow profiles few tiles: the phone's first may come
# late in the run. The edge container (to be killed) and the fast ones must
# have computed tiles before the kill; every container, by the end.
victim=$(container device-edge)
wait_until 300 "the edge, laptop and vm containers compute tiles" \
  "all(t.get(c, {}).get('tiles', 0) > 0 for c in ['$victim', '$(container device-laptop)', '$(container device-vm)'])" \
  || exit 1
phase "tiles per device container: $(tiles_by_container api)"

# --- a device container dies ---
kill_step=$(tiles_by_container api | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
victim_ids=$(tiles_by_container api | python3 -c "import json,sys; print(' '.join(map(str, json.load(sys.stdin)['$victim']['ids'])))")
docker kill "$victim" > /dev/null
phase "docker kill $victim (device $victim_ids) at step $kill_step"
wait_until 300 "training goes on after $victim was killed" "t['step'] >= $kill_step + 20" || exit 1
[[ $(docker inspect -f '{{.State.Status}} {{.RestartCount}}' "$victim") == "exited 0" ]] \
  || fail "$victim did not stay down: $(docker inspect -f '{{.State.Status}} restarts {{.RestartCount}}' "$victim")"
dead=""
for _ in $(seq 1 60); do
  for id in $victim_ids; do
    docker logs "$(container planner)" 2>&1 | grep -q "planner: device $id is dead" && dead=$id
  done
  [[ -n $dead ]] && break
  sleep 1
done
[[ -n $dead ]] && phase "the planner declared device $dead of $victim dead" \
  || fail "the planner did not declare $victim's device ($victim_ids) dead"
phase "step $(tiles_by_container api | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])') with $victim down"

# --- more devices ---
compose up -d --no-build --no-deps --scale device-vm=2 device-vm > "$WORK/scale.log" 2>&1 \
  || fail "compose up --scale device-vm=2 failed: $(tail -3 "$WORK/scale.log")"
newcomer=$(container device-vm 2)
[[ -n $newcomer ]] || { fail "no second device-vm container after --scale device-vm=2"; exit 1; }
scale_step=$(tiles_by_container api | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
phase "compose up --scale device-vm=2 at step $scale_step: $newcomer"
wait_until 300 "the scaled-up $newcomer computes tiles" "t.get('$newcomer', {}).get('tiles', 0) > 0" || exit 1
phase "$newcomer computes tiles from step $(tiles_by_container api | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')"

# --- the end of the run ---
timeout 900 "$docker_cli" wait "$ps_c" > "$WORK/ps.exit" &
wait $! || { fail "the ps did not finish in 15 minutes"; exit 1; }
train_seconds=$((SECONDS - up_start))
[[ $(cat "$WORK/ps.exit") == 0 ]] || fail "the ps exited with $(cat "$WORK/ps.exit"): $(docker logs --tail 5 "$ps_c" 2>&1)"
docker cp "$ps_c:/data/report.json" "$WORK/report.json" || { fail "no report.json in the ps's volume"; exit 1; }
phase "the ps finished: $(docker logs --tail 1 "$ps_c" 2>&1)"
# The run's length, from the ps's progress lines ("step 200/4685 ...").
docker logs "$ps_c" > "$WORK/ps.log" 2>&1
steps=$(grep -o ' step [0-9]*/[0-9]*' "$WORK/ps.log" | tail -1 | cut -d/ -f2)
verdict=$(python3 - "$(tiles_by_container "$WORK/report.json")" "$WORK/report.json" "${steps:-0}" "$victim" "$newcomer" \
  "${names[@]}" <<'PY'
import json, sys
t, report = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
steps, victim, newcomer, originals = int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
problems = []
if report["steps"] != steps or len(report["losses"]) != steps:
    problems.append(f"the report has {report['steps']} steps ({len(report['losses'])} losses), expected {steps}")
for c in originals + [newcomer]:
    if t.get(c, {}).get("tiles", 0) <= 0: problems.append(f"{c} computed no tile")
unknown = [k for k in t if k.startswith("unknown")]
if unknown: problems.append(f"tiles from devices of no container: {unknown}")
for c in originals + [newcomer]:
    print(f"  {c}: devices {t.get(c, {}).get('ids')}, {t.get(c, {}).get('tiles', 0)} tiles")
print(f"  {report['steps']} steps, {report['tiles']} tiles, final loss {report['losses'][-1]:.4f}, "
      f"failures detected {report.get('failures_detected')}, tiles reassigned {report.get('tiles_reassigned')}")
print("; ".join(problems) if problems else "ok")
PY
)
echo "$verdict" | sed '$d'
[[ $(echo "$verdict" | tail -1) == ok ]] && echo "ok: the compose deployment trains to step $steps with tiles on every device container, through a killed device and a scale-up" \
  || fail "$(echo "$verdict" | tail -1)"
relay_line=$(docker logs "$(container relay)" 2>&1 | grep -o "relay relay: .*" | tail -1)
[[ $relay_line == *"(1 joined"* ]] && phase "the relay: $relay_line" || fail "the relay's device did not join through it: $relay_line"
sleep 2
for c in "${names[@]}" "$newcomer"; do
  [[ $c == "$victim" ]] && continue
  status=$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$c")
  [[ $status == "exited 0" ]] || fail "$c did not end with the run: $status"
done
phase "figures: image $image_size, build $build_seconds s, compose up to the end $train_seconds s, total $((SECONDS - t0)) s"
finish
