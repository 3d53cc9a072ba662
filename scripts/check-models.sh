#!/usr/bin/env bash
# Real models against PyTorch: exports the models of tools/export_torch_models.py
# with torch.onnx (opsets 13 and 17, random weights, eval mode, no simplifier,
# PyTorch's outputs as test data), then runs each with rill-run on every
# device given and checks the outputs. Installs the peer (Debian's
# python3-torch and python3-torchvision) if missing. Prints one line per
# model and device, and a FIGURE line per device; exits 1 if any fails.
#
#   scripts/check-models.sh [--devices=cpu,host:0,opencl:0] [--only=resnet18,lstm]
#                           [--dynamic-batch] [--out=DIR]
#
# Tolerance: rtol 1e-3, atol 1e-4, except inception_v3 (atol 3e-3): its
# logits reach 25 and PyTorch's own float32 result differs from its float64
# one by 1.3e-3 there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DEVICES="cpu,host:0,opencl:0" ONLY="" DYNAMIC="" OUT=""
for arg in "$@"; do
  case "$arg" in
    --devices=*) DEVICES="${arg#*=}" ;;
    --only=*) ONLY="${arg#*=}" ;;
    --dynamic-batch) DYNAMIC="--dynamic-batch" ;;
    --out=*) OUT="${arg#*=}" ;;
    *) echo "check-models.sh: unknown argument $arg (--devices= --only= --dynamic-batch --out=)" >&2
       exit 2 ;;
  esac
done
bash scripts/setup.sh
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  SUDO=(); [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    python3-torch python3-torchvision >/dev/null
fi
BUILD_DIR="${RILL_BUILD_DIR:-build}"
gen=(); [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${gen[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${RILL_JOBS:-2}" --target rill-run >/dev/null

if [[ -z "$OUT" ]]; then
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
fi
export_args=(--out "$OUT")
[[ -n "$ONLY" ]] && export_args+=(--only "$ONLY")
[[ -n "$DYNAMIC" ]] && export_args+=("$DYNAMIC")
/usr/bin/python3 tools/export_torch_models.py "${export_args[@]}" | tail -1

export RILL_HOST_DEVICES=2 POCL_CACHE_DIR="$ROOT/$BUILD_DIR/pocl-cache"
failed=0
IFS=, read -r -a devices <<<"$DEVICES"
for dev in "${devices[@]}"; do
  pass=0 total=0
  for dir in "$OUT"/*_op*/; do
    name="$(basename "$dir")"
    atol=1e-4
    [[ "$name" == inception_v3* ]] && atol=3e-3
    run_args=("$dir" --test-data="$dir" --device="$dev" --runs=3 --warmup=1 --atol="$atol")
    total=$((total + 1))
    if log="$("$BUILD_DIR/tools/rill-run" "${run_args[@]}" 2>&1)"; then
      pass=$((pass + 1))
      latency="$(grep -o 'p50 [0-9.]* ms' <<<"$log" || true)"
      printf '%-10s %-38s PASS  %s\n' "$dev" "$name" "$latency"
    else
      failed=1
      printf '%-10s %-38s FAIL  %s\n' "$dev" "$name" \
        "$(grep -E 'FAIL|cannot|rill-run:' <<<"$log" | head -3 | tr '\n' ' ')"
    fi
  done
  echo "FIGURE models matching PyTorch on $dev: $pass of $total    scripts/check-models.sh --devices=$dev $DYNAMIC"
done
exit "$failed"
