#!/usr/bin/env bash
# Rill against PyTorch on the main job: one training epoch of the
# Fashion-MNIST convnet (same architecture, batch, Adam, data, thread count)
# and inference over the test set, on the host CPU. Installs the peer
# (Debian's python3-torch, PyTorch 1.13) if missing, builds rill-demo, then
# runs Rill and PyTorch alternately (A B A B ...) and prints a RATIO line per
# pair and FIGURE/RATIO lines with the range at the end.
#
#   bench/train_bench.sh [--threads=2] [--repeats=2] [--train_limit=0 (all)] [--devices=host:0,host:1]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
THREADS=2 REPEATS=2 LIMIT=0 DEVICES=""
for arg in "$@"; do
  case "$arg" in
    --threads=*) THREADS="${arg#*=}" ;;
    --repeats=*) REPEATS="${arg#*=}" ;;
    --train_limit=*) LIMIT="${arg#*=}" ;;
    --devices=*) DEVICES="${arg#*=}" ;;
    *) echo "train_bench.sh: unknown argument $arg (--threads= --repeats= --train_limit= --devices=)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  SUDO=(); [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-torch >/dev/null
fi
BUILD_DIR="${RILL_BUILD_DIR:-build}"
gen=(); [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target rill-demo >/dev/null

# Both sides get the same thread count: OpenMP (oneDNN, libtorch's
# intra-op pool) and OpenBLAS read these; PyTorch also sets it itself.
export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" RILL_HOST_DEVICES=2
echo "threads: $THREADS (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, torch.set_num_threads); batch 64, Adam lr 1e-3"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
rill_args=(train --epochs=1 --train_limit="$LIMIT" --out_dir="$out")
if [[ -n "$DEVICES" ]]; then rill_args+=(--devices="$DEVICES"); else rill_args+=(--device=host:0); fi
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
train_ratios=() infer_ratios=()
for ((i = 1; i <= REPEATS; i++)); do
  rill="$("$BUILD_DIR/tools/rill-demo" "${rill_args[@]}" | grep '^RESULT')"
  torch="$(/usr/bin/python3 bench/torch_convnet.py --threads="$THREADS" --train_limit="$LIMIT" | grep '^TORCH')"
  echo "rill:  $rill"
  echo "torch: $torch"
  rt="$(field images_per_second "$rill")" ri="$(field inference_images_per_second "$rill")"
  tt="$(field train_images_per_second "$torch")" ti="$(field inference_images_per_second "$torch")"
  tr="$(awk -v a="$rt" -v b="$tt" 'BEGIN { printf "%.3f", a / b }')"
  ir="$(awk -v a="$ri" -v b="$ti" 'BEGIN { printf "%.3f", a / b }')"
  echo "RATIO train.images_per_second.rill_vs_torch.pair$i $tr"
  echo "RATIO inference.images_per_second.rill_vs_torch.pair$i $ir"
  train_ratios+=("$tr") infer_ratios+=("$ir")
  echo "FIGURE train.images_per_second.rill.pair$i $rt"
  echo "FIGURE train.images_per_second.torch.pair$i $tt"
done
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
echo "RATIO train.images_per_second.rill_vs_torch.range $(range "${train_ratios[@]}") (threads $THREADS)"
echo "RATIO inference.images_per_second.rill_vs_torch.range $(range "${infer_ratios[@]}") (threads $THREADS)"
