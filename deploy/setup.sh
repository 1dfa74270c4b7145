#!/usr/bin/env bash
# Cleave set-up on Debian 12: install what is missing, build, then run.
#
#   bash deploy/setup.sh run [cleave flags...]   install, build, train the embedded default
#                                                (every role in one process, 16 emulated devices)
#   bash deploy/setup.sh test                    install, build, run the whole test suite
#   bash deploy/setup.sh build                   install and build only
#
# Installing needs root (or sudo). Without apt (another distribution, no
# root), install the equivalents of the packages below by hand and run with
# CLEAVE_SKIP_INSTALL=1; `bash deploy/setup.sh packages` lists them.
# CLEAVE_PORTABLE=1 builds a binary for any x86-64 instead of this CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# package|why Cleave needs it
PACKAGES=(
  "build-essential|the C++17 compiler and make"
  "cmake|the build"
  "pkg-config|finds libraries for the build"
  "python3|the test scripts read reports"
  "libcaf-dev|CAF 0.17: the actor system (core, io, openssl)"
  "libeigen3-dev|Eigen 3.4: the GEMM and tensor kernels"
  "libcapnp-dev|Cap'n Proto: checkpoints and wire formats"
  "capnproto|the Cap'n Proto schema compiler"
  "libspdlog-dev|spdlog: logging"
  "libfmt-dev|fmt, which spdlog uses"
  "libgtest-dev|GoogleTest: the unit tests"
  "nlohmann-json3-dev|JSON: reports, fleet and churn files, the console"
  "zlib1g-dev|zlib: reads the gzipped Fashion-MNIST files"
  "libssl-dev|OpenSSL: TLS on the device edge, certificates for join tokens"
  "dataset-fashion-mnist|the mlp's data (/usr/share/datasets/fashion-mnist)"
  "fortunes|the gpt's text (/usr/share/games/fortunes)"
  "dict-gcide|gcide-nextword's definitions (training/data/build_xc_datasets.py)"
  "wordnet-base|gcide-nextword's WordNet glosses"
  "wamerican-insane|spell-670k's 663k words (/usr/share/dict/american-english-insane)"
  "docker-compose|validates deploy/docker-compose.yml in the tests"
  "clang|builds the fuzz targets (tests/fuzz/) with ASan and UBSan"
  "libfuzzer-14-dev|libFuzzer for clang 14: the fuzz targets' engine"
  "prometheus|promtool checks the console's /metrics in the tests"
)

list_packages() {
  for entry in "${PACKAGES[@]}"; do printf '  %-22s %s\n' "${entry%%|*}" "${entry#*|}"; done
}

install_packages() {
  if [[ ${CLEAVE_SKIP_INSTALL:-0} == 1 ]]; then
    echo "setup: CLEAVE_SKIP_INSTALL=1, installing nothing"
    return
  fi
  if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    echo "setup: no apt-get here. Install the equivalents of these Debian 12 packages, then run" >&2
    echo "setup: again with CLEAVE_SKIP_INSTALL=1:" >&2
    list_packages >&2
    exit 1
  fi
  local missing=()
  for entry in "${PACKAGES[@]}"; do
    local p=${entry%%|*}
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    missing+=("$p")
    echo "setup: will install $p: ${entry#*|}"
  done
  if ((${#missing[@]} == 0)); then
    echo "setup: every package is installed"
    return
  fi
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  echo "setup: apt-get update"
  $sudo apt-get update -qq
  echo "setup: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  # A default build targets this machine's CPU (-march=native) and runs only
  # on the same CPU family; CLEAVE_PORTABLE=1 builds for any x86-64.
  local portable=OFF
  [[ ${CLEAVE_PORTABLE:-0} == 1 ]] && portable=ON
  echo "setup: configuring build/ (Release, CLEAVE_PORTABLE=$portable)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCLEAVE_PORTABLE=$portable >/dev/null
  echo "setup: building build/cmd/cleave, the tests and the benchmarks on $(nproc) core(s)"
  cmake --build build -j"$(nproc)"
}

cmd=${1:-run}
shift || true
case $cmd in
  packages) list_packages ;;
  build) install_packages; build ;;
  run)
    install_packages; build
    echo "setup: running the demo: gpt small on 64 emulated devices, with churn and a liar (report.json at the end)"
    exec ./build/cmd/cleave --role=all --report=report.json "$@" ;;
  test)
    install_packages; build
    echo "setup: running the test suite (ctest)"
    cd build && ctest --output-on-failure -j1 ;;
  *) echo "usage: $0 run|test|build|packages" >&2; exit 2 ;;
esac
