#!/bin/bash
# rill-demo train on 3 MPI ranks; rank 1 is SIGKILLed during training.
#
# 1. `mpiexec --enable-recovery`: Open MPI lets the survivors run on, so
#    Rill's own collective timeout (--collective_timeout=4) must end them,
#    each with an error that says a rank was lost, within the timeout plus
#    some slack. Open MPI 4.1.4's mpiexec exits 0 under --enable-recovery
#    whatever its processes return (checked with `bash -c 'exit 3'`), so
#    each rank runs under a wrapper that records its exit status, and the
#    job's status is taken from those.
# 2. Plain `mpiexec`: Open MPI ends the job itself (SIGTERM to the
#    survivors); mpiexec exits non-zero, names rank 1, and the survivors say
#    why they were terminated.
source "$(dirname "$0")/dist_lib.sh" "$@"

TIMEOUT_S=4
SLACK_S=15
# 3 ranks on (in CI) 2 cores: --oversubscribe. The batch splits over 3.
# A list of ranks (Rill's "rank 1", "ranks 0, 1") that has rank 1.
LOST='(rank 1|ranks ([0-9]+, )*1(, [0-9]+)*)'
JOB=(train "${SMALL[@]}" --train_limit=960 --batch=30 --epochs=50
     --collective_timeout="$TIMEOUT_S" --stall_warning=1)

# start_job <name> <mpiexec args...>: runs the job in the background with
# its output in $WORK/<name>.out and mpiexec's exit status in
# $WORK/<name>.rc; sets JOB_PID (a subshell's) and TAG.
start_job() {
  local name=$1
  shift
  TAG="$$-$name"
  (
    export RILL_DIST_TEST_TAG=$TAG RC_DIR=$WORK/$name.ranks
    mkdir -p "$RC_DIR"
    timeout -s KILL 120 "$MPIEXEC" -x RILL_DIST_TEST_TAG -x RC_DIR "$@" >"$WORK/$name.out" 2>&1
    echo $? >"$WORK/$name.rc"
  ) &
  JOB_PID=$!
  BG_PIDS+=("$JOB_PID")
}

# kill_rank1 <name>: waits until the job trains, then SIGKILLs rank 1 and
# sets KILL_MS.
kill_rank1() {
  wait_for "$WORK/$1.out" 'epoch 1/50 \[' 60 || { show "$WORK/$1.out"; fail "$1: training did not start"; }
  sleep 1  # well into training
  local pid
  pid=$(rank_pid "$TAG" 1)
  [ -n "$pid" ] || { show "$WORK/$1.out"; fail "$1: no rill-demo process of rank 1 found"; }
  kill -KILL "$pid"
  KILL_MS=$(now_ms)
  echo "$1: killed rank 1 (pid $pid)"
}

# Records each rank's exit status in $RC_DIR/rc.<rank>.
cat >"$WORK/rank_status.sh" <<'EOF'
#!/bin/bash
"$@"
rc=$?
echo "$rc" >"$RC_DIR/rc.$OMPI_COMM_WORLD_RANK"
exit $rc
EOF
chmod +x "$WORK/rank_status.sh"

# --- 1. --enable-recovery: Rill's timeout ends the survivors -------------
start_job recovery --enable-recovery -n 3 --oversubscribe \
  "$WORK/rank_status.sh" "$DEMO" "${JOB[@]}" --out_dir="$WORK/recovery"
kill_rank1 recovery
wait_pid "$JOB_PID" $((TIMEOUT_S + SLACK_S)) ||
  { show "$WORK/recovery.out"; dump_stacks "$TAG"; fail "recovery: the job did not end within $((TIMEOUT_S + SLACK_S)) s of the kill"; }
end_ms=$(now_ms)
out=$WORK/recovery.out
show "$out"
echo "recovery: the job ended $((end_ms - KILL_MS)) ms after the kill; mpiexec exit status $(cat "$WORK/recovery.rc") (Open MPI's, not checked)"
rc_dir=$WORK/recovery.ranks
for r in 0 1 2; do
  [ -f "$rc_dir/rc.$r" ] || fail "recovery: rank $r recorded no exit status"
done
[ "$(cat "$rc_dir/rc.1")" = 137 ] || fail "recovery: rank 1 exited $(cat "$rc_dir/rc.1"), not 137 (SIGKILL)"
job_rc=0
for r in 0 2; do
  rc=$(cat "$rc_dir/rc.$r")
  [ "$rc" != 0 ] || fail "recovery: surviving rank $r exited 0"
  [ "$rc" -gt "$job_rc" ] && job_rc=$rc
  # Either the order check names the ranks that never joined (rank 1, and
  # rank 0 too when it is stuck in the previous collective's transfer), or
  # (the kill came while this rank was in the MPI transfer with rank 1) the
  # transfer's monitor says a rank was lost during it.
  expect_in "$out" "^rill-demo train \(rank $r of 3\): DEADLINE_EXCEEDED: .*collectives \(mpi\): rank $r of 3: ($LOST did not join collective #[0-9]+ .* within $TIMEOUT_S s \(the rank was lost -- it died or was killed -- or is stuck before this collective\)|the transfer of collective #[0-9]+ .* did not finish within $TIMEOUT_S s after every rank had joined it \(a rank was lost during it\)|the order check of collective #[0-9]+ .* was stuck inside MPI for $TIMEOUT_S s)" \
    "recovery: rank $r's error"
done
ok "recovery: ranks exited 0:$(cat "$rc_dir/rc.0") 1:$(cat "$rc_dir/rc.1") 2:$(cat "$rc_dir/rc.2"); the job's status $job_rc"
if grep -Eq "$LOST did not join" "$out"; then
  ok "recovery: rank 1 named as lost by the order check"
  expect_in "$out" "rank [02] has waited 1\.[0-9] s in collective #[0-9]+ .* for $LOST to join \(timeout after $TIMEOUT_S s\)" \
    "recovery: stall warning"
else
  echo "NOTE: the kill came during a transfer: Rill's message does not name the lost rank"
fi

# --- 2. plain mpiexec: Open MPI ends the job --------------------------------
start_job plain -n 3 --oversubscribe "$DEMO" "${JOB[@]}" --out_dir="$WORK/plain"
kill_rank1 plain
wait_pid "$JOB_PID" $SLACK_S ||
  { show "$WORK/plain.out"; dump_stacks "$TAG"; fail "plain: the job did not end within $SLACK_S s of the kill"; }
end_ms=$(now_ms)
out=$WORK/plain.out
show "$out"
rc=$(cat "$WORK/plain.rc")
echo "plain: the job ended $((end_ms - KILL_MS)) ms after the kill; mpiexec exit status $rc"
[ "$rc" != 0 ] || fail "plain: mpiexec exited 0"
ok "plain: mpiexec exited $rc"
expect_in "$out" "process rank 1 with PID [0-9]+ on node .* exited on signal 9" "plain: mpiexec names rank 1"
expect_in "$out" "^rill-demo train: rank [02] of 3: terminated \(SIGTERM\): under mpirun this means another rank was lost or failed" \
  "plain: a survivor's SIGTERM message"
echo PASS
