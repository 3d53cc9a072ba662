#!/usr/bin/env bash
# Installs the Debian packages Rill needs. Idempotent: when everything is
# already installed it prints nothing and touches nothing. Runs apt-get
# directly as root, through sudo otherwise.
set -euo pipefail

PACKAGES=(
  # Build tools; clang and its runtimes build the libFuzzer target (test.sh --asan);
  # clang-format checks the layout of every C++ file (test.sh).
  cmake ninja-build g++ pkg-config git clang libclang-rt-dev clang-format-14
  # Core libraries and test/benchmark frameworks.
  libabsl-dev googletest libgtest-dev libgmock-dev libbenchmark-dev libtbb-dev
  # Host BLAS, DNN and FFT plugins (later issues).
  libopenblas-dev libblis-dev libfftw3-dev libdnnl-dev libxnnpack-dev libpthreadpool-dev
  # OpenCL backend and its plugins (later issues): PoCL runs OpenCL on the CPU.
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo libclblast-dev libclfft-dev
  # Graphs: ONNX import (C++), and the ONNX backend node tests made at test time.
  libonnx-dev libprotobuf-dev python3-onnx
  # The main job: the Fashion-MNIST dataset, gzip (zlib) for its IDX files,
  # cairo for the training curve.
  dataset-fashion-mnist zlib1g-dev libcairo2-dev
  # Scaling out: collectives on MPI (mpirun -np N rill-demo train).
  libopenmpi-dev openmpi-bin
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$pkg")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup.sh: missing packages (${missing[*]}), and not root and no sudo to install them" >&2
  exit 1
fi

echo "setup.sh: installing ${missing[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; }
if ! apt update -q || ! apt install -y -q --no-install-recommends "${missing[@]}"; then
  cat "$log" >&2
  echo "setup.sh: apt-get failed" >&2
  exit 1
fi
echo "setup.sh: done"
