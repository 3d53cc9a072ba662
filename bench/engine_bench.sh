#!/usr/bin/env bash
# Runs bench/engine_bench in N separate processes (default 3) and prints,
# for every FIGURE and RATIO line, the median and the range over the runs:
#   bench/engine_bench.sh            # 3 processes, full size
#   bench/engine_bench.sh 5          # 5 processes
#   RILL_BENCH_SCALE=0.2 bench/engine_bench.sh
# Each process's own output is kept in $OUT_DIR (default out/engine_bench).
# The VM this project runs on moves by up to 2x between runs: read the
# ranges, and compare ratios (Rill and its peers run in the same process),
# not absolute rates across runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
runs="${1:-3}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "engine_bench.sh: the number of runs must be a positive integer, got '$runs'" >&2
  exit 2
fi
BUILD_DIR="${RILL_BUILD_DIR:-build}"
OUT_DIR="${OUT_DIR:-out/engine_bench}"
if [[ ! -x "$BUILD_DIR/bench/engine_bench" ]]; then
  bash scripts/setup.sh
  gen=(); [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target engine_bench
fi
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/run*.txt  # Only this call's runs are summarized.
for i in $(seq 1 "$runs"); do
  echo "engine_bench.sh: run $i of $runs" >&2
  "$BUILD_DIR/bench/engine_bench" > "$OUT_DIR/run$i.txt" 2>&1
done
# Median and range of each figure over the runs, in first-seen order.
cat "$OUT_DIR"/run*.txt | awk '
  /^(FIGURE|RATIO) / {
    key = $1 " " $2
    if (!(key in n)) order[++keys] = key
    v[key, ++n[key]] = $3
  }
  END {
    printf "%-52s %10s %22s %5s\n", "median over runs", "median", "range", "runs"
    for (k = 1; k <= keys; ++k) {
      key = order[k]; m = n[key]
      for (i = 1; i <= m; ++i) s[i] = v[key, i] + 0
      for (i = 2; i <= m; ++i) { x = s[i]; j = i - 1; while (j >= 1 && s[j] > x) { s[j + 1] = s[j]; --j } s[j + 1] = x }
      med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
      printf "%-52s %10.3f %10.3f..%-10.3f %5d\n", key, med, s[1], s[m], m
    }
  }'
