#!/bin/sh
# AFTER: the same guard with once: by device and inode (any spelling or link
# counts), per process, every open syscall, and it fails when the command
# fails, when the file doesn't exist, when nothing was traced or events
# were lost.
set -eu
CP=${CP:-cp}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'data\n' >"$tmp/src"
once check --opens "$tmp/src=1" -- $CP "$tmp/src" "$tmp/dst"

echo ok
