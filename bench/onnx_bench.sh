#!/usr/bin/env bash
# Inference on the host CPU: Rill (rill-run on host:0) against ONNX Runtime
# (the npm package onnxruntime-node) and PyTorch eager, on the same ONNX
# models: ResNet-50, MobileNetV2 (224x224) and a BERT-base-shaped 4-layer
# encoder (sequence 128), each at batch 1 and 8 (docs/onnx-bench.md).
# Installs the peers if missing (Debian's python3-torch and
# python3-torchvision; onnxruntime-node into $BUILD_DIR/onnx_bench/node with
# npm), builds rill-run, exports the models once into
# $BUILD_DIR/onnx_bench/models (delete a model's folder to export it again),
# checks Rill's outputs against PyTorch's once per model, then times the
# three sides alternately (Rill ORT torch Rill ORT torch ...), each
# measurement in a process of its own, REPEATS rounds. Prints the per-round
# medians, then per model and batch a FIGURE line per side (median over the
# rounds, ms) and RATIO lines peer/Rill (median of the per-round ratios and
# their range; above 1: Rill is faster).
#
#   bench/onnx_bench.sh [--threads=2] [--repeats=3] [--runs=20] [--warmup=3]
#                       [--models=resnet50,mobilenet_v2,bert_encoder] [--batches=1,8]
#
# RILL_RUN_FLAGS: extra rill-run flags for the check and the timing
# (default --optimize=all; set it empty for none). RILL_RUN: a rill-run
# binary to use as is (then nothing is built). ORT_VERSION: the
# onnxruntime-node version npm installs (default 1.30.0).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
THREADS=2 REPEATS=3 RUNS=20 WARMUP=3
MODELS="resnet50,mobilenet_v2,bert_encoder" BATCHES="1,8"
for arg in "$@"; do
  case "$arg" in
    --threads=*) THREADS="${arg#*=}" ;;
    --repeats=*) REPEATS="${arg#*=}" ;;
    --runs=*) RUNS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --models=*) MODELS="${arg#*=}" ;;
    --batches=*) BATCHES="${arg#*=}" ;;
    *) echo "onnx_bench.sh: unknown argument $arg (--threads= --repeats= --runs= --warmup= --models= --batches=)" >&2
       exit 2 ;;
  esac
done
for v in "$THREADS" "$REPEATS" "$RUNS"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "onnx_bench.sh: --threads, --repeats and --runs take a positive integer, got '$v'" >&2; exit 2; }
done
[[ "$WARMUP" =~ ^[0-9]+$ ]] || { echo "onnx_bench.sh: --warmup takes an integer, got '$WARMUP'" >&2; exit 2; }
IFS=, read -r -a models <<<"$MODELS"
IFS=, read -r -a batches <<<"$BATCHES"
for m in "${models[@]}"; do
  case "$m" in resnet50|mobilenet_v2|bert_encoder) ;;
    *) echo "onnx_bench.sh: unknown model '$m' (resnet50, mobilenet_v2, bert_encoder)" >&2; exit 2 ;;
  esac
done
for b in "${batches[@]}"; do
  [[ "$b" =~ ^[1-9][0-9]*$ ]] || { echo "onnx_bench.sh: a batch must be a positive integer, got '$b'" >&2; exit 2; }
done
RILL_RUN_FLAGS="${RILL_RUN_FLAGS---optimize=all}"
read -r -a rill_flags <<<"$RILL_RUN_FLAGS"
PY=/usr/bin/python3  # Debian's, with torch; the python3 on PATH may lack it.
BUILD_DIR="${RILL_BUILD_DIR:-build}"

# --- peers and the build ---------------------------------------------------
install_debs() {
  local SUDO=(); [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}
if [[ -z "${RILL_RUN:-}" ]]; then
  bash scripts/setup.sh
  gen=(); [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target rill-run >/dev/null
  RILL_RUN="$BUILD_DIR/tools/rill-run"
fi
$PY -c 'import torch, torchvision, onnx' 2>/dev/null || install_debs python3-torch python3-torchvision python3-onnx
command -v npm >/dev/null || install_debs nodejs npm
NODE_DIR="$BUILD_DIR/onnx_bench/node"
if [[ ! -f "$NODE_DIR/node_modules/onnxruntime-node/package.json" ]]; then
  mkdir -p "$NODE_DIR"
  # The CPU binaries ship in the package; its install script only fetches
  # the CUDA execution provider.
  npm install --prefix "$NODE_DIR" --ignore-scripts --save-exact --no-audit --no-fund --loglevel=error \
    "onnxruntime-node@${ORT_VERSION:-1.30.0}" >/dev/null
fi
NODE_PATH="$(cd "$NODE_DIR/node_modules" && pwd)"
export NODE_PATH

# Every side gets the same thread count: OpenMP (oneDNN, libtorch's
# intra-op pool) and OpenBLAS read these; ORT and PyTorch are also told.
export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS"
ort_version="$(node -p "require('$NODE_PATH/onnxruntime-node/package.json').version")"
torch_version="$($PY -c 'import torch; print(torch.__version__)')"
echo "threads: $THREADS (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, ORT intraOpNumThreads, torch.set_num_threads)"
echo "rill: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $RILL_RUN --device=host:0 ${RILL_RUN_FLAGS}"
echo "ort: onnxruntime-node $ort_version (cpu, graphOptimizationLevel all, 1 inter-op thread); torch: $torch_version eager, no_grad"
echo "each measurement: $WARMUP warmup, median of $RUNS runs, one process; $REPEATS rounds"

# --- export and check ------------------------------------------------------
MODEL_DIR="$BUILD_DIR/onnx_bench/models"
for m in "${models[@]}"; do
  for b in "${batches[@]}"; do
    dir="$MODEL_DIR/${m}_b$b"
    [[ -f "$dir/model.onnx" && -f "$dir/weights.pt" ]] && continue
    # Into a scratch folder first: an interrupted export leaves no cache.
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$MODEL_DIR"
    $PY bench/onnx_bench_torch.py export --model="$m" --batch="$b" --out="$dir.tmp"
    mv "$dir.tmp" "$dir"
  done
done
for m in "${models[@]}"; do
  for b in "${batches[@]}"; do
    dir="$MODEL_DIR/${m}_b$b"
    if log="$("$RILL_RUN" "$dir/model.onnx" --test-data="$dir" --device=host:0 --runs=1 --warmup=0 \
                 --rtol=1e-3 --atol=1e-3 "${rill_flags[@]}" 2>&1)"; then
      echo "check ${m}_b$b: PASS ($(grep -o 'max abs err [^:]*' <<<"$log" | head -1))"
    else
      echo "check ${m}_b$b: FAIL: $(grep -E 'FAIL|ERROR|rill-run:|max abs err' <<<"$log" | head -3 | tr '\n' ' ')"
    fi
  done
done

# --- timing ----------------------------------------------------------------
# Each prints one number, the median latency in ms, or fails.
time_rill() {
  "$RILL_RUN" "$1/model.onnx" --device=host:0 --runs="$RUNS" --warmup="$WARMUP" --json=- \
    "${rill_flags[@]}" 2>"$LOG" |
    $PY -c 'import json, sys; print(json.load(sys.stdin)["latency_ms"]["p50"])' 2>/dev/null
}
time_ort() {
  node bench/onnx_bench_ort.js "$1/model.onnx" --threads="$THREADS" --runs="$RUNS" \
    --warmup="$WARMUP" 2>"$LOG" | sed -n 's/^ORT median_ms=\([0-9.]*\).*/\1/p' | grep .
}
time_torch() {
  $PY bench/onnx_bench_torch.py time --model="$2" --batch="$3" --weights="$1/weights.pt" \
    --threads="$THREADS" --runs="$RUNS" --warmup="$WARMUP" 2>"$LOG" |
    sed -n 's/^TORCH median_ms=\([0-9.]*\).*/\1/p' | grep .
}
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
sides=(rill ort torch)
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f..%.3f", lo, hi }'; }
summary=""
for m in "${models[@]}"; do
  for b in "${batches[@]}"; do
    dir="$MODEL_DIR/${m}_b$b" name="onnx_${m}_b$b"
    declare -A ms=()
    for s in "${sides[@]}"; do ms[$s]=""; done
    ort_ratios=() torch_ratios=()
    for ((r = 1; r <= REPEATS; r++)); do
      declare -A got=()
      for s in "${sides[@]}"; do
        if v="$("time_$s" "$dir" "$m" "$b")"; then
          got[$s]="$v" ms[$s]+=" $v"
        else
          got[$s]=""
          echo "$name round $r: $s failed: $(tail -3 "$LOG" | tr '\n' ' ')" >&2
        fi
      done
      line="$name round $r:"
      for s in "${sides[@]}"; do line+="  $s $(printf '%.3f' "${got[$s]:-nan}") ms"; done
      if [[ -n "${got[rill]}" ]]; then
        for peer in ort torch; do
          [[ -n "${got[$peer]}" ]] || continue
          ratio="$(awk -v a="${got[$peer]}" -v b="${got[rill]}" 'BEGIN { printf "%.3f", a / b }')"
          line+="  $peer/rill $ratio"
          if [[ "$peer" == ort ]]; then ort_ratios+=("$ratio"); else torch_ratios+=("$ratio"); fi
        done
      fi
      echo "$line"
    done
    for s in "${sides[@]}"; do
      read -r -a v <<<"${ms[$s]}"
      [[ ${#v[@]} -gt 0 ]] && summary+="FIGURE ${name}_${s}_ms $(printf '%.4g' "$(median "${v[@]}")")"$'\n'
    done
    [[ ${#ort_ratios[@]} -gt 0 ]] &&
      summary+="RATIO ${name}_ort_over_rill $(printf '%.3f' "$(median "${ort_ratios[@]}")") (range $(range "${ort_ratios[@]}"))"$'\n'
    [[ ${#torch_ratios[@]} -gt 0 ]] &&
      summary+="RATIO ${name}_torch_over_rill $(printf '%.3f' "$(median "${torch_ratios[@]}")") (range $(range "${torch_ratios[@]}"))"$'\n'
    printf '%s' "$summary" | grep "^[A-Z]* ${name}_" || true
  done
done
echo "--- all figures (threads $THREADS, $REPEATS rounds of $RUNS runs; ratios above 1: Rill faster) ---"
printf '%s' "$summary"
