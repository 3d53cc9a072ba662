#!/bin/sh
# expect_cli.sh <exit status> <extended regex> <command> [args...]
# Runs the command and passes when it exits with that status and its stdout
# and stderr together match the regex (grep -E). For the tools' ctest tests
# of command-line handling.
want_rc="$1"; pattern="$2"; shift 2
out="$("$@" 2>&1)"
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want_rc" ]; then
  echo "expect_cli: exit status $rc, expected $want_rc" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | tr '\n' ' ' | grep -Eq -- "$pattern"; then
  echo "expect_cli: output does not match: $pattern" >&2
  exit 1
fi
