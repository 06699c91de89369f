# rmq: a RocketMQ 4.x-compatible name server and broker.
#
#   make build   build bin/rmq
#   make run     build, then run a name server and a broker in one process
#                (name server 127.0.0.1:9876, broker 127.0.0.1:10911, both
#                listening on 127.0.0.1 only; store in .run/store)
#   make test    go vet, every Go test, the Java client suite, then the
#                container tests (skipped without a Docker daemon)
#   make image   build the container image (IMAGE, default rmq:latest)
#                offline: static rmq + busybox, no base image (docker/)
#   make cross   build bin/rmq and go vet for linux, darwin, freebsd and
#                windows (amd64 and arm64)
#   make fuzz    run each fuzz target for a short while (FUZZTIME, default 15s)
#   make clean   remove bin/, .run/ and .image/
#   make soak-retention  retention soak, 10 min (SOAK_DURATION); not part of test

GO           ?= go
BIN          := bin/rmq
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X main.version=$(VERSION)
# One package's test binary may not run longer than this.
TEST_TIMEOUT ?= 15m
GOTESTFLAGS  ?=
FUZZTIME     ?= 15s

.PHONY: all build run test vet test-go test-race test-java test-container image cross fuzz clean soak-retention

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/rmq

run: build
	mkdir -p .run
	$(BIN) standalone --store-dir .run/store --namesrv-port 9876 --listen-port 10911 --bind-address 127.0.0.1 --small-store

test: vet test-go test-race test-java test-container

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./...

# The unit tests again under the race detector (the end-to-end packages, which
# start processes and stock clients, only run without it). About a minute.
RACE_PKGS = $(shell $(GO) list ./... | grep -v /integration)
test-race:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

# The binary for every supported system, and go vet (tests included) for each
# GOOS: the Linux-only calls (fallocate, madvise, fdatasync, hole punching)
# sit behind build tags with portable fallbacks, and this keeps it so. The
# builds only check that everything compiles; nothing is kept.
CROSS_OS   = linux darwin freebsd windows
CROSS_ARCH = amd64 arm64
cross:
	@set -e; \
	for os in $(CROSS_OS); do \
		for arch in $(CROSS_ARCH); do \
			echo "== build $$os/$$arch"; \
			GOOS=$$os GOARCH=$$arch $(GO) build -o /dev/null ./cmd/rmq; \
		done; \
		echo "== vet $$os"; \
		GOOS=$$os GOARCH=amd64 $(GO) vet ./...; \
	done

# The Java suite installs its JDK and Maven itself when they are missing.
test-java:
	@if [ -f integration/java/run.sh ]; then \
		bash integration/java/run.sh; \
	else \
		echo "integration/java/run.sh not found: Java suite skipped"; \
	fi

# The container image, built without pulling anything: bin/rmq built static
# (CGO_ENABLED=0) and Debian's busybox-static on an empty base (docker/image.sh).
IMAGE ?= rmq:latest

image:
	IMAGE=$(IMAGE) GO=$(GO) VERSION=$(VERSION) sh docker/image.sh

# The image started by the Testcontainers recipe with testcontainers-go
# (integration/container, its own module). The Java side of it runs in
# test-java. Both skip, saying why, without a Docker daemon.
test-container:
	IMAGE=$(IMAGE) GO=$(GO) sh integration/container/run.sh

# Every func FuzzXxx in a _test.go file, one at a time (go test -fuzz takes
# one target per run). Not part of test: corpus seeds already run there.
fuzz:
	@set -e; \
	for file in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		dir=$$(dirname $$file); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "== $$dir $$fn ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

clean:
	rm -rf bin .run .image

# Retention soak (issue 13; not part of test, needs root for its tmpfs): a
# store capped at 256 MiB takes 1 KiB messages at a fixed rate for
# SOAK_DURATION with 10 000 timers and 10 000 delay messages pending; prints
# disk use, failed sends, lost/early deliveries and send p99 during deletions.
# SOAK_FLAGS=-soak.java=$(HOME)/.cache/rmq-bench-compare/rocketmq-5.3.3/lib soaks
# the stock Java broker instead, with the same settings (jars as bench-compare
# fetches them).
SOAK_DURATION ?= 10m
SOAK_FLAGS    ?=
soak-retention:
	RMQ_SOAK=1 $(GO) test -count=1 -timeout 60m -run '^TestSoakRetention$$' -v ./integration/soak/ -soak.duration=$(SOAK_DURATION) $(SOAK_FLAGS)

# The Java suite of test-java against the stock Java name server and broker (Maven Central jars, version
# ORACLE_VERSION, default 4.9.8) instead of rmq, so that differences show up side by side. Not part of test.
ORACLE_VERSION ?= 4.9.8

.PHONY: java-oracle
java-oracle:
	ORACLE_VERSION=$(ORACLE_VERSION) bash integration/java/run.sh --oracle

# Side by side with the stock Java brokers (jars fetched from Maven Central on first use): rmq against Java
# 4.9.7 (workloads 1-4, a-d and startup) and 5.3.3 (timers: 5-7, e), plus a no-op remoting server as the
# loopback ceiling (g), one broker at a time on loopback; prints the table and rewrites the generated section
# of docs/benchmarks.md. Workloads 1-7 take about 15 minutes. BENCH_COMPARE_FLAGS passes flags (e.g. -only
# 1,2 -duration 10s, or -stock-tools DIR for the stock Producer/Consumer); see `go run ./bench/compare -h`.
BENCH_COMPARE_FLAGS ?=

.PHONY: bench-compare
bench-compare: build
	$(GO) run ./bench/compare -rmq $(BIN) $(BENCH_COMPARE_FLAGS)

# The crash-loop soak (integration/soak): SOAK_CYCLES kill -9 cycles (default 30) of a SYNC_FLUSH rmq under
# plain, delay-level, timer and transactional sends from the stock Go client; then it drains and prints acked,
# lost, duplicates and early, and fails unless lost and early are 0. SOAK_SEED repeats a run's random choices.
# A few minutes. Not part of test.
SOAK_CYCLES ?= 30

.PHONY: soak-crash
soak-crash: build
	SOAK_CRASH=1 SOAK_CYCLES=$(SOAK_CYCLES) RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run '^TestCrashLoopSoak$$' -v ./integration/soak/
