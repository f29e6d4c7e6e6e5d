# Switchyard: two-tier router for LLM inference traffic.
#
#   make run       the local stack (simulated GPU servers; see README)
#   make test      the generated-code check and the unit and integration tests with the race
#                  detector (fuzz targets on their seed corpus); ends with the time per package
#   make chromium  Debian's chromium for the browser tests (tests/browser), installed when missing
#   make screenshots  the browser tests, rewriting the screenshots under docs/img/
#   make test-e2e  the end-to-end suites left out of `make test` (many processes, long scenarios)
#   make fuzz      every fuzz target for FUZZTIME (default 30s) each
#   make bench     Go benchmarks and the routing-quality benchmarks
#   make bench-scale  the gossip/router scale sweep (docs/scale.md), bounded by SCALE_MAX_DURATION
#   make pgo-profile  regenerate cluster-gateway's profile-guided-optimisation profile (default.pgo)
#   make soak      10 minutes of load on the local stack; fails if a heap or goroutine count grows (not in CI)
#   make generate  regenerate protobuf code, the docs' flags tables and the import graphs in docs/architecture.md (committed)
#   make fmt       format every module with `golangci-lint fmt` (gofmt, and golines at 120 characters)
#   make lint      that formatter leaves no diff (lines of at most 120 characters: lll), go vet,
#                  golangci-lint, and go mod tidy and generate leave no diff

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

MODULES := contract proto gossip telemetry cluster-gateway global-router tests
GO      ?= go
BIN     := $(CURDIR)/.bin
export PATH := $(BIN):$(PATH)

# Tool versions, pinned. Tools are built from source with `go install` (no prebuilt downloads).
BUF_VERSION                := v1.75.0
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
PROTOC_GEN_CONNECT_VERSION := v1.21.1
GOLANGCI_LINT_VERSION      := v2.15.0

# TEST_FLAGS may add e.g. -count=1 or -run=...; TEST_TIMEOUT bounds each package's run.
TEST_FLAGS   ?=
TEST_TIMEOUT ?= 15m
BENCH        ?= .
BENCHTIME    ?= 1s
# Fuzzing (scripts/fuzz.sh): `make fuzz` fuzzes each target for FUZZTIME, starting no target after
# FUZZ_BUDGET seconds (0: no limit). `make test` runs every fuzz target on its seed corpus only.
FUZZTIME    ?= 30s
FUZZ_BUDGET ?= 0

PKGS := $(addsuffix /...,$(addprefix ./,$(MODULES)))

# End-to-end: tests that start many processes or run long scenarios. `make test` leaves out the
# packages in E2E_ONLY (nothing else in them) and skips the tests marked with harness.EndToEnd in
# the others (SWITCHYARD_E2E=0); `make test-e2e` runs E2E_PKGS, where every such test lives.
E2E_ONLY := tests/e2e
E2E_PKGS := ./tests/e2e/... ./tests/bench/...
TEST_PKGS := $(filter-out ./tests/...,$(PKGS)) \
	$(patsubst %/,./%/...,$(filter-out $(addsuffix /,$(E2E_ONLY)),$(wildcard tests/*/)))

# The binaries the tests start (tests/harness), built once per run with the race detector: they
# share the packages the race-enabled test binaries compile, and the detector watches them too.
TEST_BIN      := $(BIN)/race
TEST_BINARIES := ./cluster-gateway/cmd/cluster-gateway ./global-router/cmd/global-router \
	./global-router/cmd/switchyardctl ./tests/cmd/modelsim ./tests/cmd/loadgen
# TEST_P is how many packages go test builds or runs at once (go test -p). It is more than the
# cores: many tests wait on timers, sockets and child processes, and a package that runs for a
# minute would otherwise hold one of the two slots of a 2-core machine while the rest compile.
TEST_P        ?= 4
GO_TEST_RACE   = SWITCHYARD_BIN_DIR=$(TEST_BIN) $(GO) test -race -json -p=$(TEST_P) -timeout=$(TEST_TIMEOUT) $(TEST_FLAGS)

.PHONY: all build run chromium screenshots pgo-profile bench-scale bench-routing bench-traces test test-packages test-e2e test-binaries test-short bench generate generate-graph check-generate lint tidy tools fmt fuzz clean

all: test

BINARIES := ./cluster-gateway/cmd/cluster-gateway ./global-router/cmd/global-router \
	./global-router/cmd/switchyardctl ./tests/cmd/modelsim ./tests/cmd/loadgen ./tests/cmd/devstack

## build: every binary into .bin/
build:
	$(GO) build -o $(BIN)/ $(BINARIES)

## run: the local stack on fixed ports (Ctrl-C stops it)
run: build
	$(BIN)/devstack --config=deploy/local/devstack.yaml --data-dir=.devstack --bin-dir=$(BIN)

## test: the generated-code check and every test but the end-to-end ones, with -race; the time per
## package at the end (tests/cmd/testtime), then go test's result lines. The check (its tools are
## built from source on a fresh clone) runs beside the tests; either failing fails the target.
test: $(BIN)/testtime
	@$(MAKE) --no-print-directory -j2 check-generate test-packages

test-packages: test-binaries chromium
	SWITCHYARD_E2E=0 $(GO_TEST_RACE) $(TEST_PKGS) | $(BIN)/testtime

## test-e2e: the end-to-end suites (real binaries, fault injection, routing benchmarks' smoke runs)
test-e2e: test-binaries $(BIN)/testtime
	cd global-router && $(GO) build -race -o $(TEST_BIN)/etcd go.etcd.io/etcd/server/v3
	$(GO_TEST_RACE) $(E2E_PKGS) | $(BIN)/testtime

## chromium: a Chromium for the browser tests (tests/browser drives the router's capacity map in
## it), Debian's package installed with apt-get when none is on PATH or in SWITCHYARD_CHROMIUM;
## without apt-get the browser tests skip, saying so
CHROMIUM_BINS := chromium chromium-browser google-chrome google-chrome-stable
chromium:
	@if [ -n "$${SWITCHYARD_CHROMIUM:-}" ]; then exit 0; fi; \
	for b in $(CHROMIUM_BINS); do if command -v $$b >/dev/null; then exit 0; fi; done; \
	if command -v apt-get >/dev/null; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; \
	else echo "chromium: none found and no apt-get; the browser tests will skip (set SWITCHYARD_CHROMIUM)"; fi

## screenshots: the browser tests, writing their screenshots to docs/img/ (commit them)
screenshots: chromium
	SWITCHYARD_UPDATE_SCREENSHOTS=1 $(GO) test -count=1 -run='^TestCapacityMapInBrowser$$' ./tests/browser/

## test-binaries: what the tests start, race-enabled, into .bin/race/
test-binaries:
	$(GO) build -race -o $(TEST_BIN)/ $(TEST_BINARIES)

# Always rebuilt (go build is a no-op when nothing changed).
.PHONY: $(BIN)/testtime
$(BIN)/testtime:
	$(GO) build -o $@ ./tests/cmd/testtime

test-short:
	$(GO) test -short -timeout=$(TEST_TIMEOUT) $(TEST_FLAGS) $(PKGS)

## bench: Go benchmarks across modules (figures in the README come from here and tests/bench)
bench:
	$(GO) test -run='^$$' -bench='$(BENCH)' -benchtime=$(BENCHTIME) -benchmem $(PKGS)

## pgo-profile: regenerate the CPU profile that `go build` optimises the cluster-gateway binary
## with (PGO: the toolchain uses a main package's default.pgo by itself, so make build, the
## Dockerfile and CI's test binaries pick it up). It merges CPU profiles of the scheduling
## benchmark at 100 and 1,000 endpoints (both shipped profiles), the HTTP proxy's request path
## and the ext_proc decision, each benchmark run for PGO_BENCHTIME. Regenerate after large
## changes to the hot paths and commit the result (docs/scheduling.md#measurements).
PGO_PROFILE   := cluster-gateway/cmd/cluster-gateway/default.pgo
PGO_BENCHTIME ?= 5s
pgo-profile:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; cd cluster-gateway; \
	  $(GO) test -run='^$$' -bench='^BenchmarkSchedule$$/./endpoints=(100|1000)$$' -benchtime=$(PGO_BENCHTIME) \
	    -cpuprofile=$$tmp/schedule.prof -o $$tmp/scheduling.test ./internal/scheduling/; \
	  $(GO) test -run='^$$' -bench='^BenchmarkProxy(Overhead|Body)$$/^(gateway|[0-9]+KiB)$$' -benchtime=$(PGO_BENCHTIME) \
	    -cpuprofile=$$tmp/proxy.prof -o $$tmp/proxy.test ./internal/proxy/; \
	  $(GO) test -run='^$$' -bench='^BenchmarkDecision100KB$$' -benchtime=$(PGO_BENCHTIME) \
	    -cpuprofile=$$tmp/extproc.prof -o $$tmp/extproc.test ./internal/extproc/; \
	  $(GO) tool pprof -proto $$tmp/schedule.prof $$tmp/proxy.prof $$tmp/extproc.prof > $(CURDIR)/$(PGO_PROFILE)
	@echo "wrote $(PGO_PROFILE)"

## bench-scale: the scale sweep (docs/scale.md): pools of SCALE_NODES simulated gateways and a few
## routers as real gossip nodes in one process over an in-memory network, each size N time-dilated
## by N/SCALE_DILATE_PER (at least 1) so that it fits the CPU, then the router's at-scale Go benchmarks; writes
## the table, results.json and PNG curves into SCALE_OUT. Progress goes to stderr; no pool size
## starts after SCALE_MAX_DURATION and each is cut at SCALE_PER_N_TIMEOUT (the table says where).
## SCALE_FLAGS adds flags, e.g. SCALE_FLAGS="--timings=wan --busy=0.5".
SCALE_NODES         ?= 10,30,100,300,1000
SCALE_DILATE_PER    ?= 100
SCALE_MAX_DURATION  ?= 60m
SCALE_PER_N_TIMEOUT ?= 25m
SCALE_OUT           ?= scale-results
SCALE_FLAGS         ?=
bench-scale:
	$(GO) run ./tests/cmd/scale --nodes=$(SCALE_NODES) --dilate-per=$(SCALE_DILATE_PER) \
	  --max-duration=$(SCALE_MAX_DURATION) \
	  --per-n-timeout=$(SCALE_PER_N_TIMEOUT) --out=$(SCALE_OUT) $(SCALE_FLAGS)

## bench-routing: routing quality (docs/benchmarks.md): the Tier 1 load sweep (every scenario at
## loads 0.3-0.9 of fleet capacity, 5 report seeds, 95% CIs, plots, weight sensitivity; resumable),
## then the Tier 2 scenarios once each. QUICK=1 runs the quick sweep only (2 seeds, 2 loads, 5 s;
## about 10 minutes on 2 cores). SWEEP_FLAGS adds flags, e.g. SWEEP_FLAGS="--seeds=10 --resume=false".
TIER2_SCENARIOS ?= region-burst region-burst-overload
BENCH_DURATION  ?= 60s
BENCH_OUT       ?= bench-results
SWEEP_FLAGS     ?=
bench-routing: build
	$(GO) run ./tests/cmd/bench --sweep $(if $(QUICK),--quick) --out=$(BENCH_OUT) --bin-dir=$(BIN) $(SWEEP_FLAGS)
	$(if $(QUICK),,for s in $(TIER2_SCENARIOS); do $(GO) run ./tests/cmd/bench --scenario=$$s --duration=$(BENCH_DURATION) --out=$(BENCH_OUT) --bin-dir=$(BIN) || exit 1; done)

## bench-traces: the trace-replay scenarios (docs/loadgen.md); the traces are not in the repository:
## TRACE_DIR holds them (default ../shared/traces); QUICK=1 runs each scenario's short window
TRACE_SCENARIOS ?= trace-conversation trace-azure-conv
TRACE_DIR       ?= ../shared/traces
QUICK           ?=
bench-traces: build
	for s in $(TRACE_SCENARIOS); do $(GO) run ./tests/cmd/bench --scenario=$$s --trace-dir=$(TRACE_DIR) $(if $(QUICK),--quick) --out=$(BENCH_OUT) --bin-dir=$(BIN) || exit 1; done

## soak: SOAK_DURATION of load on the local stack (free ports), sampling every gateway's and router's
## heap and goroutines; fails on growth (docs/reliability.md). Not part of `make test`.
## SOAK_FLAGS adds flags, e.g. SOAK_FLAGS="--profile-dir=soak-profiles --samples=soak.csv".
SOAK_DURATION ?= 10m
SOAK_FLAGS    ?=
.PHONY: soak
soak: build
	$(GO) run ./tests/cmd/soak --config=deploy/local/devstack.yaml --duration=$(SOAK_DURATION) --bin-dir=$(BIN) $(SOAK_FLAGS)

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@GO="$(GO)" FUZZTIME=$(FUZZTIME) FUZZ_BUDGET=$(FUZZ_BUDGET) ./scripts/fuzz.sh $(MODULES)

tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-connect-go

$(BIN)/buf: Makefile
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	@touch $@
$(BIN)/protoc-gen-go: Makefile
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@touch $@
$(BIN)/protoc-gen-go-grpc: Makefile
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	@touch $@
$(BIN)/protoc-gen-connect-go: Makefile
	GOBIN=$(BIN) $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_VERSION)
	@touch $@
$(BIN)/golangci-lint: Makefile
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@touch $@

# FLAGS_DOCS are the binaries' app packages whose TestFlagsDocUpToDate checks, and with
# -update-docs rewrites, the flags table of their doc page (docs/gateway.md, docs/router.md),
# generated from their Config struct.
FLAGS_DOCS := cluster-gateway global-router

## generate: regenerate protobuf Go code under proto/gen, the flags tables of docs/gateway.md
## and docs/router.md, and the import graphs in docs/architecture.md
generate: tools generate-graph
	cd proto && rm -rf gen && buf lint && buf generate
	for m in $(FLAGS_DOCS); do (cd $$m && $(GO) test -count=1 -run='^TestFlagsDocUpToDate$$' ./internal/app -update-docs) || exit 1; done

## generate-graph: the import graphs in docs/architecture.md, from `go list` (needs no tools)
generate-graph:
	$(GO) run ./tests/cmd/importgraph

## check-generate: fail when regenerating would change the generated code, the docs' flags
## tables or the import graphs in the tree
check-generate: tools
	@$(GO) run ./tests/cmd/importgraph --check
	@for m in $(FLAGS_DOCS); do (cd $$m && $(GO) test -count=1 -run='^TestFlagsDocUpToDate$$' ./internal/app >/dev/null) || \
	  { echo "the flags table generated from $$m's Config is out of date; run 'make generate' and commit"; exit 1; }; done
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  (cd proto && buf lint && buf generate -o $$tmp); \
	  mkdir -p $$tmp/gen proto/gen; \
	  if ! diff -r $$tmp/gen proto/gen >/dev/null; then \
	    echo "generated code is out of date; run 'make generate' and commit:"; \
	    diff -rq $$tmp/gen proto/gen || true; exit 1; fi

## tidy: go mod tidy in every module
tidy:
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

## lint: the formatter of `make fmt` leaves no diff, vet, golangci-lint, tidy and generate leave no diff
lint: $(BIN)/golangci-lint check-generate
	@for m in $(MODULES); do (cd $$m && golangci-lint fmt --diff ./...) || { echo "$$m: run make fmt"; exit 1; }; done
	$(GO) vet $(PKGS)
	@for m in $(MODULES); do (cd $$m && golangci-lint run ./...); done
	@$(MAKE) --no-print-directory tidy
	@if [ -n "$$(git status --porcelain -- '*/go.mod' '*/go.sum')" ]; then echo "go mod tidy changed:"; git status --porcelain -- '*/go.mod' '*/go.sum'; exit 1; fi

## fmt: the formatters of .golangci.yml (gofmt, golines at 120 characters) over every module; lint checks the same
fmt: $(BIN)/golangci-lint
	@for m in $(MODULES); do (cd $$m && golangci-lint fmt ./...); done

clean:
	rm -rf .devstack
