#!/usr/bin/env bash
# Cleave set-up on Debian 12: install what is missing, build, then run.
#
#   bash deploy/setup.sh run [cleave flags...]   install, build, train the embedded default
#                                                (every role in one process, 16 emulated devices)
#   bash deploy/setup.sh test                    install, build, run the whole test suite
#   bash deploy/setup.sh build                   install and build only
#
# Must run as root (or with sudo available) to install packages.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config python3
  libcaf-dev libeigen3-dev libcapnp-dev capnproto libspdlog-dev libfmt-dev
  libgtest-dev nlohmann-json3-dev zlib1g-dev libssl-dev
  dataset-fashion-mnist fortunes
  docker-compose   # validates deploy/docker-compose.yml in the tests
)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
}

cmd=${1:-run}
shift || true
case $cmd in
  build) install_packages; build ;;
  run)
    install_packages; build
    exec ./build/cmd/cleave --role=all --devices=16 --model=mlp --dataset=fashion-mnist \
      --epochs=5 --report=report.json "$@" ;;
  test)
    install_packages; build
    cd build && ctest --output-on-failure -j1 ;;
  *) echo "usage: $0 run|test|build" >&2; exit 2 ;;
esac
