#!/usr/bin/env bash
# Packs the CUDA test and benchmark binaries, with the shared libraries a
# machine that has only a GPU driver, CUDA and cuDNN lacks (Abseil,
# OpenBLAS, oneDNN, FFTW, the OpenCL loader, GoogleTest's and Google
# Benchmark's, libstdc++), into .gpu-bundle/ so they run there unchanged.
#
#   scripts/gpu-bundle.sh            build in build/ (Release) and pack
#   .gpu-bundle/run.sh [tests|bench|all]   on the GPU machine: runs them
#
# CUDA's own libraries (cudart, cuBLAS, cuRAND, cuFFT, cuDNN) are NOT packed:
# the binaries find the GPU machine's through their RUNPATH
# (/usr/local/cuda/lib) or LD_LIBRARY_PATH. Binaries are stripped and the
# libraries packed into lib.tar.xz (about 15 MB instead of 97: the device
# tool carries 64 MiB at most); run.sh unpacks them on first use.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${RILL_BUILD_DIR:-build}"
OUT="$ROOT/.gpu-bundle"
JOBS="${RILL_JOBS:-2}"

bash scripts/setup.sh
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/plugins"

# Every test binary that links the CUDA runtime, the CUDA benchmark, the
# tools, and the host benchmarks for comparison figures.
mapfile -t BINARIES < <(
  find "$BUILD_DIR" -type f -perm -u+x \( -name '*_test' -o -name 'cuda_bench' -o -name 'rill-info' \
       -o -name 'rill-demo' \) -not -path '*/CMakeFiles/*' | sort)
for bin in "${BINARIES[@]}"; do
  if [[ "$bin" == *_test && "$bin" != */plugin_loading_test ]] \
     && ! ldd "$bin" 2>/dev/null | grep -q libcudart; then continue; fi
  cp "$bin" "$OUT/bin/"
  strip --strip-unneeded "$OUT/bin/$(basename "$bin")"
done
# The CUDA backend as a run-time module (plugin_loading_test loads it into a
# program that links no CUDA).
module="$(find "$BUILD_DIR/lib/rill" -name librill_cuda.so 2>/dev/null | head -1)"
if [[ -n "$module" ]]; then
  cp "$module" "$OUT/plugins/"
  strip --strip-unneeded "$OUT/plugins/librill_cuda.so"
fi

# Shared libraries: what ldd resolves outside CUDA's folder and the C
# library itself. (BLIS, which Rill loads with dlopen from its Debian
# path, is left out: the BLIS plugin is a host plugin and its tests do not
# link CUDA.)
is_system() {
  case "$(basename "$1")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libresolv.so*) return 0 ;;
  esac
  return 1
}
for bin in "$OUT"/bin/* "$OUT"/plugins/*; do
  if [[ -f "$bin" ]]; then ldd "$bin" | awk '/=> \// {print $3}'; fi
done | sort -u | while read -r lib; do
  [[ "$lib" == /usr/local/cuda* ]] && continue
  is_system "$lib" && continue
  cp -L "$lib" "$OUT/lib/"
done
tar -cJf "$OUT/lib.tar.xz" -C "$OUT" lib
rm -rf "$OUT/lib"

cat > "$OUT/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled CUDA tests and/or benchmarks: run.sh [tests|bench|all].
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ -d "$HERE/lib" ]] || tar -xJf "$HERE/lib.tar.xz" -C "$HERE"
export LD_LIBRARY_PATH="$HERE/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
export RILL_HOST_DEVICES=2
what="${1:-all}"
rc=0
"$HERE/bin/rill-info" || rc=1
if [[ "$what" == tests || "$what" == all ]]; then
  for t in "$HERE"/bin/*_test; do
    echo "=== $(basename "$t")"
    if [[ "$t" == */plugin_loading_test ]]; then  # only its case of the CUDA module
      RILL_CUDA_MODULE_PATH="$HERE/plugins/librill_cuda.so" "$t" --gtest_brief=1 \
        --gtest_filter='*CudaModule*' || rc=1
      continue
    fi
    "$t" --gtest_brief=1 || rc=1
  done
  "$HERE/bin/rill-demo" || rc=1
fi
if [[ "$what" == bench || "$what" == all ]]; then
  [[ -x "$HERE/bin/cuda_bench" ]] && { "$HERE/bin/cuda_bench" || rc=1; }
fi
exit $rc
RUN
chmod +x "$OUT/run.sh"
du -sh "$OUT" | awk '{print "gpu-bundle: " $1 " in .gpu-bundle/ (bin: " n " binaries)"}' n="$(ls "$OUT/bin" | wc -l)"
