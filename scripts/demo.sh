#!/bin/sh
# The demo until `once demo` exists: trace two bundled examples, one per
# kind of waste, and print the reports.
set -eu
ONCE=${1:-bin/once}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/sub"
i=0
while [ $i -lt 20 ]; do
	head -c 4096 /dev/urandom >"$tmp/src/file$i"
	i=$((i + 1))
done
echo data >"$tmp/src/sub/nested"
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c" "$tmp/d" "$tmp/e" "$tmp/f"

echo "== once run -- cp -r src dst   (the system's cp: how often does it open each source?)"
"$ONCE" run -- cp -r "$tmp/src" "$tmp/dst"
echo
echo "== once run -- env PATH=<6 empty dirs>:/usr/bin true   (execvp's PATH search)"
"$ONCE" run -- env "PATH=$tmp/a:$tmp/b:$tmp/c:$tmp/d:$tmp/e:$tmp/f:/usr/bin" true
