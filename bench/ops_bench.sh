#!/usr/bin/env bash
# Installs the benchmark-only peer (libtorch-dev, PyTorch 1.13's C++ API),
# reconfigures build/ so that ops_bench links it, builds and runs ops_bench.
# Prints the FIGURE and RATIO lines at the end (see bench/ops_bench.cc).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
if ! dpkg-query -W -f='${db:Status-Abbrev}' libtorch-dev 2>/dev/null | grep -q '^ii'; then
  SUDO=(); [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libtorch-dev
fi
BUILD_DIR="${RILL_BUILD_DIR:-build}"
gen=(); [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target ops_bench
RILL_HOST_DEVICES=2 "$BUILD_DIR/bench/ops_bench" "$@"
