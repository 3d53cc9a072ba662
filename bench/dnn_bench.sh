#!/usr/bin/env bash
# Builds bench/dnn_bench and compares Rill with the libraries called
# directly, each side in a process of its own: two OpenMP masters in one
# process (the benchmark's main thread and a Rill stream's worker) slowed
# whichever ran second by up to 2x (the first's idle team kept spinning;
# docs/dnn-libraries.md), which measured that artifact, not Rill. The sides
# alternate, A B A B, `runs` times; every FIGURE/RATIO line is computed
# from the medians.
#   bench/dnn_bench.sh [runs (default 3)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${1:-3}"
BUILD_DIR="${RILL_BUILD_DIR:-build}"
cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target dnn_bench >/dev/null
BIN="$BUILD_DIR/bench/dnn_bench"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
# The groups that run together: one library side each.
SIDES=('^direct(_sync)?/' '^rill(_ws|_sync)?/' '^xnn_direct(_sync)?/' '^xnn_rill(_sync)?/' '^onednn_nhwc/' '^chain/')
"$BIN" --benchmark_list_tests=true | grep -c "^xnn_" >/dev/null || SIDES=("${SIDES[@]:0:2}")
for ((run = 1; run <= RUNS; ++run)); do
  for group in "${SIDES[@]}"; do
    RILL_HOST_DEVICES=1 "$BIN" --benchmark_filter="$group" --benchmark_min_time=0.3 >>"$OUT/raw.txt" 2>&1
  done
  echo "run $run of $RUNS done" >&2
done
python3 - "$OUT/raw.txt" <<'PY'
import collections, math, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[0] == "FIGURE" and f[1].startswith("dnn.ns."):
        times[f[1][len("dnn.ns."):]].append(float(f[2]))
med = {k: statistics.median(v) for k, v in times.items()}
rng = {k: (min(v), max(v)) for k, v in times.items()}
depth, flops = 8, {"conv3x3": 2 * 64 * 56 * 56 * 64 * 9, "conv1x1": 2 * 64 * 56 * 56 * 256}
def ratio(name, num, den):
    if num in med and den in med:
        lo = rng[num][0] / rng[den][1]; hi = rng[num][1] / rng[den][0]
        print(f"RATIO {name} {med[num] / med[den]:.3f}  (range {lo:.2f}-{hi:.2f}, {len(times[num])} runs)")
for layer in ("conv3x3", "conv1x1"):
    logs = []
    for n in (1, 4):
        s = f"/{layer}/n{n}"
        name = f"dnn.{layer}.n{n}"
        for side in ("direct", "rill", "xnn_direct", "xnn_rill", "onednn_nhwc", "chain"):
            if side + s in med:
                print(f"FIGURE {name}.{side}.gflops {depth * flops[layer] * n / med[side + s]:.1f}")
        ratio(f"{name}.onednn", "direct" + s, "rill" + s)
        ratio(f"{name}.onednn.no_workspace", "direct" + s, "rill_ws" + s)
        ratio(f"{name}.onednn.sync", "direct_sync" + s, "rill_sync" + s)
        ratio(f"{name}.xnnpack", "xnn_direct" + s, "xnn_rill" + s)
        ratio(f"{name}.xnnpack.sync", "xnn_direct_sync" + s, "xnn_rill_sync" + s)
        if all(k + s in med for k in ("xnn_rill", "onednn_nhwc", "chain")):
            faster = min(med["xnn_rill" + s], med["onednn_nhwc" + s])
            print(f"RATIO {name}.chain_vs_faster {faster / med['chain' + s]:.3f}  "
                  f"(xnnpack/onednn time {med['xnn_rill' + s] / med['onednn_nhwc' + s]:.2f})")
PY
