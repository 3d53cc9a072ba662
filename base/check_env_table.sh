#!/bin/sh
# check_env_table.sh <source root>
# Every RILL_* variable the sources read (with getenv or the table's readers
# EnvInt, EnvString, EnvBool, EnvSeconds, EnvBytes) has an entry in the
# table of settings (base/env_settings.cc), so that rill::ValidateEnvironment
# checks it and the unknown-variable warning does not name it.
root="$1"
table="$root/base/env_settings.cc"
status=0
for v in $(grep -rhoE '(getenv|Env(Int|String|Bool|Seconds|Bytes))\("RILL_[A-Z0-9_]+' --include='*.cc' --include='*.h' --include='*.cu' \
             --exclude-dir='build*' --exclude-dir=third_party --exclude-dir=.git "$root" |
           sed 's/^[A-Za-z]*("//' | sort -u); do
  if ! grep -q "{\"$v\"," "$table"; then
    echo "check_env_table: $v is read but has no entry in base/env_settings.cc"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "check_env_table: every RILL_* variable read is in the table"
exit "$status"
