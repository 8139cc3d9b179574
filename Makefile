# geoshard — build, test, benchmark, lint.
GO ?= go
REAL := deploy/local/real.sh

.PHONY: build suites test test-chaos test-chaos-ci test-fast test-stress test-real test-real-2.19 test-cluster bench bench-real real-up real-exports real-down lint fixtures fuzz image bench-soak bench-peer bench-versions

build:
	$(GO) build ./...

# The lint (make lint), then every suite: the in-process engines, then —
# where Java and Maven are present — the same suites against a real
# OpenSearch 3.9 node and Kafka broker that test-real brings up on loopback
# and down again, then those of the 2.x line against a 2.19 node
# (test-real-2.19), then the cluster suite on three nodes and three brokers
# (test-cluster), whose killed processes stay down TEST_FAULT_DOWN. Between
# the in-process and the real engines, the explorer's bounded run
# (test-chaos-ci).
#
# Each suite runs under bin/suites (internal/suites), which fails the run
# unless every package with tests under its patterns ran at least one test
# and passed: a package left out, a -run that matches nothing or a build
# that failed is a failure, never a quiet pass. Each closes with a line
# "suites: N passed, N failed, N skipped, in T".
TEST_FAULT_DOWN ?= 20s
test: lint test-fast test-chaos-ci test-real test-real-2.19
	@$(MAKE) --no-print-directory test-cluster FAULT_DOWN=$(TEST_FAULT_DOWN) FAULT_RUN=TestFault

SUITES := bin/suites
suites:
	@$(GO) build -o $(SUITES) ./internal/suites/cmd/suites

# Every package against the in-process engines, with the race detector.
test-fast: suites
	@$(SUITES) -allow-skips -gotest '-race -count=1 -timeout 30m' ./...

# The fast suites ROUNDS times while a busy loop holds every core, so that
# a test that passes only on an idle machine (a sleep to prove something
# did not happen, a wall-clock bound) fails here; STRESS_PKGS narrows the
# packages. It names each failing round's packages and tests. Not part of
# test.
ROUNDS ?= 3
STRESS_PKGS ?= ./...
test-stress:
	@deploy/local/stress.sh '$(ROUNDS)' $(GO) test -race -count=1 -timeout 30m $(STRESS_PKGS)

# The packages whose tests can run against the real engines: those that
# import internal/realenv.
REAL_PKGS = $(shell $(GO) list -tags realcluster -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep 'internal/realenv' | cut -d' ' -f1)

# The OpenSearch lines the suites run on (deploy/local/real.sh): test-real
# and test-cluster on OPENSEARCH_VERSION, the newest tested; test-real-2.19
# on OPENSEARCH_2, the 2.x line's.
OPENSEARCH_VERSION ?= 3.9.0
OPENSEARCH_2 ?= 2.19.6

# One package at a time (-p 1): the suites share one node and one broker.
test-real: suites
	@OPENSEARCH_VERSION=$(OPENSEARCH_VERSION) $(REAL) run $(SUITES) -tags realcluster -allow-skips -gotest '-p 1 -count=1 -timeout 30m' $(REAL_PKGS)

# The 2.x line stays supported: against a 2.19 node, the emulator's
# conformance, the node's version (internal/realenv), the bulk writer,
# search, the reshard and its command, and the end-to-end suite.
REAL_2_PKGS := ./internal/realenv ./internal/osfake ./bulk ./search ./migrate ./cmd/reshard ./internal/e2e
test-real-2.19: suites
	@OPENSEARCH_VERSION=$(OPENSEARCH_2) $(REAL) run $(SUITES) -tags realcluster -allow-skips -gotest '-p 1 -count=1 -timeout 30m' $(REAL_2_PKGS)

# The cluster suite, on a three-node OpenSearch cluster (one replica) and
# three Kafka brokers (three replicas, two in sync) — real.sh's cluster
# profile, in a directory and on ports of its own, brought up and down
# again: the cluster handle's own tests, the emulator's conformance tests
# (where a cluster answers otherwise than one node), the bulk writer's
# answers lost after the cluster applied them, and the fault suite: nodes
# killed, frozen and restarted one by one, the busiest broker killed, a
# node lost in the middle of a reshard's backfill, each judged against the
# event log and the group's commits; and the same reshard with no fault,
# for its duration beside the fault's. FAULT_DOWN is how long a killed
# process stays down (make test: TEST_FAULT_DOWN), FAULT_RUN which of
# internal/e2e's tests run (make test: the faults only).
CLUSTER_DIR ?= $(CURDIR)/.real-cluster
FAULT_DOWN ?= 60s
FAULT_RUN ?= TestFault|TestClusterReshard
test-cluster: suites
	@GEOSHARD_REAL_DIR=$(CLUSTER_DIR) REAL_CLUSTER=3 OPENSEARCH_PORT=29200 KAFKA_PORT=29092 OPENSEARCH_VERSION=$(OPENSEARCH_VERSION) \
		GEOSHARD_CLUSTER=3 GEOSHARD_FAULT_DOWN=$(FAULT_DOWN) \
		$(REAL) run sh -c "$(SUITES) -tags realcluster -allow-skips -gotest '-p 1 -count=1 -timeout 20m' ./internal/cluster ./internal/osfake/... && \
			$(SUITES) -tags realcluster -gotest '-count=1 -timeout 10m -run TestLost' ./bulk && \
			$(SUITES) -tags realcluster -v -gotest '-count=1 -timeout 40m -run $(FAULT_RUN)' ./internal/e2e"

# A real single-node OpenSearch (3.9; OPENSEARCH_VERSION=2.19.6 for the 2.x
# line) and a real KRaft Kafka 4.1 broker on loopback, from Maven Central
# jars (deploy/local/); OPENSEARCH_PORT and KAFKA_PORT move them. Where the machine has PostgreSQL, also a Postgres
# server and a Kafka Connect worker with Debezium's Postgres connector
# (PG_PORT, CONNECT_PORT). It ends with the export lines that point the
# commands and the suites at them; real-exports prints them again.
real-up:
	@$(REAL) up

real-exports:
	@$(REAL) exports

real-down:
	@$(REAL) down

# Benchmarks for every hot path; -run '^$$' skips the tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

# The benchmarks that compare with the real engines and their own tools,
# each side by side in one run (docs/benchmarks.md's figures).
bench-real:
	@$(REAL) run sh -c "$(GO) test -tags realcluster -run '^$$' -bench 'WriterVsBulkIndexer/real' -benchtime 1x -count 3 ./bulk/ && \
		$(GO) test -tags realcluster -run '^$$' -bench 'PipelineEngines' -benchtime 20000x -count 3 ./pipeline/ && \
		$(GO) test -tags realcluster -run '^$$' -bench 'BackfillVsReindex' -benchtime 1x -count 3 -timeout 30m ./migrate/"

# staticcheck, run from the module proxy at a fixed version (not a
# dependency of the module).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags realcluster ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags realcluster ./...

# The ingest and reshard images (Dockerfile), tagged as the manifests'
# kustomize component deploy/k8s/images gives: IMAGE_REPO prefixes them
# (e.g. IMAGE_REPO=registry.example.com/geoshard).
IMAGE_REPO ?= geoshard
IMAGE_TAG := $(shell sed -n 's/^ *newTag: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' deploy/k8s/images/kustomization.yaml | head -1)
DOCKER ?= docker
image:
	$(DOCKER) build --target ingest -t $(IMAGE_REPO)/ingest:$(IMAGE_TAG) .
	$(DOCKER) build --target reshard -t $(IMAGE_REPO)/reshard:$(IMAGE_TAG) .

# Regenerate the derived fixtures under testdata/ from the bundled city data.
fixtures:
	$(GO) run ./internal/datagen/cmd/gendata -out testdata

# A short run of every fuzz target (FUZZTIME each), found by name: go test
# fuzzes one target of one package at a time.
FUZZTIME ?= 30s
fuzz:
	@set -e; for f in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go')); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$t ./$$(dirname $$f)"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
		done; \
	done

# Real-engine benchmarks of ingest (internal/benchrun), each against a real
# OpenSearch node and Kafka broker that real.sh brings up and down again
# (unless they already run; OPENSEARCH_PORT, KAFKA_PORT and
# GEOSHARD_REAL_DIR move them). Each prints a table, PASS or FAIL for each
# goal, and one JSON line. The flags are checked before the engines start.
#   bench-soak: one ingest run over SOAK_EVENTS events (rates, refreshes,
#               RSS, CPU, commit catch-up);
#   bench-peer: ingest beside Benthos v4.27.0 (deploy/local/benthos) on
#               PEER_EVENTS events, PEER_ROUNDS rounds.
# BENCH_SRC=head builds the commands from the commit, without uncommitted
# edits; BENCH_ARGS passes more flags (bin/benchrun soak -h lists them).
SOAK_EVENTS ?= 5000000
PEER_EVENTS ?= 1000000
PEER_ROUNDS ?= 3
BENCH_SRC ?= worktree
BENCH_ARGS ?=
BENCHRUN := bin/benchrun

bench-soak:
	@$(GO) build -o $(BENCHRUN) ./internal/benchrun/cmd/benchrun
	@$(BENCHRUN) soak -check -events '$(SOAK_EVENTS)' -src '$(BENCH_SRC)' $(BENCH_ARGS)
	@$(REAL) run $(BENCHRUN) soak -events '$(SOAK_EVENTS)' -src '$(BENCH_SRC)' $(BENCH_ARGS)

# Ingest, the routed search and the reshard's copy on OpenSearch 3.9 and
# 2.19 side by side, alternating (deploy/local/versions.sh: VERSIONS,
# ROUNDS, EVENTS, BACKFILL_DOCS, SEARCH_RESTAURANTS, SEARCH_SEARCHES).
bench-versions:
	@deploy/local/versions.sh

# The seed's whole index: the planning workload's shape (US restaurants,
# about 85 dishes each) at each size of SIZES, loaded, changed while
# searched, and resharded to 24 shards, on engines of its own
# (deploy/local/seed.sh: SIZES, PHASES, LIVE_FOR, CHANGE_RATE, SEED_DIR;
# resumable: run it again to continue).
bench-seed:
	@deploy/local/seed.sh

bench-peer:
	@$(GO) build -o $(BENCHRUN) ./internal/benchrun/cmd/benchrun
	@$(BENCHRUN) peer -check -events '$(PEER_EVENTS)' -rounds '$(PEER_ROUNDS)' -src '$(BENCH_SRC)' $(BENCH_ARGS)
	@$(REAL) run $(BENCHRUN) peer -events '$(PEER_EVENTS)' -rounds '$(PEER_ROUNDS)' -src '$(BENCH_SRC)' $(BENCH_ARGS)

# The fault-schedule explorer (internal/chaos): seeded schedules of members
# joining, leaving, killed and frozen, failing and slow shards and lost
# answers, each judged against the model of its event log. test-chaos runs
# CHAOS_SCHEDULES schedules, starting none after CHAOS_TIME (the first seed
# CHAOS_SEED, or drawn from the clock); one schedule lasts at most about
# three minutes (its steps, a reshard bounded by 90s, a final catch-up
# bounded by a minute; most take 5 to 20s). go test ./... runs the judge's
# own tests and no schedule
# (-chaos.schedules defaults to 0). A failure prints its seed, and
#   make test-chaos CHAOS_SEED=N CHAOS_SCHEDULES=1
# replays it.
CHAOS_TIME ?= 30m
CHAOS_SCHEDULES ?= 100000
CHAOS_SEED ?= 0
test-chaos:
	$(GO) test -count=1 -timeout 0 -run 'TestExplore$$|TestMemberFaults' ./internal/chaos \
		-chaos.seed=$(CHAOS_SEED) -chaos.schedules=$(CHAOS_SCHEDULES) -chaos.duration=$(CHAOS_TIME)

# test-chaos-ci replays a fixed corpus, CHAOS_CI_SEED and the
# CHAOS_CI_SCHEDULES seeds after it (about 100 s): schedules the
# explorer found passing, kept so that one that starts failing is a
# regression, not a draw. The random search is test-chaos's, outside make
# test, until its schedules run clean (docs/testing.md: what it still finds).
CHAOS_CI_SEED ?= 5007
CHAOS_CI_SCHEDULES ?= 13
test-chaos-ci: suites
	@$(SUITES) -gotest '-count=1 -timeout 8m' -testargs '-chaos.seed=$(CHAOS_CI_SEED) -chaos.schedules=$(CHAOS_CI_SCHEDULES) -chaos.duration=5m' ./internal/chaos
