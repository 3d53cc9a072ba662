#!/usr/bin/env bash
# Builds Rill and runs its tests. Works from any directory.
#
#   scripts/test.sh           setup, check the C++ layout (clang-format), configure
#                             build/, build, ctest (all tests),
#                             then install into a temporary prefix and build and
#                             run tests/consumer, tests/consumer_all and
#                             examples/custom_blas against the installed package,
#                             and compile README.md's C++ snippets against it;
#                             then build two outside backends against it and run
#                             the installed conformance suite on them (a copy of
#                             platform/skeleton, examples/toy_backend)
#   scripts/test.sh --tsan    ThreadSanitizer build in build-tsan/ of just the
#                             tests it runs (targets tests_<label>): those labelled
#                             base, stream, conformance, engine, tensor, graph, io or kvstore
#   scripts/test.sh --asan    AddressSanitizer + UBSan build in build-asan/, runs
#                             every test; then the fuzz stage below
#   scripts/test.sh --fuzz    clang ASan + UBSan + libFuzzer build in build-fuzz/
#                             of the bad-input tests and tests/fuzz: runs the
#                             tests, then each fuzz target for RILL_FUZZ_SECONDS
#                             (default 120) from the committed corpus
#
# Environment: RILL_JOBS (build parallelism, default 2), RILL_BUILD_DIR (a
# build folder instead of the mode's default), RILL_FUZZ_SECONDS. Exits non-zero on any
# failure and ends with a short summary.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

MODE=default
case "${1:-}" in
  "") ;;
  --tsan) MODE=tsan ;;
  --asan) MODE=asan ;;
  --fuzz) MODE=fuzz ;;
  -h|--help) usage; exit 0 ;;
  *) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac
[[ $# -le 1 ]] || { echo "test.sh: one mode at most" >&2; exit 2; }

JOBS="${RILL_JOBS:-2}"
CMAKE_ARGS=()
CTEST_ARGS=(--output-on-failure --no-tests=error)
BUILD_TARGETS=()  # Empty: everything.
WRAP=()  # Prefix for commands that run instrumented binaries (setarch -R if TSan needs it).
case "$MODE" in
  default)
    BUILD_DIR="${RILL_BUILD_DIR:-build}" ;;
  tsan)
    BUILD_DIR="${RILL_BUILD_DIR:-build-tsan}"
    CMAKE_ARGS+=(-DRILL_SANITIZER=thread -DRILL_BUILD_BENCHMARKS=OFF)
    TSAN_LABELS=(base stream conformance engine tensor graph io kvstore abi dist)
    CTEST_ARGS+=(-L "$(IFS='|'; echo "${TSAN_LABELS[*]}")")
    # Only the test binaries those labels run (and what they link).
    BUILD_TARGETS=("${TSAN_LABELS[@]/#/tests_}")
    export TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1 suppressions=$ROOT/scripts/tsan.supp}"
    # oneDNN's OpenMP workers synchronize through libgomp, which TSan cannot
    # see: run its compute on the calling thread (scripts/tsan.supp).
    export OMP_NUM_THREADS=1 ;;
  asan)
    BUILD_DIR="${RILL_BUILD_DIR:-build-asan}"
    CMAKE_ARGS+=(-DRILL_SANITIZER=address -DRILL_BUILD_BENCHMARKS=OFF)
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" ;;
  fuzz)
    BUILD_DIR="${RILL_BUILD_DIR:-build-fuzz}"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" ;;
esac
# The clang build of --fuzz (and of --asan's fuzz stage), and what it builds.
FUZZ_BUILD_DIR="${RILL_FUZZ_BUILD_DIR:-build-fuzz}"
[[ "$MODE" == fuzz ]] && FUZZ_BUILD_DIR="$BUILD_DIR"
FUZZ_TESTS=(executor_bad_input_test stream_bad_input_test plugin_bad_input_test engine_bad_input_test
  plugin_loading_test mpi_collectives_test
  # Hardening II's regression tests: hostile files, aliasing views, integer
  # edges (docs/hardening.md), where ASan and UBSan see what they fixed.
  graph_onnx_hostile_test io_idx_reader_test ops_alias_test ops_integer_semantics_test)

# --- Summary, printed however the script ends.
SUMMARY=()
STAGE="setup"
T0=$SECONDS
LOG_DIR="$(mktemp -d)"
finish() {
  local rc=$?
  echo
  echo "==== test.sh summary ($MODE, $BUILD_DIR/, -j$JOBS) ===="
  local line
  for line in "${SUMMARY[@]}"; do echo "  $line"; done
  if [[ $rc -eq 0 ]]; then
    echo "  RESULT: PASS in $((SECONDS - T0)) s"
  else
    echo "  RESULT: FAIL at stage '$STAGE' (exit $rc) after $((SECONDS - T0)) s"
  fi
  rm -rf "$LOG_DIR"
  exit $rc
}
trap finish EXIT

# step <name> <command...>: runs a stage and records its time.
step() {
  local name="$1"; shift
  STAGE="$name"
  local t=$SECONDS
  echo "==== $name"
  "$@"
  SUMMARY+=("$(printf '%-10s ok   %4d s' "$name" $((SECONDS - t)))")
}

# ctest, with its closing lines kept for the summary.
run_ctest() {
  local log="$LOG_DIR/ctest.log" rc=0
  "${WRAP[@]}" ctest --test-dir "$BUILD_DIR" "${CTEST_ARGS[@]}" 2>&1 | tee "$log" || rc=$?
  local counts
  counts="$(grep -E '^[0-9]+% tests passed' "$log" | tail -1 || true)"
  [[ -n "$counts" ]] && SUMMARY+=("ctest: $counts")
  # The ONNX backend node tests' counts per device (graph_onnx_node_test).
  local line
  while IFS= read -r line; do
    SUMMARY+=("$(sed -E 's/^ONNX node tests on ([^ ]*): ([0-9]+) cases.* ([0-9]+) pass .*/onnx node tests \1: \3 of \2 pass/' <<<"$line")")
  done < <(grep -hE '^ONNX node tests on ' "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null || true)
  [[ $rc -eq 0 ]] || failure_excerpts
  return $rc
}

# The telling lines of each failed test's output (gtest failures, sanitizer
# reports, MPI aborts), at most 6 per test, kept for the summary: CI shows
# only the end of the output, where ctest lists just the failing names.
failure_excerpts() {
  local line
  while IFS= read -r line; do SUMMARY+=("$line"); done < <(awk '
    / Test: / { name = $3; n = 0; next }
    /^Test Failed\./ { for (i = 0; i < n; i++) print "  " name ": " keep[i]; n = 0; next }
    /Failure$|error: |ERROR: |WARNING: ThreadSanitizer|SUMMARY: |runtime error|MPI_ABORT|[Tt]imeout|Expected|Which is|Actual|  #[0-9] / {
      if (n < 6) keep[n++] = substr($0, 1, 200)
    }' "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null | head -40)
}

# TSan needs an address layout it knows; TOOLCHAIN.md says it works here
# without help, but fall back to setarch -R (no ASLR) where it does not.
check_tsan_runs() {
  local probe="$LOG_DIR/tsan_probe"
  echo 'int main() { return 0; }' | g++ -fsanitize=thread -x c++ - -o "$probe"
  if ! "$probe" >/dev/null 2>&1; then
    echo "test.sh: TSan binaries do not start here; running them under setarch -R"
    WRAP=(setarch "$(uname -m)" -R)
    "${WRAP[@]}" "$probe"
  fi
}

build() {
  if [[ ${#BUILD_TARGETS[@]} -gt 0 ]]; then
    "${WRAP[@]}" cmake --build "$BUILD_DIR" -j "$JOBS" --target "${BUILD_TARGETS[@]}"
  else
    "${WRAP[@]}" cmake --build "$BUILD_DIR" -j "$JOBS"
  fi
}

configure() {
  local gen=()
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" "${CMAKE_ARGS[@]}"
}

# Every C++ and CUDA file as clang-format 14 (.clang-format) lays it out;
# other versions lay out some constructs differently, so they are not used.
check_format() {
  if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "format: not a git checkout; skipped"
    return 0
  fi
  if ! command -v clang-format-14 >/dev/null; then
    echo "format: clang-format-14 not found (scripts/setup.sh installs it); skipped"
    return 0
  fi
  local files
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
  clang-format-14 --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files as .clang-format lays them out"
}

# The installed CMake package must not carry absolute paths of outside
# libraries (they are found again through RillDependencies.cmake).
check_package_paths() {
  local dir="$1/lib/cmake/Rill" hits
  hits="$(grep -nE '(^|[";:[:space:]])/[^";>[:space:]]*\.(so|a)(\.[0-9]+)*([";>[:space:]]|$)' "$dir"/*.cmake || true)"
  if [[ -n "$hits" ]]; then
    echo "consumer: the installed package names libraries by absolute path:" >&2
    echo "$hits" >&2
    return 1
  fi
  echo "package: $(ls "$dir" | wc -l) files in lib/cmake/Rill, no absolute library paths"
}

# configure_consumer <source dir> <build dir> <log name> [cmake args...]: an
# outside project against the installed package.
configure_consumer() {
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_PREFIX_PATH="$LOG_DIR/prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${@:4}" \
    >"$LOG_DIR/$3-configure.log" \
    || { cat "$LOG_DIR/$3-configure.log"; return 1; }
  grep -E '^-- (rill_consumer|rill_consumer_all|custom_blas|toy|Rill):' "$LOG_DIR/$3-configure.log" || true
}

# Installs the build just tested into a temporary prefix, then configures,
# builds and runs against it: tests/consumer (rill::core and rill::host),
# tests/consumer_all (every exported target, touched one by one; it also
# checks that an unbuilt component fails find_package clearly) and
# examples/custom_blas; and compiles README.md's C++ snippets against the
# installed headers.
consumer() {
  local prefix="$LOG_DIR/prefix" cbuild="$LOG_DIR/consumer-build" abuild="$LOG_DIR/consumer-all-build"
  cmake --install "$BUILD_DIR" --prefix "$prefix" >"$LOG_DIR/install.log" \
    || { cat "$LOG_DIR/install.log"; return 1; }
  echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"
  check_package_paths "$prefix"
  configure_consumer tests/consumer "$cbuild" consumer
  cmake --build "$cbuild" -j "$JOBS"
  "$cbuild/rill_consumer"
  configure_consumer tests/consumer_all "$abuild" consumer-all
  cmake --build "$abuild" -j "$JOBS"
  POCL_CACHE_DIR="$BUILD_DIR/pocl-cache" "$abuild/rill_consumer_all"
  scripts/readme_snippets.sh -I "$prefix/include"
  # examples/custom_blas: an outside BLAS plugin registered and selected at run time.
  local ebuild="$LOG_DIR/custom-blas-build"
  configure_consumer examples/custom_blas "$ebuild" custom-blas
  cmake --build "$ebuild" -j "$JOBS"
  "$ebuild/custom_blas"
}

# Backends written outside the tree against the installed package, each
# tested by the installed conformance suite through one
# rill_add_conformance_test line: platform/skeleton copied under a new name
# by scripts/new_backend.sh (every method Unimplemented: the suite checks
# its platform and skips every case, saying why), and examples/toy_backend
# (host memory, a thread per stream; the host library plugins serve it).
outside_backends() {
  local src="$LOG_DIR/new-backend/mine" sbuild="$LOG_DIR/new-backend-build"
  local tbuild="$LOG_DIR/toy-backend-build" log="$LOG_DIR/outside-ctest.log"
  scripts/new_backend.sh mine "$src" >/dev/null
  configure_consumer "$src" "$sbuild" new-backend
  cmake --build "$sbuild" -j "$JOBS"
  ctest --test-dir "$sbuild" --output-on-failure --no-tests=error >"$log" 2>&1 || { cat "$log"; return 1; }
  SUMMARY+=("skeleton copy (outside): $(grep -E '^[0-9]+% tests passed' "$log")")
  configure_consumer examples/toy_backend "$tbuild" toy-backend -DRILL_SOURCE_DIR="$ROOT"
  cmake --build "$tbuild" -j "$JOBS"
  # Its conformance test, with the op suite, runs on two toy devices (ENV
  # TOY_DEVICES=2); ctest also runs toy_demo (a GEMM through OpenBLAS on the
  # toy device), toy_mlp (examples/mlp on toy:0), toy_train (the convnet on
  # toy:0 against cpu) and toy_train_fallback (every op on the fallback).
  ctest --test-dir "$tbuild" --output-on-failure --no-tests=error >"$log" 2>&1 || { cat "$log"; return 1; }
  grep -E 'toy_(demo|mlp|train)' "$log" || true
  SUMMARY+=("toy backend (outside): $(grep -E '^[0-9]+% tests passed' "$log")")
  # examples/c_backend: a C11 plugin compiled against the installed header
  # alone, loaded at run time by the installed conformance and op suites.
  local cbuild="$LOG_DIR/c-backend-build"
  configure_consumer examples/c_backend "$cbuild" c-backend
  cmake --build "$cbuild" -j "$JOBS"
  ctest --test-dir "$cbuild" --output-on-failure --no-tests=error >"$log" 2>&1 || { cat "$log"; return 1; }
  SUMMARY+=("C backend plugin (outside): $(grep -E '^[0-9]+% tests passed' "$log")")
}

# The libFuzzer target (tests/fuzz/README.md): a clang build of the
# libraries it drives in build-fuzz/, then a time-boxed run from a copy of
# the committed corpus. A crash fails the stage and leaves its input in
# build-fuzz/fuzz-artifacts/ (add it to the corpus once fixed).
configure_fuzz() {
  local gen=()
  [[ -f "$FUZZ_BUILD_DIR/CMakeCache.txt" ]] || gen=(-G Ninja)
  CC=clang CXX=clang++ cmake -S . -B "$FUZZ_BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRILL_SANITIZER=fuzz -DRILL_BUILD_TESTS=ON -DRILL_BUILD_BENCHMARKS=OFF -DRILL_ENABLE_CUDA=OFF \
    >"$LOG_DIR/fuzz-configure.log" || { cat "$LOG_DIR/fuzz-configure.log"; return 1; }
}

# The bad-input tests of every layer, built by clang with ASan, UBSan and
# the fuzzer's coverage instrumentation.
run_fuzz_tests() {
  cmake --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target "${FUZZ_TESTS[@]}"
  local t bin
  for t in "${FUZZ_TESTS[@]}"; do
    bin="$(find "$FUZZ_BUILD_DIR" -name "$t" -type f -perm -u+x | head -1)"
    local env=()
    # Open MPI keeps what MPI_Init allocates: the leak report needs whole
    # stacks to match scripts/lsan.supp's MPI entries (and MPI's components
    # loaded to name them).
    [[ "$t" == mpi_* ]] && env=(OMPI_MCA_mca_base_component_disable_dlclose=1
      LSAN_OPTIONS="${LSAN_OPTIONS:-}:fast_unwind_on_malloc=0"
      ASAN_OPTIONS="${ASAN_OPTIONS:-}:fast_unwind_on_malloc=0")
    # The op suites run every context, PoCL's worker threads included, and
    # LeakSanitizer's exit-time thread suspension crashed once in five runs
    # ("Tracer caught signal 11"): they run for ASan and UBSan, without the
    # leak check (the full --asan mode keeps it).
    [[ "$t" == ops_* ]] && env=(ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0")
    env "${env[@]}" RILL_HOST_DEVICES=2 POCL_CACHE_DIR="$FUZZ_BUILD_DIR/pocl-cache" "$bin" \
      --gtest_brief=1
  done
  SUMMARY+=("bad-input tests (clang ASan+UBSan): ${FUZZ_TESTS[*]}")
}

# Each fuzz target with its committed seed corpus (tests/fuzz/README.md).
FUZZ_TARGETS=(api_fuzz:corpus onnx_fuzz:corpus_onnx idx_fuzz:corpus_idx checkpoint_fuzz:corpus_checkpoint)

run_fuzz() {
  local fbuild="$FUZZ_BUILD_DIR" seconds="${RILL_FUZZ_SECONDS:-120}" entry
  cmake --build "$fbuild" -j "$JOBS" --target "${FUZZ_TARGETS[@]%%:*}"
  for entry in "${FUZZ_TARGETS[@]}"; do
    fuzz_one "${entry%%:*}" "tests/fuzz/${entry#*:}" "$seconds" || return 1
  done
}

# Runs one target for `seconds` from a copy of its corpus. A crash fails the
# stage and leaves its input in build-fuzz/fuzz-artifacts/ (add it to the
# corpus once fixed).
fuzz_one() {
  local target="$1" seeds="$2" seconds="$3" fbuild="$FUZZ_BUILD_DIR"
  local corpus="$LOG_DIR/$target-corpus" artifacts="$fbuild/fuzz-artifacts/$target-"
  mkdir -p "$corpus" "$fbuild/fuzz-artifacts"
  cp "$seeds"/* "$corpus/"
  local log="$LOG_DIR/$target.log" rc=0
  # -timeout: one input that hangs fails the run within a minute.
  ASAN_OPTIONS="allocator_may_return_null=1:${ASAN_OPTIONS:-}" POCL_CACHE_DIR="$fbuild/pocl-cache" \
    "$fbuild/tests/fuzz/$target" "$corpus" -max_total_time="$seconds" -use_value_profile=1 \
    -timeout=60 -rss_limit_mb=4096 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log" | sed "s/^/$target: /" || true
  if [[ $rc -ne 0 ]]; then
    { grep -A40 -E 'ERROR: |runtime error|ALARM' "$log" || tail -60 "$log"; } | head -100
    echo "$target: exit $rc; the input is in ${artifacts%/*}/" >&2
    SUMMARY+=("$target: FAILED (exit $rc), input in ${artifacts%/*}/")
    return 1
  fi
  SUMMARY+=("$target: $(grep -E '^Done' "$log" | head -1)")
}

# examples/mlp on every context it must run on here.
run_mlp() {
  local ctx
  for ctx in cpu host:0 opencl:0 cbackend:0; do
    # cbackend: examples/c_backend, a C plugin loaded at run time.
    RILL_PLUGIN_PATH="$BUILD_DIR/examples/plugins" POCL_CACHE_DIR="$BUILD_DIR/pocl-cache" \
      "$BUILD_DIR/examples/mlp/mlp" --ctx="$ctx" --check
  done
}

# The main job's output, as a pipe sees it (no terminal): a short
# `rill-demo train`, its lines parsed; then Ctrl-C during training must stop
# cleanly and still write the curve and the checkpoint.
run_train_demo() {
  local demo="$BUILD_DIR/tools/rill-demo" out="$LOG_DIR/train" log="$LOG_DIR/train.log"
  mkdir -p "$out"
  RILL_HOST_DEVICES=2 "$demo" train --device=host:0 --epochs=2 --train_limit=2000 --test_limit=1000 \
    --out_dir="$out" >"$log"
  cat "$log"
  fail() { echo "train demo: $*" >&2; return 1; }
  ! grep -q $'\r' "$log" || fail "carriage returns in non-terminal output"
  grep -qE '^epoch 2/2 \[#{20}\] 31/31 batches +[0-9]+ img/s  loss [0-9.]+  time [0-9]+:[0-9]{2}$' "$log" \
    || fail "no final progress line for epoch 2"
  grep -qE '^epoch +train loss +train acc +test loss +test acc +time s +img/s$' "$log" || fail "no table header"
  [[ "$(grep -cE '^ +[12] +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+$' "$log")" == 2 ]] || fail "not 2 table rows"
  local result acc ckpt
  result="$(grep '^RESULT ' "$log")" || fail "no RESULT line"
  acc="$(sed -n 's/.* test_accuracy=\([0-9.]*\).*/\1/p' <<<"$result")"
  ckpt="$(sed -n 's/.* checkpoint_accuracy=\([0-9.]*\).*/\1/p' <<<"$result")"
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "test accuracy $acc < 0.6"
  [[ "$acc" == "$ckpt" ]] || fail "reloaded checkpoint scores $ckpt, the trained model $acc"
  [[ "$(head -c 8 "$out/train_curve.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "no PNG"
  [[ "$(wc -l <"$out/train_curve.csv")" == 3 ]] || fail "CSV is not a header and 2 rows"
  if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
    /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' \
      "$out/fashion_mnist_convnet.onnx" || fail "the checkpoint fails onnx.checker"
  fi
  # Ctrl-C: SIGINT after 4 s of a long run.
  rm -f "$out"/*
  RILL_HOST_DEVICES=2 "$demo" train --device=host:0 --epochs=50 --train_limit=2000 --test_limit=500 \
    --out_dir="$out" >"$log" 2>&1 &
  local pid=$!
  sleep 4
  kill -INT "$pid"
  wait "$pid" || fail "exit $? after SIGINT: $(cat "$log")"
  grep -q '^interrupted: stopped after the current batch' "$log" || fail "no interruption message"
  [[ -f "$out/train_curve.png" && -f "$out/fashion_mnist_convnet.onnx" ]] || fail "no curve or checkpoint after SIGINT"
  echo "train demo: output parsed, accuracy $acc, checkpoint $ckpt, Ctrl-C stopped cleanly"
}

step setup bash scripts/setup.sh
[[ "$MODE" == default ]] && step format check_format
if [[ "$MODE" == fuzz ]]; then
  step configure configure_fuzz
  step tests run_fuzz_tests
  step fuzz run_fuzz
  exit 0
fi
if [[ "$MODE" == tsan ]]; then
  step tsan-probe check_tsan_runs
fi
step configure configure
step build build
step ctest run_ctest
if [[ "$MODE" == default ]]; then
  step consumer consumer
  step backends outside_backends
  # The imperative training example on the CPU context, a host device and
  # OpenCL (PoCL): it must learn (--check).
  step mlp run_mlp
  step train run_train_demo
fi
if [[ "$MODE" == asan ]]; then
  step fuzz-setup configure_fuzz
  step fuzz run_fuzz
fi
