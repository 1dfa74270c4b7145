#!/usr/bin/env bash
# Cleave set-up on Debian 12: install what is missing, build, then run.
#
#   bash deploy/setup.sh run [cleave flags...]   install, build, train the embedded default
#                                                (every role in one process, 64 emulated devices);
#                                                builds only the binary
#   bash deploy/setup.sh test                    install, build, run the whole test suite
#   bash deploy/setup.sh build                   install and build everything (binary, tests, benchmarks)
#
# Installing needs root (or sudo). Without apt (another distribution, no
# root), install the equivalents of the packages below by hand and run with
# CLEAVE_SKIP_INSTALL=1; `bash deploy/setup.sh packages` lists them.
# CLEAVE_PORTABLE=1 builds a binary for any x86-64 instead of this CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# package|why Cleave needs it[|a command that, on PATH, does instead (a
# nodejs from elsewhere brings its own npm, which Debian's npm conflicts with)]
# to build and run:
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
)
# ... and only to run the test suite
TEST_PACKAGES=(
  "dict-gcide|gcide-nextword's definitions (training/data/build_xc_datasets.py)"
  "wordnet-base|gcide-nextword's WordNet glosses"
  "wamerican-insane|spell-670k's 663k words (/usr/share/dict/american-english-insane)"
  "docker-compose|validates deploy/docker-compose.yml in the tests"
  "iproute2|ip: the multi-host tests' network namespaces and veth links"
  "iptables|the multi-host tests' packet loss (the statistic match)"
  "clang|builds the fuzz targets (tests/fuzz/) with ASan and UBSan"
  "libfuzzer-14-dev|libFuzzer for clang 14: the fuzz targets' engine"
  "libclang-rt-14-dev|clang 14's sanitizer and libFuzzer runtimes, which the fuzz targets link"
  "prometheus|promtool checks the console's /metrics in the tests"
  "chromium|the console page's browser test (headless)"
  "nodejs|runs the browser test's driver and checks the page's script"
  "npm|fetches playwright-core, the browser test's driver, into build/node_modules|npm"
)
# The browser test's driver, from npm (not packaged by Debian), pinned.
PLAYWRIGHT_CORE=playwright-core@1.49.1

describe_entry() {
  local rest=${1#*|}
  printf '  %-22s %s\n' "${1%%|*}" "${rest%%|*}"
}

list_packages() {
  echo "to build and run:"
  for entry in "${PACKAGES[@]}"; do describe_entry "$entry"; done
  echo "to run the tests, as well:"
  for entry in "${TEST_PACKAGES[@]}"; do describe_entry "$entry"; done
  echo "and $PLAYWRIGHT_CORE from npm (into build/node_modules)"
}

# install_packages ENTRY...: the Debian packages of those entries not yet installed.
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
  for entry in "$@"; do
    local p=${entry%%|*} rest=${entry#*|} instead=
    [[ $rest == *"|"* ]] && instead=${rest##*|}
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    [[ -n $instead ]] && command -v "$instead" >/dev/null && continue
    missing+=("$p")
    echo "setup: will install $p: ${rest%%|*}"
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

# playwright-core into build/node_modules (a cache: fetched once per build
# tree); the browser test finds it there.
install_browser_driver() {
  if [[ -f build/node_modules/playwright-core/package.json ]] &&
     grep -q "\"version\": \"${PLAYWRIGHT_CORE#*@}\"" build/node_modules/playwright-core/package.json; then
    echo "setup: $PLAYWRIGHT_CORE is in build/node_modules"
    return
  fi
  command -v npm >/dev/null || { echo "setup: npm is missing: it fetches $PLAYWRIGHT_CORE" >&2; exit 1; }
  echo "setup: npm install $PLAYWRIGHT_CORE into build/node_modules"
  npm install --prefix build --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "$PLAYWRIGHT_CORE" >/dev/null
}

# build [TARGET]: the one target (the demo needs only the binary), or
# everything: the binary, the tests and the benchmarks.
build() {
  # A default build targets this machine's CPU (-march=native) and runs only
  # on the same CPU family; CLEAVE_PORTABLE=1 builds for any x86-64.
  local portable=OFF
  [[ ${CLEAVE_PORTABLE:-0} == 1 ]] && portable=ON
  echo "setup: configuring build/ (Release, CLEAVE_PORTABLE=$portable)"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCLEAVE_PORTABLE=$portable >/dev/null
  if [[ -n ${1:-} ]]; then
    echo "setup: building build/cmd/$1 on $(nproc) core(s)"
    cmake --build build -j"$(nproc)" --target "$1"
  else
    echo "setup: building build/cmd/cleave, the tests and the benchmarks on $(nproc) core(s)"
    cmake --build build -j"$(nproc)"
  fi
}

cmd=${1:-run}
shift || true
case $cmd in
  packages) list_packages ;;
  build) install_packages "${PACKAGES[@]}"; build ;;
  run)
    install_packages "${PACKAGES[@]}"; build cleave
    echo "setup: running the demo: gpt small on 64 emulated devices, with churn and a liar (report.json at the end)"
    exec ./build/cmd/cleave --role=all --report=report.json "$@" ;;
  test)
    install_packages "${PACKAGES[@]}" "${TEST_PACKAGES[@]}"; build; install_browser_driver
    echo "setup: running the test suite (ctest)"
    # Unit tests two at a time; end-to-end tests that train run alone
    # (RUN_SERIAL, tests/CMakeLists.txt).
    cd build && ctest --output-on-failure -j2 ;;
  *) echo "usage: $0 run|test|build|packages" >&2; exit 2 ;;
esac
