#!/usr/bin/env bash
# check_exports.sh <expected C symbols> <rill library (.a or .so)> <plugin .so>...
#
# A run-time plugin exports its entry, RillPluginInit, and nothing else
# (built with hidden visibility, RILL_PLUGIN_EXPORT on the entry). Rill's
# own global C symbols (unmangled: callable through a C ABI) are listed in
# abi/exported_c_symbols.txt: adding or losing one fails here until the
# list is updated on purpose.
set -euo pipefail
expected="$1" library="$2"
shift 2
rc=0
for plugin in "$@"; do
  exports="$(nm -D --defined-only "$plugin" | awk '{print $NF}' \
    | grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort -u)"
  if [[ "$exports" != "RillPluginInit" ]]; then
    echo "abi.exports: $plugin exports more than RillPluginInit:" >&2
    echo "$exports" | sed 's/^/  /' >&2
    rc=1
  fi
done
# Global defined symbols that are not C++-mangled, and not the compiler's
# own (DW.ref.* personality references).
actual="$(nm --defined-only -g "$library" 2>/dev/null | awk 'NF == 3 {print $3}' \
  | grep -vE '^(_Z|DW\.ref\.)' | sort -u || true)"
if ! diff -u <(grep -vE '^(#|$)' "$expected" | sort -u) <(printf '%s\n' "$actual" | grep -v '^$'); then
  echo "abi.exports: $library's C symbols differ from $expected (above): a C symbol is part" \
    "of what outside code may link against; update the list if the change is meant" >&2
  rc=1
fi
[[ $rc -eq 0 ]] && echo "ok: plugins export RillPluginInit alone; C symbols of $(basename "$library") as listed"
exit $rc
