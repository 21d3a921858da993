#!/bin/sh
# Regenerates the strace fixtures in this directory from real runs.
# Run from anywhere: sh internal/strace/testdata/regen.sh
# The options must match strace.Args (strace.go); *_default.strace use
# strace's default string escaping instead of -xx to cover that decoder.
# Output holds this machine's pids and paths; tests only rely on structure.
# Long runs are trimmed with sed so fixtures stay small.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && CGO_ENABLED=0 go build -o "$work/opener" ./internal/testprog/opener)
gcc -O2 -o "$work/spawnp" "$root/internal/testprog/csrc/spawnp.c"
gcc -nostdlib -static -O2 -o "$work/exitonly" "$root/internal/testprog/csrc/exitonly.c"

trace='trace=open,openat,openat2,creat,execve,execveat,clone,clone3,fork,vfork'
st() { out=$1; shift; strace -f -qq -s 65535 -xx -X raw -e "$trace" -e signal=none -o "$out" -- "$@"; }
st_default() { out=$1; shift; strace -f -qq -s 65535 -X raw -e "$trace" -e signal=none -o "$out" -- "$@"; }

cd "$work"
printf x >src
st "$here/env_path.strace" env PATH=/x1:/x2:/usr/bin true
st "$here/cp.strace" cp src dst
# Run the interpreter itself, not a wrapper script (pyenv shims fork a shell).
python=$(python3 -c 'import sys; print(sys.executable)')
st "$work/py.strace" "$python" -c 'import subprocess; subprocess.run(["true"])'
# Keep the exec of python, then everything from the spawn onwards.
{ head -n 1 "$work/py.strace"; sed -n '/vfork(\|clone(\|clone3(/,$p' "$work/py.strace"; } >"$here/python_subprocess.strace"

# A name with a quote-comma-quote, a parenthesis, a newline, ESC and a
# non-ASCII byte: everything a naive splitter or unescaper gets wrong.
odd=$(printf 'a", "b) c\nd\033e\303\251')
mkdir dir
printf x >"dir/$odd"
st "$here/odd_name.strace" ./opener "openat:dir/$odd" "openat2:dir/$odd" "dirfd:dir:$odd" "fail:dir/$odd.missing"
st_default "$here/odd_name_default.strace" ./opener "openat:dir/$odd" "fail:dir/$odd.missing"

st "$here/spawnp_fork.strace" env PATH=/x1:/x2:/usr/bin ./spawnp -fork true
st "$here/thread_exec.strace" ./opener threads:1:exec:./exitonly
# strace prints an exec from a non-leader thread either as
# "<pid changed to N ...>" (usual) or as "<unfinished ...>" followed by
# "+++ superseded by execve in pid T +++"; which one is a race, so retry
# until the second form shows up. Without -qq, to keep the exit lines too.
for _ in $(seq 1 100); do
	strace -f -s 65535 -X raw -e "$trace" -e signal=none -o "$work/te.strace" -- ./opener threads:1:exec:./exitonly
	if grep -q 'execve(.*<unfinished \.\.\.>' "$work/te.strace"; then
		cp "$work/te.strace" "$here/thread_exec_unfinished.strace"
		break
	fi
done
st "$here/opener_all.strace" ./opener open:src openat:src openat2:src creat:new opath:src \
	dirfd:.:src fail:missing repeat:2:openat:src threads:3:openat:src child:openat:src \
	execveat-empty:./exitonly
