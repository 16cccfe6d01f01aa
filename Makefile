# rdmabench: `make setup` once, then `make test`, `make demo`, `make parity`.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/rdmabench
ROUNDS  ?= 5
ROUNDS_NOISE ?= 8
METRICS ?= .
POST_API ?= auto
SOAK_CLIENTS ?= 200
SOAK_GARBAGE ?= 20
# Packages that do not need cgo: they are also tested with CGO_ENABLED=0.
PURE    := ./hunt/... ./result/... ./oob/... ./report/... ./verbs/... ./sweep/... ./profiles/... ./rdma/... ./examples/... ./counters/... ./doctor/... ./mrbench/... ./internal/...

# Debian packages for building (cgo + libibverbs), for perftest comparisons, and for
# the Soft-RoCE test bed (qemu, busybox, cpio, kmod for depmod, iproute2 for `rdma`).
DEB := gcc libc6-dev pkg-config libibverbs-dev ibverbs-providers rdma-core ibverbs-utils perftest chromium openmpi-bin \
       qemu-system-x86 busybox-static cpio kmod iproute2

.PHONY: all build setup test vet unit docs fuzz fuzz-short browser e2e demo scenarios parity interop hw-check hw-check-bed hunt bed-noise search-acceptance soak clean vm-shell

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rdmabench

setup:
	@command -v $(GO) >/dev/null || { echo "setup: Go 1.26 is needed and not on PATH (https://go.dev/dl; Debian 12's golang is too old)"; exit 1; }
	@missing=$$(for p in $(DEB); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "setup: installing" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "setup: Debian packages present"; fi
	@test/rxevm/kernel.sh >/dev/null && echo "setup: test-bed kernel in $$(test/rxevm/kernel.sh)"
	$(GO) mod download

test: vet unit fuzz-short browser e2e

vet:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e
	@bad=$$(gofmt -l .); [ -z "$$bad" ] || { echo "gofmt needed: $$bad"; exit 1; }
	@for f in test/*.sh test/rxevm/*.sh test/e2e/*.sh .ci/run; do bash -n "$$f" || exit 1; done

# Without cgo, bench and its ops run on the fake engine: their statement coverage must
# stay at COVER_MIN% or more (the client and server state machines are tested there).
COVER_MIN ?= 70
unit:
	$(GO) test -count=1 ./...
	$(GO) test -race -count=1 ./rdma/... ./bench/... ./examples/...
	CGO_ENABLED=0 $(GO) test -count=1 $(PURE) ./cmd/...
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) test -count=1 -cover ./bench/... > bin/cover.txt || { cat bin/cover.txt; exit 1; }
	@cat bin/cover.txt
	@awk -v min=$(COVER_MIN) '/coverage:/ && $$1 == "ok" { sub("%", "", $$5); if ($$5 + 0 < min) { print "coverage of " $$2 " is " $$5 "%, below " min "%"; bad = 1 } } END { exit bad }' bin/cover.txt

# docs/cli.md, the command-line reference, generated from the cobra commands' help;
# docs/schemas/, the JSON Schemas of what the CLI writes besides results, generated from
# their types; docs/usage.md's perftest flag map and refused flags, from compat.go's
# tables; and the generated sections of docs/architecture.md (the import lists, their
# picture and the dependency rules, from go list and internal/arrows' rules): run it
# after changing a command, a flag, a help text, such a type, those tables or an import,
# and commit them. unit's TestCLIDocs, TestJSONSchemas, TestPerftestFlagMapDocs and
# TestArchitectureDocs fail while one is stale, and so does CI.
docs:
	$(GO) test -count=1 -run '^(TestCLIDocs|TestJSONSchemas|TestPerftestFlagMapDocs)$$' ./cmd/rdmabench -update
	$(GO) test -count=1 -run '^TestArchitectureDocs$$' ./internal/arrows -update

# The HTML report in a real browser: headless Chromium renders the demo fixture's page.
browser:
	$(GO) test -tags browser -count=1 -run Browser ./report/html/

# Go native fuzz targets (hostile peers and files: the frame decoder, plans, every
# results reader with report show's, the fleet's records, a sweep's stream, a perftest
# peer's messages), FUZZTIME each; fuzz-short: 150,000
# inputs each (10-20 s here). fuzz-short counts inputs rather than seconds: with a duration,
# Go 1.26's fuzz coordinator can report "context deadline exceeded" at the deadline under
# CPU load, without any failing input (go.dev/issue/75804, fixed in Go 1.27); a count has
# no deadline to race. A failing input is written to PKG/testdata/fuzz/FuzzX/: keep it, it
# becomes a regression test.
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRecv$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./oob
	$(GO) test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./bench
	$(GO) test -run '^$$' -fuzz '^FuzzShow$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./report
	$(GO) test -run '^$$' -fuzz '^FuzzFleetRecords$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./fleet/pairs
	$(GO) test -run '^$$' -fuzz '^FuzzStream$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./sweep
	$(GO) test -run '^$$' -fuzz '^FuzzPeerMessages$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./oob/perftest

fuzz-short:
	$(MAKE) --no-print-directory fuzz FUZZTIME=150000x

e2e: build
	$(GO) test -c -tags e2e -o bin/e2e.test ./test/e2e
	$(GO) build -o bin/examples/ ./examples/...
	test/e2e/run.sh

# A WRITE/READ sweep on Soft-RoCE (in the test bed when the host has no RDMA device).
demo: build
	test/demo.sh

# The article's scenarios (C2 registration cost, C5 fan-out / fan-in) in one test-bed boot.
scenarios: build
	test/rxevm/run test/scenarios.sh

# rdmabench hunt in one test-bed boot (rxe1 -> rxe0): HUNT_BUDGET of search, then each
# finding's reproducer run again (test/hunt.sh); about HUNT_BUDGET + 3 minutes.
HUNT_BUDGET ?= 11m
hunt: build
	VM_TIMEOUT=1500 test/rxevm/run test/hunt.sh $(HUNT_BUDGET)

# rdmabench against perftest, alternating, in two test-bed boots: bandwidth and message
# rate on the virtual clock (runs repeat within 0.5%), latency on the real clock (a
# ping-pong needs two spinning CPUs; on the virtual bed's one it waits for the scheduler's
# tick); METRICS=rate (a regular expression) runs only the metrics it matches.
parity: build
	VM_CLOCK=virtual test/rxevm/run test/parity.sh $(ROUNDS) '$(METRICS)' $(POST_API) '_lat_'
	VM_CLOCK=real test/rxevm/run test/parity.sh $(ROUNDS) '$(METRICS)' $(POST_API) '_bw_|_rate_'

# rdmabench and perftest on the two ends of one link, every pairing, perftest's four
# tests, in one test-bed boot (test/interop.sh): ROUNDS rounds, 3 by default; ONLY=rate runs the tests whose name holds it.
interop: build
	test/rxevm/run test/interop.sh $(ROUNDS) $(ONLY)

# The one command a user with two RDMA hosts runs first, on the client host: doctor on both,
# parity with perftest (goals 1.00), a short WRITE/READ sweep, a counters run; one verdict
# line per check, exit 1 if one failed, and one bundle to send back (OUT and OUT.tar.gz,
# default out/hw-check-DATE). The server host is reached through SSH (default 'ssh
# SERVER'; local: this host). test/hw-check.sh --help; docs/testing.md.
#   make hw-check SERVER=host-a SERVER_DEV=mlx5_0 CLIENT_DEV=mlx5_0 [SSH='ssh me@host-a'] [OUT=dir]
#     [SERVER_IB_PORT=1 CLIENT_IB_PORT=1] [PARITY_S=2 PARITY_GOAL=0.97]
# hw-check-bed: the same in one test-bed boot, rxe0 and rxe1 standing in for the two hosts
# (ROUNDS=3 unless given, a 40 s sweep per operation, out/hw-check-bed; about 10 minutes).
hw-check: build
	SERVER='$(SERVER)' SERVER_DEV='$(SERVER_DEV)' CLIENT_DEV='$(CLIENT_DEV)' SSH='$(SSH)' OUT='$(OUT)' ROUNDS='$(ROUNDS)' \
		POST_API='$(POST_API)' SERVER_IB_PORT='$(SERVER_IB_PORT)' CLIENT_IB_PORT='$(CLIENT_IB_PORT)' \
		PARITY_S='$(PARITY_S)' PARITY_GOAL='$(PARITY_GOAL)' test/hw-check.sh

hw-check-bed: build
	test/hw-check.sh --bed

# The default (descent) search against the full grid of the rxe profile, one test-bed
# boot per operation (test/search-acceptance.sh): descent's best within 2% of the grid's
# with at most 25% of its points. ACC_BUDGET per search; any wall time it needs, about
# 25-30 minutes an operation at 9m. Results in out/acc/OP.
ACC_OPS ?= write read
ACC_BUDGET ?= 9m
search-acceptance: build
	mkdir -p out/acc
	rc=0; for op in $(ACC_OPS); do VM_RW=$(CURDIR)/out/acc VM_TIMEOUT=3600 test/rxevm/run test/search-acceptance.sh $$op $(ACC_BUDGET) || rc=1; done; exit $$rc

# How noisy and how slow the test bed is on this host (perftest with and without RPS on
# the veths; rdmabench's run-to-run noise and wall time per point length), in one boot.
bed-noise: build
	test/bed-noise.sh $(ROUNDS_NOISE)

# One server, 200 sequential clients and 20 garbage connections at a time, in the test
# bed: fds and RDMA resources must be back to where they were (minutes).
soak: build
	test/rxevm/run test/soak.sh $(SOAK_CLIENTS) $(SOAK_GARBAGE)

vm-shell:
	test/rxevm/run --shell

clean:
	rm -rf bin out
