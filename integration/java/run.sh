#!/usr/bin/env bash
# Java client integration suite: builds bin/rmq, starts `rmq standalone` on random loopback ports, runs
# the JUnit suite (stock rocketmq-client 4.9.8) once with JSON headers and once with ROCKETMQ binary
# headers, then stops the broker with SIGTERM and requires a clean exit (status 0).
#
# RMQ_BIN=/path/to/rmq skips the build and runs that binary instead of bin/rmq.
#
# Installs JDK 17 and Maven with apt-get when they are missing (Debian, run as root). Maven's local
# repository is the default ~/.m2, so dependencies are downloaded once per machine.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BOOT_DEADLINE_S=30
STOP_DEADLINE_S=30

log() { printf '[java-it] %s\n' "$*"; }

javac_major() {
  javac -version 2>&1 | sed -n 's/^javac \([0-9][0-9]*\).*/\1/p'
}

ensure_jdk_and_maven() {
  local major=""
  if command -v javac >/dev/null 2>&1; then major="$(javac_major)"; fi
  if [[ -z "$major" || "$major" -lt 17 ]] || ! command -v mvn >/dev/null 2>&1; then
    log "installing openjdk-17-jdk-headless and maven"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y openjdk-17-jdk-headless maven
  fi
  if [[ -z "$(javac_major)" || "$(javac_major)" -lt 17 ]]; then
    # Another JDK stays the default after the install; point Maven at 17 explicitly.
    local jdk
    jdk="$(ls -d /usr/lib/jvm/java-17-openjdk-* 2>/dev/null | head -n 1)"
    [[ -n "$jdk" ]] || { log "no JDK 17 under /usr/lib/jvm"; exit 1; }
    export JAVA_HOME="$jdk" PATH="$jdk/bin:$PATH"
  fi
}

# A TCP port is taken when something accepts a connection on it. Candidates stay below the Linux
# ephemeral range (32768+) so outgoing connections cannot grab them between the check and the bind.
port_taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  local p
  while :; do
    p=$((12000 + RANDOM % 20000))
    port_taken "$p" || { echo "$p"; return; }
  done
}

# The broker listens on BP and on the "VIP" port BP-2, and keeps BP+1 (HA) for parity with Java.
pick_ports() {
  while :; do
    NP="$(pick_port)"
    BP="$(pick_port)"
    (( BP - 2 > 1024 )) || continue
    (( NP != BP && NP != BP - 2 && NP != BP + 1 )) || continue
    port_taken $((BP - 2)) && continue
    port_taken $((BP + 1)) && continue
    return 0
  done
}

WORK=""
RMQ_PID=""

LOGS_DUMPED=0
dump_broker_logs() {
  if (( LOGS_DUMPED )); then return 0; fi
  LOGS_DUMPED=1
  log "---- rmq stdout ----"; cat "$WORK/rmq.out" 2>/dev/null || true
  log "---- rmq stderr (last 200 lines) ----"; tail -n 200 "$WORK/rmq.err" 2>/dev/null || true
}

cleanup() {
  if [[ -n "$RMQ_PID" ]] && kill -0 "$RMQ_PID" 2>/dev/null; then
    kill -TERM "$RMQ_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$RMQ_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$RMQ_PID" 2>/dev/null || true
  fi
  if [[ -n "$WORK" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

start_broker() {
  WORK="$(mktemp -d -t rmq-java-it.XXXXXX)"
  mkdir -p "$WORK/store"
  printf 'brokerIP1=127.0.0.1\n' >"$WORK/broker.conf"
  pick_ports
  log "starting rmq standalone: namesrv 127.0.0.1:$NP, broker 127.0.0.1:$BP, store $WORK/store"
  "$RMQ_BIN" standalone --store-dir "$WORK/store" --namesrv-port "$NP" --listen-port "$BP" \
    -c "$WORK/broker.conf" >"$WORK/rmq.out" 2>"$WORK/rmq.err" &
  RMQ_PID=$!
  local end=$((SECONDS + BOOT_DEADLINE_S))
  while (( $(grep -c 'boot success' "$WORK/rmq.out" || true) < 2 )); do
    if ! kill -0 "$RMQ_PID" 2>/dev/null; then
      local rc=0; wait "$RMQ_PID" || rc=$?
      RMQ_PID=""
      log "rmq exited with status $rc before both boot success lines"
      dump_broker_logs; exit 1
    fi
    if (( SECONDS >= end )); then
      log "rmq did not print two 'boot success' lines within ${BOOT_DEADLINE_S}s"
      dump_broker_logs; exit 1
    fi
    sleep 0.2
  done
  log "rmq is up (pid $RMQ_PID)"
}

stop_broker() {
  kill -TERM "$RMQ_PID"
  local end=$((SECONDS + STOP_DEADLINE_S))
  while kill -0 "$RMQ_PID" 2>/dev/null; do
    if (( SECONDS >= end )); then
      log "rmq still running ${STOP_DEADLINE_S}s after SIGTERM"
      dump_broker_logs; return 1
    fi
    sleep 0.1
  done
  local rc=0; wait "$RMQ_PID" || rc=$?
  RMQ_PID=""
  if (( rc != 0 )); then
    log "rmq exited with status $rc after SIGTERM (want 0)"
    dump_broker_logs; return 1
  fi
  log "rmq exited 0 after SIGTERM"
}

# One attribute of the <testsuite> element of a surefire XML report.
suite_attr() {
  grep -m1 -o '<testsuite [^>]*' "$1" | grep -o " $2=\"[^\"]*\"" | head -n 1 | sed -E 's/.*="([^"]*)"/\1/'
}

# Sums one numeric attribute over the surefire XML reports of one run.
report_sum() {
  local dir="$1" attr="$2" total=0 n f
  for f in "$dir"/TEST-*.xml; do
    [[ -e "$f" ]] || continue
    n="$(suite_attr "$f" "$attr")"
    total=$((total + ${n:-0}))
  done
  echo "$total"
}

TOTAL_RUN=0 TOTAL_FAIL=0 TOTAL_ERR=0 TOTAL_SKIP=0

# mvn -q hides surefire's INFO summary, so the per-class and total lines are printed from its reports.
run_suite() {
  local type="$1" rc=0
  local reports="$HERE/target/surefire-reports/$type" clientlogs="$HERE/target/client-logs/$type"
  rm -rf "$reports" "$clientlogs"
  log "running the suite with $type headers"
  # Debian's Maven 3.8.7 prints stray colour resets even in batch mode; strip them.
  mvn -B -q -f "$HERE/pom.xml" -Dstyle.color=never \
    -Drmq.namesrv="127.0.0.1:$NP" -Drmq.serializeType="$type" test 2>&1 \
    | sed -u 's/\x1b\[[0-9;]*m//g' || rc=$?
  local f
  for f in "$reports"/TEST-*.xml; do
    [[ -e "$f" ]] || continue
    printf '[%s] %s: tests=%s failures=%s errors=%s skipped=%s time=%ss\n' "$type" "$(suite_attr "$f" name)" \
      "$(suite_attr "$f" tests)" "$(suite_attr "$f" failures)" "$(suite_attr "$f" errors)" \
      "$(suite_attr "$f" skipped)" "$(suite_attr "$f" time)"
  done
  local run fail err skip
  run="$(report_sum "$reports" tests)"; fail="$(report_sum "$reports" failures)"
  err="$(report_sum "$reports" errors)"; skip="$(report_sum "$reports" skipped)"
  printf '[%s] Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n' "$type" "$run" "$fail" "$err" "$skip"
  TOTAL_RUN=$((TOTAL_RUN + run)) TOTAL_FAIL=$((TOTAL_FAIL + fail))
  TOTAL_ERR=$((TOTAL_ERR + err)) TOTAL_SKIP=$((TOTAL_SKIP + skip))
  if (( rc != 0 || run == 0 )); then
    log "suite with $type headers failed (mvn status $rc, $run tests reported)"
    if [[ -d "$clientlogs" ]]; then
      log "---- client log ($type, last 100 lines) ----"
      find "$clientlogs" -type f -name '*.log' -exec tail -n 100 {} + || true
    fi
    return 1
  fi
}

main() {
  ensure_jdk_and_maven
  export MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m}"

  if [[ -z "${RMQ_BIN:-}" ]]; then
    command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }
    log "building bin/rmq"
    (cd "$ROOT" && go build -o bin/rmq ./cmd/rmq)
    RMQ_BIN="$ROOT/bin/rmq"
  fi

  start_broker
  local failed=0
  run_suite JSON || failed=1
  run_suite ROCKETMQ || failed=1
  stop_broker || failed=1

  if (( failed )); then dump_broker_logs; fi
  printf 'Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n' \
    "$TOTAL_RUN" "$TOTAL_FAIL" "$TOTAL_ERR" "$TOTAL_SKIP"
  if (( failed )); then
    log "FAILED"
    exit 1
  fi
  log "OK"
}

main "$@"
