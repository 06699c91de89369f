#!/usr/bin/env bash
# Java compatibility matrix: stock Java clients and mqadmin against a broker on random loopback ports.
#
#   run.sh            against rmq: builds bin/rmq (or uses $RMQ_BIN), runs `rmq standalone` (make test)
#   run.sh --oracle   against the real Java name server and broker from Maven Central jars (make java-oracle),
#                     version $ORACLE_VERSION (default 4.9.8)
#
# The JUnit suite (pom.xml) runs four times: client profiles client4 (rocketmq-client 4.9.8 + mqadmin from
# rocketmq-tools 4.9.8) and client5 (rocketmq-client 5.3.3), each with JSON and with ROCKETMQ binary headers.
# Tests tagged "timer" run only when the broker has the 5.x timer wired (rmq: `timerHook` in broker/lifecycle.go;
# never for a 4.x Java oracle). A second broker for the restart test is started by the tests through a launcher
# script this file writes. The broker under test must exit 0 on SIGTERM at the end.
#
# Oracle comparison (--oracle): tests of the client4 profile (and, against ORACLE_VERSION=5.3.3, of the admin5
# profile: mqadmin 5.3.3) write what the broker answered, normalized (volatile fields masked; the rules are in
# src/test/java/rmq/it/OracleOutput.java), to target/oracle-outputs/<broker>/<profile>-<headers>/<Class>.<test>.txt. After the suite against the Java broker, run.sh starts rmq on fresh ports,
# runs the classes that wrote there (client4, same header types) and diffs the two trees; a difference fails the run.
#
# With a Docker daemon (docker/available.sh), run.sh (rmq mode) also builds the image (docker/image.sh, tag
# $IMAGE, default rmq:latest) and runs the profile "container": the image started by the Testcontainers recipe,
# 4.9.8 client through the mapped ports. Without one it says why and skips that profile; RMQ_CONTAINER_TESTS=0
# skips it too.
#
# Installs JDK 17 and Maven with apt-get when they are missing (Debian, run as root). Maven's local repository is
# the default ~/.m2, so dependencies are downloaded once per machine.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BOOT_DEADLINE_S="${RMQ_JAVA_BOOT_DEADLINE_S:-60}" # a loaded machine may need more
STOP_DEADLINE_S=30
MODE=rmq
if [[ "${1:-}" == "--oracle" ]]; then MODE=java; fi
ORACLE_VERSION_SET="${ORACLE_VERSION:-}"
ORACLE_VERSION="${ORACLE_VERSION:-4.9.8}"
# Classes and tests tagged "one-header-type" (they wait on the wall clock; their subject is not the header codec) run under the
# first header type only.
# grpc5 (the 5.x gRPC SDK against rmq's gRPC endpoint) runs once, not per header type, and not against the
# Java oracle (which runs no proxy).
# admin5 (mqadmin 5.3.3: the 5.x admin codes and ACL 2.0) runs once, under the first header type; against a Java
# oracle only when it is 5.x, and then alone (ORACLE_VERSION=5.3.3: the 4.x suites are not meant for a 5.x broker).
CLIENTS="${RMQ_JAVA_CLIENTS:-client4 client5 grpc5 admin5}"
if [[ "$MODE" == java && -z "${RMQ_JAVA_CLIENTS:-}" && "$ORACLE_VERSION" == 5.* ]]; then CLIENTS=admin5; fi
TYPES="${RMQ_JAVA_TYPES:-JSON ROCKETMQ}"
# RMQ_JAVA_TESTS, when set, is surefire's -Dtest (e.g. "AdminCollectorsTest,OffsetAdminTest").

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
    GP="$(pick_port)"
    (( GP != NP && GP != BP && GP != BP - 2 && GP != BP + 1 )) || continue
    return 0
  done
}

WORK=""
PIDS=()          # processes this script started, stopped in reverse order
BROKER_PID=""    # the process whose SIGTERM exit status is checked (rmq standalone, or the Java broker)
LOGS_DUMPED=0

dump_logs() {
  if (( LOGS_DUMPED )); then return 0; fi
  LOGS_DUMPED=1
  local f
  for f in "$WORK"/*.out "$WORK"/*.err; do
    [[ -s "$f" ]] || continue
    log "---- $(basename "$f") (last 200 lines) ----"; tail -n 200 "$f" || true
  done
}

cleanup() {
  local i pid
  for (( i=${#PIDS[@]}-1; i>=0; i-- )); do
    pid="${PIDS[$i]}"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [[ -n "$WORK" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# wait_for_line FILE PATTERN COUNT PID WHAT: waits until FILE has COUNT lines matching PATTERN.
wait_for_line() {
  local file="$1" pattern="$2" count="$3" pid="$4" what="$5"
  local end=$((SECONDS + BOOT_DEADLINE_S))
  while (( $(grep -c "$pattern" "$file" 2>/dev/null || true) < count )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      local rc=0; wait "$pid" || rc=$?
      log "$what exited with status $rc before it printed '$pattern'"
      dump_logs; exit 1
    fi
    if (( SECONDS >= end )); then
      log "$what did not print '$pattern' within ${BOOT_DEADLINE_S}s"
      dump_logs; exit 1
    fi
    sleep 0.2
  done
}

# ---- rmq -------------------------------------------------------------------------------------------------------

start_rmq() {
  local store="${1:-$WORK/store}"
  mkdir -p "$store"
  # A short check interval keeps the transaction check-back tests to seconds (stock: 60 s). SqlFilterTest
  # needs SQL92 filtering, retry topics included (both off by default, as on the stock broker). A small
  # store keeps the suite to a few MiB of disk. The grpc5 tests send FIFO, delay and transactional messages to
  # topics a 4.x warm-up send created, with no message.type: the gRPC endpoint, like the stock proxy, refuses
  # that by default (enableTopicMessageTypeCheck), so the suite turns the check off, as rmqtest's harness does.
  printf 'brokerIP1=127.0.0.1\ntransactionCheckInterval=5000\nenablePropertyFilter=true\nfilterSupportRetry=true\nsmallStore=true\ngrpcServerPort=%s\nenableTopicMessageTypeCheck=false\n' \
    "$GP" >"$WORK/broker.conf"
  log "starting rmq standalone: namesrv 127.0.0.1:$NP, broker 127.0.0.1:$BP, store $store"
  "$RMQ_BIN" standalone --store-dir "$store" --namesrv-port "$NP" --listen-port "$BP" \
    -c "$WORK/broker.conf" >"$WORK/rmq.out" 2>"$WORK/rmq.err" &
  BROKER_PID=$!
  PIDS+=("$BROKER_PID")
  wait_for_line "$WORK/rmq.out" 'boot success' 2 "$BROKER_PID" "rmq standalone"
  log "rmq is up (pid $BROKER_PID)"

  # NAME CLUSTER PORT STORE_DIR NAMESRV: one more rmq broker in the foreground.
  cat >"$WORK/broker-launcher.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
# RMQ_BROKER_KEEP_CONF: a restart keeps the config file as the broker left it (updateBrokerConfig persists there).
if [[ -z "\${RMQ_BROKER_KEEP_CONF:-}" || ! -e "\$4.conf" ]]; then
printf 'brokerName=%s\nbrokerClusterName=%s\nbrokerIP1=127.0.0.1\nsmallStore=true\ngrpcServerPort=0\n' "\$1" "\$2" >"\$4.conf"
if [[ -n "\${RMQ_BROKER_EXTRA_CONF:-}" ]]; then printf '%s\n' "\$RMQ_BROKER_EXTRA_CONF" >>"\$4.conf"; fi
fi
exec "$RMQ_BIN" broker -c "\$4.conf" -n "\$5" --store-dir "\$4" --listen-port "\$3"
EOF
  chmod +x "$WORK/broker-launcher.sh"
}

# ---- Java oracle -------------------------------------------------------------------------------------------------

JAVA_OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED)

write_logback() {
  local name="$1"
  cat >"$PEER_HOME/conf/logback_$name.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$PEER_HOME/logs/$name.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
}

start_java() {
  local lib="$HERE/target/oracle-$ORACLE_VERSION/lib"
  if ! ls "$lib"/rocketmq-broker-*.jar >/dev/null 2>&1; then
    log "fetching rocketmq-namesrv and rocketmq-broker $ORACLE_VERSION from Maven Central"
    mvn -B -q -U -f "$HERE/oracle-pom.xml" -Dstyle.color=never -Doracle.version="$ORACLE_VERSION" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$lib" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' || {
      if [[ "$ORACLE_VERSION" == 4.9.8 && -z "${ORACLE_VERSION_SET:-}" ]]; then
        # Maven Central as reachable here has no rocketmq-broker/-namesrv 4.9.8 jars; 4.9.7 is the last 4.9.x it
        # serves (README.md). An explicit ORACLE_VERSION never falls back.
        log "cannot fetch the Java broker 4.9.8; falling back on 4.9.7"
        ORACLE_VERSION=4.9.7 BROKER_KIND="java-4.9.7" ORACLE_ACL_498=1
        start_java
        return
      fi
      log "cannot fetch the Java broker $ORACLE_VERSION (see the Maven error above)"
      exit 1
    }
  fi
  local cp="$lib/*"
  if [[ -n "${ORACLE_ACL_498:-}" ]]; then
    # The 4.9.7 fallback stands for 4.9.8: its broker runs with 4.9.8's rocketmq-acl (and the snakeyaml 2.0 that
    # jar needs), served separately from the broker. 4.9.8's PlainPermissionManager has one import more than
    # 4.9.7's, so the stack frame in every ACL denial remark (PlainPermissionManager.java:684) is one line further
    # down; AclTest records those remarks. The two releases differ in nothing else under acl/.
    cp="$HERE/target/oracle-$ORACLE_VERSION/lib-acl-4.9.8"
    rm -rf "$cp"; mkdir -p "$cp"
    local jar
    for jar in "$lib"/*.jar; do
      case "$(basename "$jar")" in rocketmq-acl-*|snakeyaml-*) ;; *) ln -s "$jar" "$cp/" ;; esac
    done
    for jar in org.apache.rocketmq:rocketmq-acl:4.9.8 org.yaml:snakeyaml:2.0; do
      mvn -B -q -f "$HERE/oracle-pom.xml" -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
        -Dartifact="$jar" -DoutputDirectory="$cp" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' \
        || { log "cannot fetch $jar for the 4.9.7 broker"; exit 1; }
    done
    log "the Java broker 4.9.7 runs with rocketmq-acl 4.9.8 and snakeyaml 2.0"
    cp="$cp/*"
  fi
  PEER_HOME="$WORK/peer"
  mkdir -p "$PEER_HOME/conf" "$PEER_HOME/logs"
  write_logback namesrv; write_logback broker; write_logback tools
  printf 'listenPort=%s\nrocketmqHome=%s\n' "$NP" "$PEER_HOME" >"$PEER_HOME/conf/namesrv.conf"
  log "starting the Java name server $ORACLE_VERSION on 127.0.0.1:$NP"
  ROCKETMQ_HOME="$PEER_HOME" java -Xms128m -Xmx256m -XX:+UseG1GC -Duser.home="$PEER_HOME" -cp "$lib/*" \
    org.apache.rocketmq.namesrv.NamesrvStartup -c "$PEER_HOME/conf/namesrv.conf" \
    >"$WORK/namesrv.out" 2>"$WORK/namesrv.err" &
  PIDS+=("$!")
  wait_for_line "$WORK/namesrv.out" 'boot success' 1 "$!" "Java name server"

  # NAME CLUSTER PORT STORE_DIR NAMESRV: one Java broker in the foreground (also broker-a, below).
  cat >"$WORK/broker-launcher.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
# RMQ_BROKER_KEEP_CONF: a restart keeps the config file as the broker left it (updateBrokerConfig persists there).
if [[ -z "\${RMQ_BROKER_KEEP_CONF:-}" || ! -e "\$4.conf" ]]; then
cat >"\$4.conf" <<CONF
brokerClusterName=\$2
brokerName=\$1
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
namesrvAddr=\$5
listenPort=\$3
brokerIP1=127.0.0.1
storePathRootDir=\$4
storePathCommitLog=\$4/commitlog
autoCreateTopicEnable=true
rocketmqHome=$PEER_HOME
transactionCheckInterval=5000
mappedFileSizeCommitLog=67108864
enablePropertyFilter=true
filterSupportRetry=true
CONF
if [[ -n "\${RMQ_BROKER_EXTRA_CONF:-}" ]]; then printf '%s\n' "\$RMQ_BROKER_EXTRA_CONF" >>"\$4.conf"; fi
fi
mkdir -p "\$4"
export ROCKETMQ_HOME="$PEER_HOME"
exec java -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxDirectMemorySize=256m ${JAVA_OPENS[*]} \${RMQ_BROKER_JVM_PROPS:-} \
  -Duser.home="\$4.home" -cp "$cp" org.apache.rocketmq.broker.BrokerStartup -c "\$4.conf"
EOF
  chmod +x "$WORK/broker-launcher.sh"
  log "starting the Java broker $ORACLE_VERSION on 127.0.0.1:$BP"
  "$WORK/broker-launcher.sh" broker-a DefaultCluster "$BP" "$WORK/store" "127.0.0.1:$NP" \
    >"$WORK/broker.out" 2>"$WORK/broker.err" &
  BROKER_PID=$!
  PIDS+=("$BROKER_PID")
  wait_for_line "$WORK/broker.out" 'boot success' 1 "$BROKER_PID" "Java broker"
  log "the Java broker is up (pid $BROKER_PID)"
}

# ---- suite -------------------------------------------------------------------------------------------------------

stop_broker() {
  kill -TERM "$BROKER_PID"
  local end=$((SECONDS + STOP_DEADLINE_S))
  while kill -0 "$BROKER_PID" 2>/dev/null; do
    if (( SECONDS >= end )); then
      log "the broker is still running ${STOP_DEADLINE_S}s after SIGTERM"
      dump_logs; return 1
    fi
    sleep 0.1
  done
  local rc=0; wait "$BROKER_PID" || rc=$?
  # A JVM ends with 143 (128 + SIGTERM) after running its shutdown hooks: the Java broker's clean exit.
  local want=0
  if [[ "$MODE" == java ]]; then want=143; fi
  if (( rc != want )); then
    log "the broker exited with status $rc after SIGTERM (want $want)"
    dump_logs; return 1
  fi
  log "the broker exited $rc after SIGTERM"
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
  local client="$1" type="$2" rc=0 run="$1-$2"
  local reports="$HERE/target/surefire-reports/$BROKER_KIND/$run" clientlogs="$HERE/target/client-logs/$BROKER_KIND/$run"
  rm -rf "$reports" "$clientlogs"
  log "running the suite: $client, $type headers, against $MODE (excluded tags: ${EXCLUDED_GROUPS:-none})"
  # Debian's Maven 3.8.7 prints stray colour resets even in batch mode; strip them.
  mvn -B -q -f "$HERE/pom.xml" -Dstyle.color=never -P"$client" \
    -Drmq.namesrv="127.0.0.1:$NP" -Drmq.serializeType="$type" -Drmq.brokerKind="$BROKER_KIND" \
    -Drmq.brokerLauncher="$WORK/broker-launcher.sh" -Drmq.excludedGroups="$EXCLUDED_GROUPS" \
    -Drmq.image="${IMAGE:-rmq:latest}" -Drmq.grpcEndpoint="127.0.0.1:${GP:-}" -Drmq.oracleOutputs="$ORACLE_OUTPUTS" \
    ${RMQ_JAVA_TESTS:+-Dtest="$RMQ_JAVA_TESTS" -Dsurefire.failIfNoSpecifiedTests=false} test 2>&1 \
    | sed -u 's/\x1b\[[0-9;]*m//g' || rc=$?
  local f
  for f in "$reports"/TEST-*.xml; do
    [[ -e "$f" ]] || continue
    printf '[%s] %s: tests=%s failures=%s errors=%s skipped=%s time=%ss\n' "$run" "$(suite_attr "$f" name)" \
      "$(suite_attr "$f" tests)" "$(suite_attr "$f" failures)" "$(suite_attr "$f" errors)" \
      "$(suite_attr "$f" skipped)" "$(suite_attr "$f" time)"
  done
  local n fail err skip
  n="$(report_sum "$reports" tests)"; fail="$(report_sum "$reports" failures)"
  err="$(report_sum "$reports" errors)"; skip="$(report_sum "$reports" skipped)"
  printf '[%s] Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n' "$run" "$n" "$fail" "$err" "$skip"
  TOTAL_RUN=$((TOTAL_RUN + n)) TOTAL_FAIL=$((TOTAL_FAIL + fail))
  TOTAL_ERR=$((TOTAL_ERR + err)) TOTAL_SKIP=$((TOTAL_SKIP + skip))
  if (( rc != 0 || n == 0 )); then
    log "suite $run failed (mvn status $rc, $n tests reported)"
    if [[ -d "$clientlogs" ]]; then
      log "---- client log ($run, last 100 lines) ----"
      find "$clientlogs" -type f -name '*.log' -exec tail -n 100 {} + || true
    fi
    return 1
  fi
}

# The rmq image under the Testcontainers recipe (profile "container"), when Docker is there.
container_suite() {
  local why
  if [[ "${RMQ_CONTAINER_TESTS:-1}" == 0 ]]; then
    log "container profile SKIPPED: RMQ_CONTAINER_TESTS=0"; return 0
  fi
  if ! why="$(sh "$ROOT/docker/available.sh")"; then
    log "container profile SKIPPED: $why"; return 0
  fi
  log "building the image ${IMAGE:-rmq:latest} (docker/image.sh)"
  IMAGE="${IMAGE:-rmq:latest}" sh "$ROOT/docker/image.sh" || { log "the image did not build"; return 1; }
  run_suite container JSON
}

ORACLE_OUTPUTS="$HERE/target/oracle-outputs"

# After the suite against the Java broker: the same oracle-writing classes against rmq, then a diff of what both
# answered (see the header). Each record directory is <profile>-<headers> (client4-JSON, admin5-JSON, ...): the
# classes that wrote into it run again under that profile and header type. Returns 1 on any difference, or when the
# Java side wrote nothing.
oracle_compare() {
  local java_dir="$ORACLE_OUTPUTS/$BROKER_KIND" rmq_dir="$ORACLE_OUTPUTS/rmq" runs classes run failed=0
  runs="$(cd "$java_dir" 2>/dev/null && ls -d *-* 2>/dev/null || true)"
  if [[ -z "$runs" ]]; then
    log "oracle comparison: the suite against $BROKER_KIND wrote nothing under $java_dir"
    return 1
  fi
  if [[ -z "${RMQ_BIN:-}" ]]; then
    log "building bin/rmq"
    (cd "$ROOT" && go build -o bin/rmq ./cmd/rmq)
    RMQ_BIN="$ROOT/bin/rmq"
  fi
  local kind="$BROKER_KIND"
  MODE=rmq BROKER_KIND=rmq
  pick_ports
  start_rmq "$WORK/rmq-store"
  local groups="$EXCLUDED_GROUPS" first_type
  first_type="$(set -- $TYPES; echo "$1")"
  for run in $runs; do
    classes="$(cd "$java_dir/$run" && ls | sed -n 's/^\([A-Za-z0-9]*\)\..*\.txt$/\1/p' | sort -u | paste -sd, -)"
    log "oracle comparison: running $classes ($run) against rmq"
    # The same tags as the Java run of this directory (main): one-header-type tests only under the first type.
    EXCLUDED_GROUPS="$groups"
    if [[ "${run##*-}" != "$first_type" ]]; then EXCLUDED_GROUPS="${groups:+$groups,}one-header-type"; fi
    RMQ_JAVA_TESTS="$classes" run_suite "${run%-*}" "${run##*-}" || failed=1
  done
  EXCLUDED_GROUPS="$groups"
  stop_broker || failed=1
  MODE=java BROKER_KIND="$kind"
  log "oracle comparison: diff -ru $java_dir $rmq_dir"
  if ! diff -ru "$java_dir" "$rmq_dir"; then
    log "oracle comparison: rmq answered differently from $BROKER_KIND (diff above: - Java, + rmq)"
    failed=1
  else
    log "oracle comparison: $(find "$java_dir" -name '*.txt' | wc -l) answers identical"
  fi
  return "$failed"
}

main() {
  ensure_jdk_and_maven
  export MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m}"
  WORK="$(mktemp -d -t rmq-java-it.XXXXXX)"
  pick_ports

  BROKER_KIND=rmq
  if [[ "$MODE" == java ]]; then BROKER_KIND="java-$ORACLE_VERSION"; fi
  if [[ "$MODE" == rmq ]]; then
    if [[ -z "${RMQ_BIN:-}" ]]; then
      command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }
      log "building bin/rmq"
      (cd "$ROOT" && go build -o bin/rmq ./cmd/rmq)
      RMQ_BIN="$ROOT/bin/rmq"
    fi
    # Timer tests need the 5.x timer wired into the broker.
    if grep -q timerHook "$ROOT/broker/lifecycle.go" 2>/dev/null; then EXCLUDED_GROUPS=""; else EXCLUDED_GROUPS="timer"; fi
    start_rmq
  else
    case "$ORACLE_VERSION" in
      4.*) EXCLUDED_GROUPS="timer" ;;  # a 4.x broker ignores TIMER_* and delivers at once
      *) EXCLUDED_GROUPS="" ;;
    esac
    start_java
    rm -rf "$ORACLE_OUTPUTS/$BROKER_KIND" "$ORACLE_OUTPUTS/rmq"
  fi
  EXCLUDED_GROUPS="${RMQ_JAVA_EXCLUDED_GROUPS-$EXCLUDED_GROUPS}"

  local failed=0 client type
  for client in $CLIENTS; do
    if [[ "$client" == grpc5 ]]; then
      [[ "$MODE" == rmq ]] || continue
      run_suite "$client" "$(set -- $TYPES; echo "$1")" || failed=1
      continue
    fi
    if [[ "$client" == admin5 ]]; then
      [[ "$MODE" == rmq || "$ORACLE_VERSION" == 5.* ]] || continue
      run_suite "$client" "$(set -- $TYPES; echo "$1")" || failed=1
      continue
    fi
    local first_type=1 groups="$EXCLUDED_GROUPS"
    for type in $TYPES; do
      EXCLUDED_GROUPS="$groups"
      if (( ! first_type )); then EXCLUDED_GROUPS="${groups:+$groups,}one-header-type"; fi
      first_type=0
      run_suite "$client" "$type" || failed=1
    done
    EXCLUDED_GROUPS="$groups"
  done
  stop_broker || failed=1
  if [[ "$MODE" == rmq ]]; then container_suite || failed=1; else oracle_compare || failed=1; fi

  if (( failed )); then dump_logs; fi
  printf 'Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n' \
    "$TOTAL_RUN" "$TOTAL_FAIL" "$TOTAL_ERR" "$TOTAL_SKIP"
  if (( failed )); then
    log "FAILED"
    exit 1
  fi
  log "OK"
}

main "$@"
