#!/usr/bin/env bash
# Data-parallel training over MPI ranks: `rill-demo train` (one epoch of the
# Fashion-MNIST convnet on host:0) run as
#   1p        1 process, global batch B
#   2r        mpirun -np 2, global batch B (B/2 per rank), gradients reduced
#             during backward (--overlap=true)
#   2r_noov   the same with --overlap=false (reduced after backward)
#   1p_half   1 process, batch B/2: the compute-only step of one rank
#   ddp       PyTorch DDP/Gloo, 2 ranks, same model, global batch, threads
#             per rank and images (bench/dist/ddp_fashion.py)
# each once per round, in that order, for R rounds (A B C D E A B C D E ...),
# and prints per-round lines, then the median and range over rounds:
#   (1) images/s, total and per rank, and comm seconds: 1p vs 2r;
#   (2) step ms of 2r, 2r_noov and 1p_half; exposed communication per step
#       ~= step(2 ranks) - step(1p_half);
#   (3) images/s of Rill 2r / PyTorch DDP.
# Rill's images/s is its whole epoch (first steps included); DDP's is its
# timed steps after a short warm-up, over as many steps as Rill's epoch has.
#
#   bench/dist/train_bench.sh [--train_limit=12800] [--test_limit=1000] [--rounds=3]
#       [--batch=64] [--threads=1] [--dropout=0.4] [--no_ddp] [--quick]
#
# Env: MPIRUN_FLAGS (default "--bind-to none", as DDP's ranks, which nothing
# binds; e.g. add "-x MALLOC_MMAP_THRESHOLD_=1073741824", see
# collectives_bench.cc), RILL_BUILD_DIR (default build). Builds nothing:
#   flock /tmp/rill-ninja.lock ninja -C build -j2 rill-demo
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
LIMIT=12800 TEST_LIMIT=1000 ROUNDS=3 BATCH=64 THREADS=1 DROPOUT=0.4 DDP=1
for arg in "$@"; do
  case "$arg" in
    --train_limit=*) LIMIT="${arg#*=}" ;;
    --test_limit=*) TEST_LIMIT="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --batch=*) BATCH="${arg#*=}" ;;
    --threads=*) THREADS="${arg#*=}" ;;
    --dropout=*) DROPOUT="${arg#*=}" ;;
    --no_ddp) DDP=0 ;;
    --quick) LIMIT=640 TEST_LIMIT=100 ROUNDS=1 ;;
    *) echo "train_bench.sh: unknown argument $arg (--train_limit= --test_limit= --rounds= --batch= --threads= --dropout= --no_ddp --quick)" >&2; exit 2 ;;
  esac
done
if (( BATCH % 2 != 0 )); then echo "train_bench.sh: --batch must be even (split over 2 ranks)" >&2; exit 2; fi
BUILD_DIR="${RILL_BUILD_DIR:-build}"
DEMO="$BUILD_DIR/tools/rill-demo"
[[ -x "$DEMO" ]] || { echo "train_bench.sh: no $DEMO; build it: flock /tmp/rill-ninja.lock ninja -C $BUILD_DIR -j2 rill-demo" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "train_bench.sh: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
if (( DDP )) && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "train_bench.sh: no python3-torch: the DDP comparison is left out (apt-get install python3-torch)" >&2
  DDP=0
fi
STEPS=$(( LIMIT / BATCH ))
(( STEPS >= 2 )) || { echo "train_bench.sh: --train_limit gives fewer than 2 steps of $BATCH" >&2; exit 2; }
WARMUP=$(( STEPS / 10 < 10 ? (STEPS / 10 > 1 ? STEPS / 10 : 1) : 10 ))

# Threads per rank: OpenMP's and OpenBLAS's defaults, and the cores Rill's
# host libraries share (RILL_HOST_CORES; else each rank counts its affinity).
export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" RILL_HOST_CORES="$THREADS"
MPIRUN=(mpirun -np 2)
[[ $(id -u) -eq 0 ]] && MPIRUN+=(--allow-run-as-root)
read -r -a extra <<<"${MPIRUN_FLAGS---bind-to none}"
MPIRUN+=("${extra[@]}" -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x RILL_HOST_CORES)
work="$(mktemp -d)"
keep=0
trap '(( keep )) || rm -rf "$work"' EXIT
common=(train --device=host:0 --epochs=1 --train_limit="$LIMIT" --test_limit="$TEST_LIMIT"
        --dropout="$DROPOUT" --out_dir="$work/out")
declare -A CMD
CMD[1p]="$DEMO ${common[*]} --batch=$BATCH"
CMD[2r]="${MPIRUN[*]} $DEMO ${common[*]} --batch=$BATCH --overlap=true"
CMD[2r_noov]="${MPIRUN[*]} $DEMO ${common[*]} --batch=$BATCH --overlap=false"
CMD[1p_half]="$DEMO ${common[*]} --batch=$((BATCH / 2))"
# Two independent 1p_half processes at once: each rank's compute under the
# same contention for the cores and memory as 2 ranks, without communication
# (the slower one counts).
half=(train --device=host:0 --epochs=1 --train_limit="$LIMIT" --test_limit="$TEST_LIMIT"
      --dropout="$DROPOUT" --batch=$((BATCH / 2)))
CMD[2p_half]="$DEMO ${half[*]} --out_dir=$work/outA & $DEMO ${half[*]} --out_dir=$work/outB & wait -n && wait -n"
CMD[ddp]="/usr/bin/python3 bench/dist/ddp_fashion.py --nproc=2 --batch=$BATCH --threads=$THREADS --train_limit=$LIMIT --steps=$STEPS --warmup=$WARMUP --dropout=$DROPOUT"
CONFIGS=(1p 2r 2r_noov 1p_half 2p_half)
(( DDP )) && CONFIGS+=(ddp)

field() { sed -n "s/.* $1=\([0-9.eE+-]*\).*/\1/p" <<<" $2" | head -1; }
calc() { awk "BEGIN { printf \"%.${2:-3}f\", $1 }"; }
# "median (min-max)" of the arguments.
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'; }
show() { read -r m lo hi <<<"$(stats "$@")"; printf '%s (%s-%s)' "$m" "$lo" "$hi"; }

echo "rill-demo train x1 epoch: $LIMIT images ($STEPS steps of $BATCH), test $TEST_LIMIT; threads per rank $THREADS; $ROUNDS round(s)"
echo "mpirun: ${MPIRUN[*]}; $(mpirun --version 2>/dev/null | head -1)"
env | grep -E '^(OMPI_MCA_|MALLOC_|GLIBC_TUNABLES)' | sed 's/^/  env /' || true

declare -A IPS COMM STEP
for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${CONFIGS[@]}"; do
    log="$work/$c.$r.log"
    rm -rf "$work/out"
    if ! timeout -s KILL 600 bash -c "${CMD[$c]}" >"$log" 2>&1; then
      if [[ $c == ddp ]] && grep -q '^RESULT' "$log"; then
        # Seen once: a Gloo rank spinning at exit after rank 0 reported.
        echo "  (round $r: ddp did not exit cleanly after its RESULT line; the line is used)"
      else
      keep=1
      echo "train_bench.sh: $c failed (round $r): ${CMD[$c]}" >&2
      tail -20 "$log" >&2
      echo "(logs kept in $work)" >&2
      exit 1
      fi
    fi
    line="$(grep '^RESULT' "$log" | tail -1)"
    # The slower of two concurrent processes.
    [[ $c == 2p_half ]] && line="$(grep '^RESULT' "$log" | sort -t= -k5 -g | head -1)"
    [[ -n "$line" ]] || { keep=1; echo "train_bench.sh: $c printed no RESULT line ($log)" >&2; exit 1; }
    ips="$(field images_per_second "$line")"
    if [[ $c == ddp ]]; then
      comm="$(calc "$(field comm_ms_per_step "$line") * $STEPS / 1000")"
    else
      comm="$(field comm_seconds "$line")"
    fi
    batch=$BATCH; [[ $c == 1p_half || $c == 2p_half ]] && batch=$((BATCH / 2))
    step="$(calc "1000 * $batch / $ips" 2)"
    IPS[$c]+="$ips " COMM[$c]+="$comm " STEP[$c]+="$step "
    printf '  round %d %-8s images/s %8.1f  step %7.2f ms  comm %6.3f s\n' "$r" "$c" "$ips" "$step" "$comm"
  done
done

# Per-round values as arrays.
arr() { local -n out=$1; read -r -a out <<<"$2"; }
arr ips1 "${IPS[1p]}"; arr ips2 "${IPS[2r]}"
arr st2 "${STEP[2r]}"; arr st2n "${STEP[2r_noov]}"; arr sth "${STEP[1p_half]}"; arr st1 "${STEP[1p]}"
arr stp "${STEP[2p_half]}"
arr cm2 "${COMM[2r]}"; arr cm2n "${COMM[2r_noov]}"; arr cm1 "${COMM[1p]}"
speedup=() perrank=() exp_on=() exp_off=() vs_ddp=() ddp_ips=()
for ((i = 0; i < ROUNDS; i++)); do
  speedup+=("$(calc "${ips2[i]} / ${ips1[i]}")")
  perrank+=("$(calc "${ips2[i]} / 2" 1)")
  exp_on+=("$(calc "${st2[i]} - ${stp[i]}" 2)")
  exp_off+=("$(calc "${st2n[i]} - ${stp[i]}" 2)")
done
if (( DDP )); then
  arr ipsd "${IPS[ddp]}"; arr std "${STEP[ddp]}"; arr cmd "${COMM[ddp]}"
  for ((i = 0; i < ROUNDS; i++)); do vs_ddp+=("$(calc "${ips2[i]} / ${ipsd[i]}")"); done
fi

echo
echo "== summary: median (min-max) over $ROUNDS round(s) =="
echo "(1) scaling, global batch $BATCH, $THREADS thread(s) per rank"
echo "    1 process   images/s $(show "${ips1[@]}")  comm s $(show "${cm1[@]}")"
echo "    2 ranks     images/s $(show "${ips2[@]}")  per rank $(show "${perrank[@]}")  comm s $(show "${cm2[@]}")"
echo "    2 ranks / 1 process: $(show "${speedup[@]}")"
echo "(2) step ms (exposed communication per step = step - compute-only step of two processes at batch $((BATCH / 2)) at once)"
echo "    1 process, batch $BATCH:       $(show "${st1[@]}")"
echo "    1 process, batch $((BATCH / 2)):     $(show "${sth[@]}")"
echo "    2 processes at once, batch $((BATCH / 2)) (compute only): $(show "${stp[@]}")"
echo "    2 ranks, overlap on:      $(show "${st2[@]}")  exposed $(show "${exp_on[@]}") ms  comm s $(show "${cm2[@]}")"
echo "    2 ranks, overlap off:     $(show "${st2n[@]}")  exposed $(show "${exp_off[@]}") ms  comm s $(show "${cm2n[@]}")"
if (( DDP )); then
  echo "(3) PyTorch DDP/Gloo, 2 ranks: images/s $(show "${ipsd[@]}")  step ms $(show "${std[@]}")  comm s (in flight) $(show "${cmd[@]}")"
  echo "    Rill 2 ranks / DDP: $(show "${vs_ddp[@]}")"
fi
echo
echo "commands (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=RILL_HOST_CORES=$THREADS):"
for c in "${CONFIGS[@]}"; do echo "  $c: ${CMD[$c]}"; done
echo
line() { read -r m lo hi <<<"$(stats "${@:2}")"; echo "$1 median=$m min=$lo max=$hi"; }
line "RATIO dist.train.images_per_second.2ranks_vs_1proc" "${speedup[@]}"
(( DDP )) && line "RATIO dist.train.images_per_second.rill_vs_ddp" "${vs_ddp[@]}"
line "FIGURE dist.train.images_per_second.1proc" "${ips1[@]}"
line "FIGURE dist.train.images_per_second.2ranks" "${ips2[@]}"
line "FIGURE dist.train.step_ms.2ranks_overlap" "${st2[@]}"
line "FIGURE dist.train.step_ms.2ranks_no_overlap" "${st2n[@]}"
line "FIGURE dist.train.step_ms.1proc_half_batch" "${sth[@]}"
line "FIGURE dist.train.exposed_comm_ms.overlap" "${exp_on[@]}"
line "FIGURE dist.train.exposed_comm_ms.no_overlap" "${exp_off[@]}"
(( DDP )) && line "FIGURE dist.train.images_per_second.ddp" "${ipsd[@]}"
exit 0
