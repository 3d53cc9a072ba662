#!/usr/bin/env bash
# Builds and runs bench/dnn_bench with interleaved repetitions, so that the
# machine's drift hits every side alike; each FIGURE/RATIO line is computed
# from the medians of the repetitions. Usage:
#   bench/dnn_bench.sh [repetitions (default 5)] [extra benchmark flags]
# e.g. bench/dnn_bench.sh 7 --benchmark_filter='conv1x1'
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REPS="${1:-5}"
shift || true
BUILD_DIR="${RILL_BUILD_DIR:-build}"
cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target dnn_bench
RILL_HOST_DEVICES=1 "$BUILD_DIR/bench/dnn_bench" --benchmark_repetitions="$REPS" \
  --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=false "$@"
