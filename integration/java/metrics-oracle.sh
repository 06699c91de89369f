#!/usr/bin/env bash
# Metrics oracle (make java-oracle): the stock Java 5.3.3 name server and broker with metricsExporterType=PROM on
# loopback, the traffic of metrics/traffic_test.go (sends, a pull, a DLQ send back, a delay-level and a timer
# message, a committed and a rolled back transaction, a pop and its ack) so that the lazily created instruments
# appear, a scrape of its /metrics, then the same traffic through rmq and a diff of the metric names and label
# names (TestJavaMetricsOracle). It fails when a Java series is missing from rmq, apart from the deliberate
# exceptions listed (with their reasons) in metrics/oracle_test.go.
#
#   METRICS_ORACLE_UPDATE=1   also rewrites metrics/testdata/java-5.3.3-metrics.txt, the scrape `make test` checks
#                             rmq against (TestServesEveryJavaMetric)
#
# Jars: rocketmq-namesrv and rocketmq-broker 5.3.3 with their runtime dependencies, fetched once with
# oracle-pom.xml into target/oracle-5.3.3/lib (as run.sh --oracle does). Bounded: 60 s for each boot, 120 s for
# the Go test.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel)"
VERSION=5.3.3
LIB="$HERE/target/oracle-$VERSION/lib"
BOOT_DEADLINE_S=60
WORK="$(mktemp -d)"
PIDS=()

log() { printf '[metrics-oracle] %s\n' "$*"; }

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
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# wait_for FILE PATTERN PID WHAT
wait_for() {
  local end=$((SECONDS + BOOT_DEADLINE_S))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ! kill -0 "$3" 2>/dev/null; then log "$4 exited before '$2'"; tail -50 "$1" "$1.err" 2>/dev/null; exit 1; fi
    if (( SECONDS >= end )); then log "$4 did not print '$2' within ${BOOT_DEADLINE_S}s"; tail -50 "$1"; exit 1; fi
    sleep 0.2
  done
}

if ! ls "$LIB"/rocketmq-broker-*.jar >/dev/null 2>&1; then
  log "fetching rocketmq-namesrv and rocketmq-broker $VERSION from Maven Central"
  mvn -B -q -f "$HERE/oracle-pom.xml" -Dstyle.color=never -Doracle.version="$VERSION" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB"
fi

NP="$(free_port)"; BP="$(free_port)"; MP="$(free_port)"
HOME_DIR="$WORK/home"; mkdir -p "$HOME_DIR/conf" "$WORK/store"
cat >"$HOME_DIR/conf/logback.xml" <<EOF
<configuration><root level="WARN"/></configuration>
EOF
printf 'listenPort=%s\nrocketmqHome=%s\n' "$NP" "$HOME_DIR" >"$WORK/namesrv.conf"
cat >"$WORK/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
namesrvAddr=127.0.0.1:$NP
listenPort=$BP
brokerIP1=127.0.0.1
storePathRootDir=$WORK/store
storePathCommitLog=$WORK/store/commitlog
rocketmqHome=$HOME_DIR
autoCreateTopicEnable=true
timerWheelEnable=true
mappedFileSizeCommitLog=67108864
metricsExporterType=PROM
metricsPromExporterHost=127.0.0.1
metricsPromExporterPort=$MP
EOF

OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED)
log "starting the Java $VERSION name server on 127.0.0.1:$NP"
ROCKETMQ_HOME="$HOME_DIR" java -Xms128m -Xmx256m -Duser.home="$HOME_DIR" -cp "$LIB/*" \
  org.apache.rocketmq.namesrv.NamesrvStartup -c "$WORK/namesrv.conf" >"$WORK/namesrv.out" 2>&1 &
PIDS+=("$!")
wait_for "$WORK/namesrv.out" 'boot success' "$!" "Java name server"
log "starting the Java $VERSION broker on 127.0.0.1:$BP, /metrics on 127.0.0.1:$MP"
ROCKETMQ_HOME="$HOME_DIR" java -Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m "${OPENS[@]}" -Duser.home="$HOME_DIR" \
  -cp "$LIB/*" org.apache.rocketmq.broker.BrokerStartup -c "$WORK/broker.conf" >"$WORK/broker.out" 2>&1 &
PIDS+=("$!")
wait_for "$WORK/broker.out" 'boot success' "$!" "Java broker"

OUT="$WORK/java-$VERSION-metrics.txt"
log "driving traffic, scraping both brokers and diffing (go test ./metrics -run TestJavaMetricsOracle)"
rc=0
(cd "$ROOT" && RMQ_METRICS_ORACLE_BROKER="127.0.0.1:$BP" RMQ_METRICS_ORACLE_URL="http://127.0.0.1:$MP/metrics" \
  RMQ_METRICS_ORACLE_OUT="$OUT" go test ./metrics -run '^TestJavaMetricsOracle$' -count=1 -timeout 120s -v) || rc=$?
if [[ -s "$OUT" ]]; then
  log "Java series: $(grep -vc '^#' "$OUT")"
  if [[ -n "${METRICS_ORACLE_UPDATE:-}" ]]; then
    cp "$OUT" "$ROOT/metrics/testdata/java-$VERSION-metrics.txt"
    log "wrote metrics/testdata/java-$VERSION-metrics.txt"
  elif ! diff -u "$ROOT/metrics/testdata/java-$VERSION-metrics.txt" "$OUT"; then
    log "the Java scrape differs from metrics/testdata/java-$VERSION-metrics.txt (METRICS_ORACLE_UPDATE=1 rewrites it)"
  fi
fi
exit "$rc"
