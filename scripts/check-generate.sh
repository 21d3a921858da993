#!/bin/sh
# Regenerate the BPF objects and fail if they differ from what is committed:
# the committed .o and .go must be exactly what bpf/*.bpf.c compiles to.
set -eu
cd "$(dirname "$0")/.."
if ! command -v clang >/dev/null 2>&1 || [ ! -f /usr/include/bpf/bpf_helpers.h ]; then
	if [ "${CI:-}" = true ]; then
		echo "check-generate: clang or libbpf-dev missing (apt-get install clang llvm libbpf-dev)" >&2
		exit 1
	fi
	echo "check-generate: SKIPPED: clang or libbpf-dev missing, cannot verify bpf/ is up to date" >&2
	exit 0
fi
go generate ./bpf
if ! git diff --quiet -- bpf/; then
	echo "check-generate: bpf/ differs after go generate; commit the regenerated files:" >&2
	git diff --stat -- bpf/ >&2
	exit 1
fi
echo "check-generate: bpf/ objects match their sources"
