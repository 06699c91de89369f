# rmq: a RocketMQ 4.x-compatible name server and broker.
#
#   make build   build bin/rmq
#   make run     build, then run a name server and a broker in one process
#                (name server 127.0.0.1:9876, broker 127.0.0.1:10911, both
#                listening on 127.0.0.1 only; store in .run/store)
#   make test    go vet, every Go test, the Java client suite, the Python and
#                Node.js 5.x SDKs, then the container tests (skipped without
#                a Docker daemon)
#   make image   build the container image (IMAGE, default rmq:latest)
#                offline: static rmq + busybox, no base image (docker/);
#                installs busybox-static when root; `docker build .` builds
#                the same image from a registry, for any platform
#   make cross   go vet and build bin/rmq for linux, darwin (arm64), freebsd
#                and windows, and build it for linux/arm64
#   make fuzz    run each fuzz target for a short while (FUZZTIME, default 15s)
#   make proto   regenerate grpcapi/apiv2 from the rocketmq-apis protos (pinned)
#   make clean   remove bin/, .run/ and .image/
#   make soak-retention  retention soak, 10 min (SOAK_DURATION); not part of test
#   make soak-diskfull   full-disk soak, 3 min (DISKFULL_DURATION); not part of test
#   make test-ha         replication tests, rmq and Java 4.9.7 masters and slaves in every pairing; not part of test
#   make soak-ha         replication kill soak, SYNC_MASTER pair (SOAK_HA_KILLS, SOAK_HA_SLAVE); not part of test
#   make soak-failover   controller-mode failover soak (SOAK_FO_KILLS, SOAK_FO_VARIANTS); not part of test
#   make proxy-txcheck   5.x SDK check-back through the stock 5.3.3 proxy, rmq and Java broker (~90 s); not part of test

GO           ?= go
BIN          := bin/rmq
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X main.version=$(VERSION)
# One package's test binary may not run longer than this.
TEST_TIMEOUT ?= 15m
GOTESTFLAGS  ?=
FUZZTIME     ?= 15s
# The repository's Go modules that vet and test run in: rmq itself, the
# end-to-end suites and client tests (integration/go.mod) and the benchmark
# harness (bench/compare/go.mod). The stock clients, the 5.x SDK and what they
# pull in are required there only, so that a program importing rmq (rmqtest)
# keeps its own versions. integration/container, a module too, needs Docker:
# test-container runs it.
GO_MODULES   := . integration bench/compare

.PHONY: all build run test vet test-go test-race test-java test-sdk5 test-container image cross fuzz clean soak-retention soak-diskfull

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/rmq

run: build
	mkdir -p .run
	$(BIN) standalone --store-dir .run/store --namesrv-port 9876 --listen-port 10911 --bind-address 127.0.0.1 --small-store

test: vet test-go test-race test-java test-sdk5 test-container

# Each module in turn; every module runs even when one fails, and the target
# fails if any did.
vet:
	@rc=0; for m in $(GO_MODULES); do \
		echo "== go vet ./... ($$m)"; \
		(cd $$m && $(GO) vet ./...) || rc=1; \
	done; exit $$rc

test-go:
	@rc=0; for m in $(GO_MODULES); do \
		echo "== go test ./... ($$m)"; \
		(cd $$m && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./...) || rc=1; \
	done; exit $$rc

# The unit tests again under the race detector: rmq's module and
# bench/compare whole, and the integration module's in-process client tests
# (RACE_INTEGRATION_PKGS); its end-to-end packages, which start processes
# and stock clients, only run without it. About a minute.
RACE_INTEGRATION_PKGS = ./apiv2sdk ./namesrvclient ./rmqtestclient
test-race:
	@rc=0; \
	echo "== go test -race ./... (.)"; \
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./... || rc=1; \
	echo "== go test -race ./... (bench/compare)"; \
	(cd bench/compare && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...) || rc=1; \
	echo "== go test -race $(RACE_INTEGRATION_PKGS) (integration)"; \
	(cd integration && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(RACE_INTEGRATION_PKGS)) || rc=1; \
	exit $$rc

# go vet (tests included) and a build of bin/rmq for every supported system:
# the Linux-only calls (fallocate, madvise, fdatasync, hole punching) sit
# behind build tags with portable fallbacks, and this keeps it so. A build
# after the vet of the same target only links (vet compiles every package
# for it); a build for another architecture compiles everything again, so
# arm64 is built for Linux only (servers and containers), and Darwin is
# checked on arm64 (Apple silicon). rmq has no per-architecture code.
# The vet covers every module of GO_MODULES. Nothing built is kept.
CROSS_VET   = linux/amd64 darwin/arm64 freebsd/amd64 windows/amd64
CROSS_BUILD = $(CROSS_VET) linux/arm64
cross:
	@set -e; \
	for t in $(CROSS_VET); do \
		echo "== vet $$t"; \
		for m in $(GO_MODULES); do \
			(cd $$m && GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...); \
		done; \
	done; \
	for t in $(CROSS_BUILD); do \
		echo "== build $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -o /dev/null ./cmd/rmq; \
	done

# The Java suite installs its JDK and Maven itself when they are missing.
test-java:
	@if [ -f integration/java/run.sh ]; then \
		bash integration/java/run.sh; \
	else \
		echo "integration/java/run.sh not found: Java suite skipped"; \
	fi

# The Python (rocketmq-python-client) and Node.js (rocketmq-client-nodejs)
# 5.x SDKs against the gRPC endpoint: integration/sdk5/run.sh installs them,
# pinned, from PyPI and npm into git-ignored directories of integration/sdk5,
# then runs TestSDK5Python and TestSDK5Node. An SDK whose runtime is missing
# is skipped, saying so.
test-sdk5:
	GO=$(GO) bash integration/sdk5/run.sh

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
# one target per run). Not part of test: corpus seeds already run there. Run
# in the package's directory, so that targets of every module are found.
fuzz:
	@set -e; \
	for file in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		dir=$$(dirname $$file); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "== $$dir $$fn ($(FUZZTIME))"; \
			(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) .); \
		done; \
	done

clean:
	rm -rf bin .run .image integration/sdk5/python/.deps integration/sdk5/node/node_modules

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
	cd integration && RMQ_SOAK=1 $(GO) test -count=1 -timeout 60m -run '^TestSoakRetention$$' -v ./soak/ -soak.duration=$(SOAK_DURATION) $(SOAK_FLAGS)

# Full-disk soak (issue 42; not part of test, needs root for its tmpfs): a
# 96 MiB tmpfs store with the stock retention keys, 1 500 plain msg/s, timers
# and delay levels pending 1 to 3 min (far longer than the disk holds) and a
# ballast file filling the file system at times; asserts no send refused
# while a deletable file exists, no pending message lost or early, no crash.
# DISKFULL_FLAGS passes -diskfull.* flags (rate, cap, ballastTo, ...).
DISKFULL_DURATION ?= 3m
soak-diskfull:
	cd integration && RMQ_SOAK=1 $(GO) test -count=1 -timeout 30m -run '^TestSoakDiskFull$$' -v ./soak/ -diskfull.duration=$(DISKFULL_DURATION) $(DISKFULL_FLAGS)

# Regenerates the generated tables of docs/compatibility.md (request codes from the broker's and name server's
# dispatch tables, config keys from the binder); `go test ./cmd/rmq` fails while they are stale.
.PHONY: docs
docs:
	$(GO) test ./cmd/rmq -count=1 -run '^TestCompatibilityDoc$$' -update

# The Java suite of test-java against the stock Java name server and broker (Maven Central jars, version
# ORACLE_VERSION) instead of rmq, so that differences show up side by side, then the oracle-writing classes
# against rmq and a diff of both brokers' normalized answers (integration/java/README.md); then the same with
# mqadmin 5.3.3 (profile admin5: 5.x admin codes, ACL 2.0) against the Java 5.3.3 broker. Not part of test.
# Empty: run.sh takes 4.9.8 and falls back on 4.9.7 when Maven Central has no 4.9.8 broker jars.
ORACLE_VERSION ?=

.PHONY: java-oracle
java-oracle:
	ORACLE_VERSION=$(ORACLE_VERSION) bash integration/java/run.sh --oracle
	ORACLE_VERSION=5.3.3 bash integration/java/run.sh --oracle
	bash integration/java/metrics-oracle.sh
	$(MAKE) test-ha

# Two Java 5.3.3 brokers in controller mode under the stock rocketmq-controller 5.3.3, then under `rmq controller`
# (one node, then three with the leader killed): election, sync state set, stock mqadmin's controller commands
# (diffed against the stock run's) and a kill -9 failover, with timings. Bounded (WAIT_S per wait, default 90 s).
.PHONY: controller-oracle
controller-oracle:
	bash integration/java/controller-oracle.sh

# Mixed broker sets: an rmq broker in controller mode and a Java 5.3.3 broker in one set, under the stock
# controller and under `rmq controller` (integration/java/controller-oracle.sh, phases *-mixed). Not part of test.
.PHONY: controller-mixed
controller-mixed:
	CONTROLLER_ORACLE_PHASES="stock stock-mixed rmq-mixed" bash integration/java/controller-oracle.sh

# store/ha/autoswitch against a live Java 5.3.3 master in controller mode: its frames, then its Service as an rmq slave.
.PHONY: autoswitch-interop
autoswitch-interop:
	bash integration/java/autoswitch-java-master.sh

# A Java 5.3.3 slave of an rmq master in controller mode (needs the broker wiring: RMQ_BIN, default bin/rmq);
# then a Java old master of an empty term rejoining an rmq master.
.PHONY: autoswitch-interop-slave
autoswitch-interop-slave: build
	RMQ_BIN=$${RMQ_BIN:-$(CURDIR)/bin/rmq} bash integration/java/autoswitch-java-slave.sh
	RMQ_BIN=$${RMQ_BIN:-$(CURDIR)/bin/rmq} bash integration/java/autoswitch-java-slave.sh empty-term

# Side by side with the stock Java brokers (jars fetched from Maven Central on first use): rmq against Java
# 4.9.7 (workloads 1-4, a-d, h, i and startup) and 5.3.3 (timers: 5-7, e), plus a no-op remoting server as the
# loopback ceiling (g) and rmq with metrics on vs off (j), one broker at a time on loopback; prints the table and rewrites the generated section
# of docs/benchmarks.md. Workloads 1-7 take about 15 minutes. BENCH_COMPARE_FLAGS passes flags (e.g. -only
# 1,2 -duration 10s, or -stock-tools DIR for the stock Producer/Consumer); see `bin/bench-compare -h`.
# bench/compare is a module of its own (bench/compare/go.mod): it is built into bin/bench-compare and run from
# here, where its default paths (docs/benchmarks.md, bench/compare/*-pom.xml) are.
BENCH_COMPARE_FLAGS ?=
BENCH_COMPARE       := bin/bench-compare

.PHONY: bench-compare bench-compare-bin
bench-compare-bin:
	cd bench/compare && $(GO) build -o $(CURDIR)/$(BENCH_COMPARE) .

bench-compare: build bench-compare-bin
	$(BENCH_COMPARE) -rmq $(BIN) $(BENCH_COMPARE_FLAGS)

# Workloads h (SQL92 filter drains a 1 000 000-message backlog), i (request-reply round trip), both against
# Java 4.9.7, and j (workload 1 with the Prometheus endpoint on and scraped vs off), about 7 minutes; the
# results go to their own generated section of docs/benchmarks.md (-section h-j). For a quick run:
# BENCH_COMPARE_FLAGS="-sql-backlog 100000 -duration 5s -warmup 3s -metrics-rounds 1".
.PHONY: bench-compare-hij
bench-compare-hij: build bench-compare-bin
	$(BENCH_COMPARE) -rmq $(BIN) -only h,i,j -section h-j $(BENCH_COMPARE_FLAGS)

# The crash-loop soak (integration/soak): SOAK_CYCLES kill -9 cycles (default 30) of a SYNC_FLUSH rmq under
# plain, delay-level, timer and transactional sends from the stock Go client; then it drains and prints acked,
# lost, duplicates and early, and fails unless lost and early are 0. SOAK_SEED repeats a run's random choices.
# A few minutes. Not part of test.
SOAK_CYCLES ?= 30

.PHONY: soak-crash
soak-crash: build
	cd integration && SOAK_CRASH=1 SOAK_CYCLES=$(SOAK_CYCLES) RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run '^TestCrashLoopSoak$$' -v ./soak/

# Replication (issue 44, integration/ha): each pairing of an rmq or stock Java 4.9.7 master with an rmq or Java
# 4.9.7 slave, the stock Go client and the Java 4.9.8 client; pairings with Java skip when java is missing.
# About 3 minutes per pairing, so not part of test; java-oracle runs it. HA_PAIRS selects pairings
# (java-java,rmq-java,java-rmq,rmq-rmq).
HA_PAIRS ?=

.PHONY: test-ha
test-ha: build
	cd integration && RMQ_HA=1 RMQ_HA_PAIRS=$(HA_PAIRS) RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 30m -v ./ha/

# The replication kill soak (integration/soak/ha_test.go): a SYNC_MASTER rmq pair under plain, delay-level, timer
# and transactional sends; the master is killed with SIGKILL SOAK_HA_KILLS times (default 20) and restarted, then
# the slave; after each kill every acknowledged send is read back from the slave. Prints acked, missing-on-slave,
# lost, duplicates and early; fails unless missing, lost and early are 0. SOAK_HA_SLAVE=java runs the stock Java
# 4.9.7 broker as the slave. About 10 minutes. Not part of test.
SOAK_HA_KILLS ?= 20
SOAK_HA_SLAVE ?= rmq

.PHONY: soak-ha
soak-ha: build
	cd integration && SOAK_HA=1 SOAK_HA_KILLS=$(SOAK_HA_KILLS) SOAK_HA_SLAVE=$(SOAK_HA_SLAVE) RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 60m -run '^TestSoakHA$$' -v ./soak/

# The failover soak (integration/soak/failover_test.go; issue 45): three brokers in controller mode
# (allAckInSyncStateSet=true) under a controller take plain, delay-level, timer and transactional sends from the
# stock Go client and plain, timer and transactional sends from the Java 5.x gRPC SDK (through the stock 5.3.3
# proxy in cluster mode, or the rmq brokers' own endpoints: SOAK_FO_SDK_VIA); the master is killed with SIGKILL
# SOAK_FO_KILLS times (default 20). Per kill: kill -> first SEND_OK on the new master, every acknowledged Go send
# read back from the new master; at the end: acked, lost, early, duplicates (Go and SDK), kill->send p50/max per
# variant, and every broker's epoch file (no two masters in an epoch).
# SOAK_FO_VARIANTS lists controller:brokers (controller stock|rmq, brokers java|rmq|mixed; default
# "stock:java stock:rmq stock:mixed rmq:rmq rmq:mixed"); stock:java (Java 5.3.3 x3 under rocketmq-controller 5.3.3)
# is the timing baseline, and a variant with rmq brokers must switch in at most half its time. Needs java and the
# 5.3.3 jars. Not part of test.
SOAK_FO_KILLS ?= 20
SOAK_FO_VARIANTS ?= stock:java stock:rmq stock:mixed rmq:rmq rmq:mixed

.PHONY: soak-failover
soak-failover: build
	cd integration && SOAK_FO=1 SOAK_FO_KILLS=$(SOAK_FO_KILLS) SOAK_FO_VARIANTS="$(SOAK_FO_VARIANTS)" RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 120m -run '^TestSoakFailover$$' -v ./soak/

# The 5.x SDK's transaction check-back through the stock 5.3.3 proxy in cluster mode (integration/soak/proxytx_test.go):
# one broker (PROXYTX_BROKERS: rmq, java or both, the default), the SDK's transactions stay UNKNOWN and its checker
# commits; a topic typed +message.type=TRANSACTION must be checked back and delivered, an untyped one never is (the
# stock proxy registers the SDK's group with the brokers for typed topics only). About 45 s per broker; needs java
# and the 5.3.3 jars. Not part of test.
PROXYTX_BROKERS ?= rmq,java

.PHONY: proxy-txcheck
proxy-txcheck: build
	cd integration && SOAK_PROXYTX=1 PROXYTX_BROKERS=$(PROXYTX_BROKERS) RMQ_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 10m -run '^TestProxyTxCheck$$' -v ./soak/

# The gRPC endpoint's protobuf and gRPC code (grpcapi/apiv2), generated from the
# apache/rocketmq-apis protos at ROCKETMQ_APIS_VERSION (the rocketmq-proto version
# RocketMQ 5.3.3 pins; its Maven jar holds only Java classes, so the tag is cloned
# and checked against ROCKETMQ_APIS_COMMIT). protoc and the well-known types
# (google/protobuf/*.proto, from the protobuf-java jar) come from Maven Central,
# protoc-gen-go from google.golang.org/protobuf at the go.mod version,
# protoc-gen-go-grpc at PROTOC_GEN_GO_GRPC_VERSION. Everything fetched goes to
# .proto/ (git-ignored). The output is committed: `make proto` followed by
# `git diff --exit-code grpcapi/apiv2` checks that it is reproducible.
# ROCKETMQ_APIS_REPO may name a local clone or mirror of the repository.
ROCKETMQ_APIS_REPO         ?= https://github.com/apache/rocketmq-apis.git
ROCKETMQ_APIS_VERSION      := v2.0.4
ROCKETMQ_APIS_COMMIT       := df8f85cdfa850b204adea777076c2d3d8fb0c3fc
PROTOC_VERSION             := 4.33.5
PROTOC_CLASSIFIER          ?= linux-x86_64
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
PROTO_DIR                  := .proto
PROTO_PKG                  := github.com/rmqio/rmq/grpcapi/apiv2
PROTO_FILES                := apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto
# The protos are compiled under a file path and proto package of rmq's own, so
# that a binary may link grpcapi/apiv2 beside the 5.x Go SDK's generated copy
# (protobuf-go panics at init on a second registration of a file path or a full
# name). Message names never go on the wire (no Any here); the gRPC service and
# method names do, so service_grpc.pb.go is set back to
# apache.rocketmq.v2.MessagingService after protoc.
PROTO_LOCAL_DIR            := rmqio/apiv2
PROTO_LOCAL_PACKAGE        := rmqio.apache.rocketmq.v2

.PHONY: proto
proto:
	@set -e; \
	d=$(CURDIR)/$(PROTO_DIR); mkdir -p $$d/bin; \
	if [ ! -x $$d/bin/protoc-$(PROTOC_VERSION) ]; then \
		(cd $$d && mvn -B -q dependency:copy -Dartifact=com.google.protobuf:protoc:$(PROTOC_VERSION):exe:$(PROTOC_CLASSIFIER) \
			-DoutputDirectory=$$d/dl -Dstyle.color=never); \
		cp $$d/dl/protoc-$(PROTOC_VERSION)-$(PROTOC_CLASSIFIER).exe $$d/bin/protoc-$(PROTOC_VERSION); \
		chmod +x $$d/bin/protoc-$(PROTOC_VERSION); \
	fi; \
	if [ ! -f $$d/include/google/protobuf/timestamp.proto ]; then \
		(cd $$d && mvn -B -q dependency:unpack -Dartifact=com.google.protobuf:protobuf-java:$(PROTOC_VERSION) \
			-Dmdep.unpack.includes='google/protobuf/*.proto' -DoutputDirectory=$$d/include -Dstyle.color=never); \
	fi; \
	$(GO) build -o $$d/bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go; \
	GOBIN=$$d/bin $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION); \
	rm -rf $$d/rocketmq-apis; \
	git -c advice.detachedHead=false clone -q --depth 1 --branch $(ROCKETMQ_APIS_VERSION) $(ROCKETMQ_APIS_REPO) $$d/rocketmq-apis; \
	got=$$(git -C $$d/rocketmq-apis rev-parse HEAD); \
	if [ "$$got" != "$(ROCKETMQ_APIS_COMMIT)" ]; then \
		echo "rocketmq-apis $(ROCKETMQ_APIS_VERSION) is $$got, want $(ROCKETMQ_APIS_COMMIT)" >&2; exit 1; \
	fi; \
	rm -rf $$d/src; mkdir -p $$d/src/$(PROTO_LOCAL_DIR); \
	for f in $(PROTO_FILES); do \
		sed -e 's#^package apache\.rocketmq\.v2;#package $(PROTO_LOCAL_PACKAGE);#' \
			-e 's#import "apache/rocketmq/v2/#import "$(PROTO_LOCAL_DIR)/#' \
			$$d/rocketmq-apis/$$f > $$d/src/$(PROTO_LOCAL_DIR)/$$(basename $$f); \
	done; \
	maps=""; for f in $(PROTO_FILES); do maps="$$maps,M$(PROTO_LOCAL_DIR)/$$(basename $$f)=$(PROTO_PKG)"; done; maps=$${maps#,}; \
	rm -f grpcapi/apiv2/*.pb.go; \
	PATH=$$d/bin:$$PATH $$d/bin/protoc-$(PROTOC_VERSION) -I $$d/src -I $$d/include \
		--go_out=. --go_opt=module=github.com/rmqio/rmq --go_opt=$$maps \
		--go-grpc_out=. --go-grpc_opt=module=github.com/rmqio/rmq --go-grpc_opt=$$maps \
		$(foreach f,$(PROTO_FILES),$(PROTO_LOCAL_DIR)/$(notdir $(f))); \
	sed -i 's#"\(/\?\)$(PROTO_LOCAL_PACKAGE)\.MessagingService#"\1apache.rocketmq.v2.MessagingService#' grpcapi/apiv2/service_grpc.pb.go; \
	if grep -q '$(PROTO_LOCAL_PACKAGE)\.MessagingService' grpcapi/apiv2/service_grpc.pb.go; then \
		echo "make proto: the service name was not restored to apache.rocketmq.v2.MessagingService" >&2; exit 1; \
	fi
