#!/bin/bash
# Ranks that cannot train together must fail at once with a message that
# says why:
# 1. an MPMD launch where rank 1 builds a wider dense layer (--hidden=96
#    against 64): the first parameter broadcast that differs, 'fc1_w'
#    (3136 x 64 = 200704 against 3136 x 96 = 301056 floats), is named with
#    both sizes by the communicator's order check, on both ranks;
# 2. a batch that does not split over the ranks (--batch=33 on 2).
source "$(dirname "$0")/dist_lib.sh" "$@"

# Longer than the job; the mismatch is found at the first broadcasts.
LIMIT_S=40
COMMON=(train "${SMALL[@]}" --train_limit=640 --epochs=1 --collective_timeout=20)

# --- 1. different models ---------------------------------------------------
out=$WORK/mpmd.out
t0=$(now_ms)
timeout -s KILL $LIMIT_S "$MPIEXEC" -n 1 "$DEMO" "${COMMON[@]}" --hidden=64 --out_dir="$WORK/mpmd" \
  : -n 1 "$DEMO" "${COMMON[@]}" --hidden=96 --out_dir="$WORK/mpmd" >"$out" 2>&1
rc=$?
t1=$(now_ms)
show "$out"
echo "mpmd: mpiexec exited $rc after $((t1 - t0)) ms"
[ "$rc" != 0 ] || fail "mpmd: mpiexec exited 0"
[ "$rc" != 137 ] || fail "mpmd: the job did not end within $LIMIT_S s"
for r in 0 1; do
  if [ $r = 0 ]; then mine=200704 theirs=301056 peer=1; else mine=301056 theirs=200704 peer=0; fi
  expect_in "$out" "^rill-demo train \(rank $r of 2\): FAILED_PRECONDITION: .*collectives \(mpi\): the ranks issued different collectives as #[0-9]+: rank $r issued broadcast\(root 0\) float x$mine 'fc1_w', rank $peer issued broadcast\(root 0\) float x$theirs 'fc1_w'\. Every rank must issue the same collectives" \
    "mpmd: rank $r names fc1_w and both sizes"
done
# Before any training: the mismatch is found while rank 0's parameters are
# broadcast.
if grep -q 'epoch 1/1 \[' "$out"; then fail "mpmd: training started"; fi
ok "mpmd: no step was trained"

# --- 2. a batch that does not split over the ranks ---------------------------
out=$WORK/batch.out
t0=$(now_ms)
timeout -s KILL $LIMIT_S "$MPIEXEC" -n 2 "$DEMO" "${COMMON[@]}" --hidden=64 --batch=33 \
  --out_dir="$WORK/batch" >"$out" 2>&1
rc=$?
t1=$(now_ms)
show "$out"
echo "batch: mpiexec exited $rc after $((t1 - t0)) ms"
[ "$rc" != 0 ] || fail "batch: mpiexec exited 0"
[ "$rc" != 137 ] || fail "batch: the job did not end within $LIMIT_S s"
expect_in "$out" "^rill-demo train \(rank [01] of 2\): INVALID_ARGUMENT: .*batch size 33 does not split evenly over 2 .*\(2 ranks\)" \
  "batch: the error names the batch size and the ranks"
echo PASS
