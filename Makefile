# once: the targets a newcomer would guess.
#   make            build bin/once and the bundled references (refcp, refmv, reflaunch, dupcopy)
#   make demo       once demo: the references against the system's tools (needs root)
#   make test       vet, unit and BPF integration tests (BPF tests need root)
#   make generate   rebuild the BPF objects from bpf/*.bpf.c (needs clang)
#   make fuzz       run the fuzz targets for longer
#   make lint       staticcheck (fetched through the Go module proxy)
#   make bench      what tracing costs the traced programs (root, ~18 minutes)

GO      ?= go
BIN     := bin
FUZZTIME ?= 30s

.PHONY: all build demo test unit vet check-generate generate fuzz clean lint help

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

all: build

# The references ship beside once: once compare and once demo look there.
# once itself is linked statically (pure-Go user and DNS lookups): no
# dynamic loader at each start, 1 ms of its start-up.
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...
	$(GO) build -tags osusergo,netgo -o $(BIN)/ ./cmd/once

demo: build
	$(BIN)/once demo

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# The BPF integration tests load programs into the kernel: run as root.
# With CI=true a test that would skip (not root, no strace) fails instead.
# -p 1: packages run one at a time, so system-wide tests and the BPF leak
# checks see no other package's tracer. internal/testsum prints go test's
# usual output, and each skipped test on a line of its own
# ("SKIP pkg TestName: reason"), which go test alone hides without -v.
test: vet check-generate
	$(GO) run ./internal/testsum -- $(GO) test -json -count=1 -p 1 -timeout 15m ./...

check-generate:
	@./scripts/check-generate.sh

generate:
	@command -v clang >/dev/null || { echo "make generate needs clang (Debian: apt-get install clang llvm libbpf-dev)"; exit 1; }
	@test -f /usr/include/bpf/bpf_helpers.h || { echo "make generate needs libbpf headers (Debian: apt-get install libbpf-dev)"; exit 1; }
	$(GO) generate ./bpf

fuzz:
	$(GO) test ./collector -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./report -run '^$$' -fuzz '^FuzzEscape$$' -fuzztime $(FUZZTIME)
	$(GO) test ./report -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME)
	$(GO) test ./report -run '^$$' -fuzz '^FuzzCompareRender$$' -fuzztime $(FUZZTIME)
	$(GO) test ./metrics -run '^$$' -fuzz '^FuzzCommLabel$$' -fuzztime $(FUZZTIME)

clean:
	rm -rf $(BIN)

lint:
	$(GO) run $(STATICCHECK) ./...

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

# make bench: what tracing costs the traced programs, once against the
# floor, strace, bpftrace and libbpf-tools (root, about 18 minutes).
# Prints the table and writes bench/results/latest.md and latest.json.
# make bench-deps installs the tools it compares against (Debian).
.PHONY: bench bench-deps

bench: build
	$(GO) run ./bench -bin $(BIN) -out bench/results

bench-deps:
	apt-get install -y strace bpftrace libbpf-tools hyperfine

# make reliability: the hostile-input, overload, churn, fault and leak tests
# (root), then a table of what each tried, saw and lost. They are ordinary
# tests, so make test runs them too; this target runs only them, verbosely.
RELIABILITY_TESTS := TestUnprivilegedFlood|TestWatchOutputFileGuards|TestWatchOutputAfterUncleanStop|TestWatchScreenInTmux|TestCommandExecFails|TestHostileNames|TestArgvTruncated|TestLossIsCounted|TestWatchFlood|TestWatchFloodRings|TestCheckFlood|TestWatchChurn|TestFault.*|TestMissingTracepoint|TestAttachFailureReleasesEverything|TestLoadFailureReleasesEverything|TestCloseReleasesEverything|TestPanicReleasesBPF|TestRunLeavesNothingAttached|TestWatchLeavesNothingAttached|TestTwoInstances|TestPrivilegeDrop|TestRunTimeout|TestRedactArgs|TestWatchSoak|TestInternalNames|TestLinkCacheDistrust|TestOutputGuards|TestCPUProfileGuards|TestComparePrivilegeDrop|TestWatchReaderStall|TestWatchFullDisk|TestRunEventsOnFullDisk|TestStacksHostileFiles|TestUnprivilegedChurn|TestStacksFIFOAtOwnPath|TestStacksMountNamespace|TestDebugLinkHostile|TestSinkBoundedWithoutCollector|TestWatchOTLPNoCollector
.PHONY: reliability

SOAK ?= 10m
CHURN ?= 3m
reliability:
	ONCE_SOAK=$(SOAK) ONCE_CHURN=$(CHURN) $(GO) run ./internal/reltest/reltable -- $(GO) test -count=1 -p 1 -v -timeout 30m -run '^($(RELIABILITY_TESTS))$$' ./collector ./cmd/once ./stack ./otlp
