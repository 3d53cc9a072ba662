#!/usr/bin/env bash
# Compiles every C++ snippet of README.md (syntax only), so the README
# cannot drift from the headers. Works from any directory.
#
#   scripts/readme_snippets.sh [-I DIR]... [FILE.md]
#
# Each ```cpp (or ```c++, ```cc) block becomes one translation unit,
# compiled with $CXX (default c++) -std=c++20 -fsyntax-only against the
# include folders given with -I (default: the source tree as include/rill;
# scripts/test.sh passes the installed include). What a block is, is said by an HTML
# comment before it (GitHub does not render it):
#
#   (no comment)                  a complete source file, compiled as is
#   <!-- snippet: body            statements: the block's #include lines stay
#   uint64_t n = 1024;            at file scope, the rest becomes the body of
#   -->                           `absl::Status RillSnippet()`, after the
#                                 comment's own lines (the declarations the
#                                 fragment assumes; `extern` ones are fine,
#                                 nothing runs)
#   <!-- snippet: skip reason --> not compiled
#
# Exits non-zero when a snippet does not compile, printing it with line
# numbers and the compiler's message.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INCLUDES=()
FILE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -I) INCLUDES+=(-I "$2"); shift 2 ;;
    -I*) INCLUDES+=("$1"); shift ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) FILE="$1"; shift ;;
  esac
done
FILE="${FILE:-$ROOT/README.md}"
CXX="${CXX:-c++}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Default: the source tree, reached as "rill/..." through a link.
if [[ ${#INCLUDES[@]} -eq 0 ]]; then
  mkdir -p "$WORK/include"
  ln -s "$ROOT" "$WORK/include/rill"
  INCLUDES=(-I "$WORK/include")
fi

# Split FILE into $WORK/snippet_<n>.cc, one per C++ block, and a manifest of
# "<n> <mode> <first line of the block in FILE>".
awk -v dir="$WORK" '
  function flush_prelude() { prelude = "" }
  BEGIN { n = 0; mode = "file"; in_comment = 0; in_block = 0; prelude = "" }
  in_block {
    if ($0 ~ /^```[ \t]*$/) {
      out = dir "/snippet_" n ".cc"
      if (mode == "body") {
        print hoisted > out
        print "#include \"absl/status/status.h\"" > out
        print "absl::Status RillSnippet() {" > out
        printf "%s", prelude > out
        printf "#line %d \"%s\"\n", start, file > out
        printf "%s", body > out
        print "  return absl::OkStatus();" > out
        print "}" > out
      } else {
        printf "#line %d \"%s\"\n", start, file > out
        printf "%s", body > out
      }
      close(out)
      print n, mode, start > (dir "/manifest")
      in_block = 0; mode = "file"; prelude = ""
      next
    }
    if (mode == "body" && $0 ~ /^[ \t]*#[ \t]*include/) { hoisted = hoisted $0 "\n"; body = body "\n" }
    else { body = body $0 "\n" }
    next
  }
  in_comment {
    line = $0
    if (index(line, "-->")) { line = substr(line, 1, index(line, "-->") - 1); in_comment = 0 }
    if (line ~ /^[ \t]*#[ \t]*include/) hoisted_prelude = hoisted_prelude line "\n"
    else prelude = prelude line "\n"
    next
  }
  /^<!--[ \t]*snippet:/ {
    line = $0
    sub(/^<!--[ \t]*snippet:[ \t]*/, "", line)
    split(line, words, /[ \t]+/)
    mode = words[1]
    sub(/-->.*/, "", mode)
    if (mode != "body" && mode != "skip" && mode != "file") {
      printf "%s:%d: unknown snippet mode \"%s\" (body, skip or file)\n", FILENAME, NR, mode > "/dev/stderr"
      exit 2
    }
    prelude = ""; hoisted_prelude = ""
    if (!index($0, "-->")) in_comment = 1
    next
  }
  /^```(cpp|c\+\+|cc)[ \t]*$/ {
    n++; in_block = 1; start = NR + 1; body = ""; hoisted = hoisted_prelude; hoisted_prelude = ""
    file = FILENAME
    next
  }
' "$FILE"

[[ -f "$WORK/manifest" ]] || { echo "readme_snippets: no C++ snippets in $FILE"; exit 0; }
fail=0 compiled=0 skipped=0
while read -r n mode start; do
  if [[ "$mode" == skip ]]; then
    skipped=$((skipped + 1))
    continue
  fi
  if "$CXX" -std=c++20 -fsyntax-only -Werror=return-type "${INCLUDES[@]}" -x c++ "$WORK/snippet_$n.cc" \
      >"$WORK/snippet_$n.log" 2>&1; then
    compiled=$((compiled + 1))
  else
    echo "readme_snippets: the C++ block at $FILE:$start ($mode) does not compile:" >&2
    cat -n "$WORK/snippet_$n.cc" >&2
    cat "$WORK/snippet_$n.log" >&2
    fail=1
  fi
done <"$WORK/manifest"
echo "readme_snippets: $compiled C++ snippet(s) of $(basename "$FILE") compile, $skipped skipped"
exit $fail
