#!/bin/sh
# BEFORE: assert that a copy opens its source exactly once, with strace.
# Fragile: it matches the path string (a hard link or a relative spelling
# escapes it), and an openat-only filter would pass vacuously on code that
# calls open(2).
set -eu
CP=${CP:-cp}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'data\n' >"$tmp/src"
strace -f -qq -e trace=open,openat,openat2,creat -o "$tmp/trace" $CP "$tmp/src" "$tmp/dst"
n=$(grep -c "\"$tmp/src\", O_RDONLY" "$tmp/trace" || true)
[ "$n" -eq 1 ] || { echo "opened the source $n times, expected 1" >&2; exit 1; }
echo ok
