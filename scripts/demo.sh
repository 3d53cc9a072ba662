#!/usr/bin/env bash
# Installs what is missing, builds rill-info and rill-demo into build/, then
# runs rill-info (the platforms and devices found here), rill-demo (a small
# pipeline on every available device) and the main job: `rill-demo train`,
# the Fashion-MNIST convnet trained for about a minute on the best device
# (RILL_DEMO_TRAIN_LIMIT training images, 24000 unless set), with the table,
# train_curve.png, train_curve.csv and an ONNX checkpoint written to
# RILL_DEMO_OUT (default out/). Works from any directory; arguments go to the
# pipeline demo (e.g. --quiet, --n=<floats>) and are checked before anything
# is built (--help prints the usage at once); `rill-demo train --help` lists
# the training flags (--device, --devices, --epochs, ...).
#
# Environment: RILL_JOBS (build parallelism, default 2), RILL_BUILD_DIR
# (default build/), RILL_HOST_DEVICES (virtual host devices; 2 unless set, so
# the pipeline and the engine step span two devices). The pipeline demo's
# trace of everything it ran (docs/verbose.md) goes to out/rill-demo-trace.json,
# or to --trace=<file.json>; RILL_VERBOSE=1 prints one line per stream operation.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/demo.sh [--quiet] [--n=<floats>] [--trace=<file.json>]

Installs missing packages, builds rill-info and rill-demo into build/, then
runs rill-info, rill-demo (the pipeline on every available device; the flags
above go to it) and `rill-demo train` (Fashion-MNIST, about a minute).
`build/tools/rill-demo train --help` lists the training flags.

Environment: RILL_JOBS (build parallelism, default 2), RILL_BUILD_DIR
(default build/), RILL_HOST_DEVICES (default 2), RILL_DEMO_TRAIN_LIMIT
(training images, default 24000), RILL_DEMO_OUT (default out/; the demo's
trace goes there as rill-demo-trace.json unless --trace is given),
RILL_VERBOSE=1 (one line per stream operation, docs/verbose.md).
USAGE
}

# The arguments are checked before anything is installed or built.
for arg in "$@"; do
  case "$arg" in
    -h|--help|-help) usage; exit 0 ;;
    --quiet|--noquiet|--trace=?*) ;;
    --n=*)
      if ! [[ "${arg#--n=}" =~ ^[1-9][0-9]*$ ]]; then
        echo "demo.sh: --n needs a positive whole number of floats, not '${arg#--n=}'" >&2
        exit 2
      fi ;;
    *)
      echo "demo.sh: unknown argument '$arg'" >&2
      usage >&2
      exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${RILL_JOBS:-2}"
export RILL_HOST_DEVICES="${RILL_HOST_DEVICES:-2}"
BUILD_DIR="${RILL_BUILD_DIR:-build}"

bash scripts/setup.sh
gen=()
[[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target rill-info rill-demo

echo
echo "==== rill-info"
"$BUILD_DIR/tools/rill-info"
OUT="${RILL_DEMO_OUT:-$ROOT/out}"
mkdir -p "$OUT"
# The demo's trace (what ran where, for how long, waiting on what) goes to
# out/, unless a --trace of the caller's own was given.
TRACE=(--trace="$OUT/rill-demo-trace.json")
for arg in "$@"; do [[ "$arg" == --trace=* ]] && TRACE=(); done
echo
echo "==== rill-demo $* ${TRACE[*]}"
"$BUILD_DIR/tools/rill-demo" "$@" "${TRACE[@]}"
echo
echo "==== rill-demo train --train_limit=${RILL_DEMO_TRAIN_LIMIT:-24000} --out_dir=$OUT"
"$BUILD_DIR/tools/rill-demo" train --train_limit="${RILL_DEMO_TRAIN_LIMIT:-24000}" --out_dir="$OUT"
