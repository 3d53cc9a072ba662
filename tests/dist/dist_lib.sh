# Helpers of the rill-demo train tests under mpiexec (sourced by *.sh here).
# Each script is run by ctest as: bash <script> <rill-demo> <mpiexec>.
# Exit status: 0 pass, 1 fail, 77 skipped (no Fashion-MNIST files).

set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 <rill-demo> <mpiexec>" >&2
  exit 2
fi
# shellcheck disable=SC2034  # used by the scripts that source this
DEMO=$1 MPIEXEC=$2
DATA_DIR=${RILL_TEST_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
# A small, fast job: 2 cores in CI.
# shellcheck disable=SC2034
SMALL=(--data_dir="$DATA_DIR" --test_limit=200 --hidden=64 --batch=32 --curve_every=5)

# Every job's files go here; removed at exit unless RILL_TEST_KEEP is set.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rill_dist_test.XXXXXX")
# Background jobs (by pid) to end at exit if still running.
BG_PIDS=()
cleanup() {
  for p in "${BG_PIDS[@]}"; do
    kill -KILL "$p" 2>/dev/null
  done
  if [ -n "${RILL_TEST_KEEP:-}" ]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

if ! ls "$DATA_DIR"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIP: no Fashion-MNIST files in $DATA_DIR"
  exit 77
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ok <description>: prints a passed check.
ok() { echo "ok: $*"; }

# show <file>: a job's output, progress lines (\r) split, for the log.
show() {
  echo "----- $1"
  tr '\r' '\n' <"$1" | grep -v '^[[:space:]]*$'
  echo "-----"
}

# expect_in <file> <extended regex> <what>
expect_in() {
  grep -Eq -- "$2" "$1" || { show "$1"; fail "$3: no match for /$2/ in $1"; }
  ok "$3: $(grep -Eo -- "$2" "$1" | head -1)"
}

# now_ms: a monotonic-enough wall clock in milliseconds.
now_ms() { date +%s%3N; }

# rank_pid <tag> <rank>: the pid of the rill-demo process of rank <rank>
# whose environment has RILL_DIST_TEST_TAG=<tag> (so that other jobs on the
# machine are never touched); empty when none.
rank_pid() {
  local d
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = rill-demo ] || continue
    if tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "RILL_DIST_TEST_TAG=$1" &&
      tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "${d#/proc/}"
      return
    fi
  done
}

# dump_stacks <tag>: for a job that hangs, the stacks (gdb, where there is
# one) of its rill-demo processes: the threads in Rill's collectives, the
# trainer or MPI, in full in $WORK/stacks.<pid>.
dump_stacks() {
  command -v gdb >/dev/null || { echo "(no gdb: no stacks)"; return; }
  local d pid
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = rill-demo ] || continue
    tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "RILL_DIST_TEST_TAG=$1" || continue
    pid=${d#/proc/}
    echo "----- stacks of pid $pid ($(tr '\0' '\n' <"$d/environ" | grep OMPI_COMM_WORLD_RANK=)), in full in $WORK/stacks.$pid"
    timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' >"$WORK/stacks.$pid" 2>&1
    awk '/^Thread /{ if (keep) printf "%s", buf; buf = ""; keep = 0 }
         { buf = buf $0 "\n" }
         /mpi_collectives|Trainer|RunTrain|PMPI_|ompi_/{ keep = 1 }
         END { if (keep) printf "%s", buf }' "$WORK/stacks.$pid" | cut -c1-200
  done
}

# wait_for <file> <regex> <seconds>: until the file matches; 1 past the time.
wait_for() {
  local deadline=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# wait_pid <pid> <seconds>: until the background job ends; 1 past the time.
wait_pid() {
  local deadline=$(($(now_ms) + $2 * 1000))
  while kill -0 "$1" 2>/dev/null; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
  return 0
}

# result_accuracy <file>: test_accuracy of the RESULT line.
result_accuracy() {
  grep -Eo 'RESULT .*test_accuracy=[0-9.]+' "$1" | grep -Eo 'test_accuracy=[0-9.]+' | cut -d= -f2
}
