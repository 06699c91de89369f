#!/usr/bin/env bash
# Controller oracle (make controller-oracle): two Java 5.3.3 brokers in controller mode (one broker set,
# enableControllerMode=true, allAckInSyncStateSet=true) register with a controller, one becomes master and the
# other an in-sync slave; stock mqadmin 5.3.3 getControllerMetaData, getSyncStateSet, getBrokerEpoch and
# electMaster run against it; then the master is killed (-9) and the slave must take over. The same run is made
# with three controllers in turn:
#
#   stock  the stock rocketmq-controller 5.3.3 (ControllerStartup, one DLedger peer)
#   rmq    `rmq controller`, one node
#   rmq3   `rmq controller`, three nodes; the leading controller node is killed before the broker failover
#
# and, with CONTROLLER_ORACLE_PHASES naming them (make controller-mixed), mixed broker sets: the first broker is
# an rmq broker in controller mode (`rmq broker -c` on the same broker.conf), the second a Java one:
#
#   stock-mixed  under the stock controller
#   rmq-mixed    under `rmq controller`, one node
#
# There the rmq broker is elected first and the Java broker joins its sync state set as a slave (a Java slave
# of an rmq master: the AutoSwitch handshake, epochs and transfer); electMaster makes the Java broker master
# and the rmq broker its in-sync slave (an rmq slave of a Java master); messages sent to each master reach the
# other broker's commitlog; the Java master's kill -9 makes the rmq broker master again.
#
# mqadmin's outputs are normalized (ports to role names, the leader id) and each rmq run's are diffed against
# the stock run's; a difference fails the script. Figures: time from the first broker's start to its election,
# from the second's to a sync state set of two, from the master's kill -9 to the new master.
#
# Jars: target/controller-oracle-5.3.3/lib from Maven Central (controller-oracle-pom.xml), as run.sh does.
# Bounded: every wait has a deadline (WAIT_S, default 90 s); every JVM (-Xmx256m..512m) is killed on exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
LIB="$HERE/target/controller-oracle-5.3.3/lib"
WAIT_S="${WAIT_S:-90}"
PHASES="${CONTROLLER_ORACLE_PHASES:-stock rmq rmq3}"
WORK="$(mktemp -d /tmp/controller-oracle.XXXXXX)"
PIDS=()

log() { printf '[controller-oracle] %s\n' "$*"; }

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -z "${KEEP_WORK:-}" ]]; then rm -rf "$WORK"; else log "work dir kept: $WORK"; fi
}
trap cleanup EXIT

if ! ls "$LIB"/rocketmq-controller-*.jar >/dev/null 2>&1; then
  log "fetching rocketmq-controller, -namesrv, -broker and -tools 5.3.3 from Maven Central"
  mvn -B -q -f "$HERE/controller-oracle-pom.xml" -Dstyle.color=never \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
fi
log "building rmq"
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/rmq" ./cmd/rmq)
RMQ="$WORK/bin/rmq"

# Ports below the ephemeral range; a broker needs p-2 (VIP) and p+1 (HA) free as well.
port_taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
USED=" "
pick_port() {
  local p
  while :; do
    p=$((12000 + RANDOM % 18000))
    [[ "$USED" == *" $p "* || "$USED" == *" $((p - 2)) "* || "$USED" == *" $((p + 1)) "* ]] && continue
    port_taken "$p" || port_taken "$((p - 2))" || port_taken "$((p + 1))" || { USED+="$p $((p - 2)) $((p + 1)) "; echo "$p"; return; }
  done
}

now_ms() { date +%s%3N; }

# wait_for FILE PATTERN PID WHAT
wait_for() {
  local end=$((SECONDS + WAIT_S))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ! kill -0 "$3" 2>/dev/null; then log "$4 exited before '$2'"; tail -30 "$1"; exit 1; fi
    if (( SECONDS >= end )); then log "$4 did not print '$2' within ${WAIT_S}s"; tail -30 "$1"; exit 1; fi
    sleep 0.2
  done
}

JOPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED)

HOME_DIR="$WORK/home"; mkdir -p "$HOME_DIR/conf"
echo '<configuration><root level="WARN"/></configuration>' >"$HOME_DIR/conf/logback.xml"
for f in rmq_controller_logback.xml rmq.controller.logback.xml rmq.namesrv.logback.xml rmq.broker.logback.xml rmq.tools.logback.xml; do
  cp "$HOME_DIR/conf/logback.xml" "$HOME_DIR/conf/$f"
done

java_run() { # java_run OUT MAINCLASS ARGS...: a JVM in the background
  local out="$1"; shift
  ROCKETMQ_HOME="$HOME_DIR" java -Xms64m -Xmx384m -XX:MaxDirectMemorySize=256m "${JOPENS[@]}" -Duser.home="$HOME_DIR" \
    -Drocketmq.client.logRoot="$WORK/logs" -cp "$LIB/*" "$@" >"$out" 2>&1 &
  PIDS+=("$!")
}

# mqadmin ARGS...: stock mqadmin 5.3.3; logback's status lines (it prints them to stdout) are dropped.
mqadmin() {
  ROCKETMQ_HOME="$HOME_DIR" timeout 60 java -Xms32m -Xmx128m -Duser.home="$HOME_DIR" -Drocketmq.client.logRoot="$WORK/logs" \
    -cp "$LIB/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@" 2>&1 | grep -v -E '^[0-9:,]+ \|-|^$|^\s+at '
}

# sort_epoch_blocks: getBrokerEpoch prints one block per broker in HashSet order (of the addresses, which differ
# from run to run); once the addresses are role names, sort its blocks.
sort_epoch_blocks() {
  python3 -c '
import sys
out = []
for sec in sys.stdin.read().split("## "):
    if sec.startswith("getBrokerEpoch\n"):
        head, _, rest = sec.partition("\n")
        blocks = ["#clusterName" + b for b in rest.split("#clusterName")[1:]]
        sec = head + "\n" + "".join(sorted(blocks))
    out.append(sec)
print("## ".join(out), end="")'
}

# until_ok WHAT CMD...: run CMD until it succeeds, within WAIT_S.
until_ok() {
  local what="$1" end=$((SECONDS + WAIT_S)); shift
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS >= end )); then log "timed out after ${WAIT_S}s waiting for: $what"; "$@" || true; exit 1; fi
    sleep 0.3
  done
}

sync_state() { "$RMQ" admin getSyncStateSet -a "$CTL_FIRST" -b broker-a 2>/dev/null; }
has_master() { sync_state | grep -q $'#MasterBrokerId\t'"$1"'$'; }
has_sync_nums() { sync_state | grep -q $'#SyncStateSetNums\t'"$1"'$'; }
master_is_and_alone() { local s; s="$(sync_state)"; grep -q $'#MasterBrokerId\t'"$1"'$' <<<"$s" && grep -q $'#MasterEpoch\t'"$2"'$' <<<"$s"; }

start_broker() { # start_broker NAME PORT
  local dir="$PHASE_DIR/$1"; mkdir -p "$dir"
  cat >"$dir/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=-1
brokerRole=SLAVE
enableControllerMode=true
controllerAddr=$CTL_ADDRS
namesrvAddr=127.0.0.1:$NP
allAckInSyncStateSet=true
listenPort=$2
haListenPort=$(($2 + 1))
brokerIP1=127.0.0.1
storePathRootDir=$dir/store
storePathCommitLog=$dir/store/commitlog
rocketmqHome=$HOME_DIR
mappedFileSizeCommitLog=67108864
EOF
  if [[ "$PHASE" == *-mixed && "$1" == b0 ]]; then
    echo 'enableGrpc=false' >>"$dir/broker.conf" # the 5.x gRPC port (8081) may be another run's
    "$RMQ" broker -c "$dir/broker.conf" --log-level "${RMQ_LOG_LEVEL:-warn}" >"$dir/out" 2>&1 &
    PIDS+=("$!")
  else
    java_run "$dir/out" org.apache.rocketmq.broker.BrokerStartup -c "$dir/broker.conf"
  fi
  eval "PID_$1=$!"
}

# max_offset PORT: the broker's commitlog max offset as GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus) reports it.
max_offset() { mqadmin brokerStatus -b "127.0.0.1:$1" | sed -n 's/^commitLogMaxOffset *: *//p'; }

# send_and_check MASTER_PORT SLAVE_PORT N: N messages to the master (mqadmin sendMessage), then the slave's
# commitlog reaches the master's end.
send_and_check() {
  local i m s end=$((SECONDS + WAIT_S))
  for ((i = 0; i < $3; i++)); do
    mqadmin sendMessage -n "127.0.0.1:$NP" -t MixedT -p "m$i" -b broker-a | grep -q SEND_OK || { log "send $i to the master failed"; exit 1; }
  done
  m="$(max_offset "$1")"
  until s="$(max_offset "$2")"; [[ -n "$m" && "$s" == "$m" ]]; do
    if (( SECONDS >= end )); then log "slave at $s, master at $m after ${WAIT_S}s"; exit 1; fi
    sleep 0.5
  done
  log "$PHASE: $3 messages sent to 127.0.0.1:$1, replicated to 127.0.0.1:$2 (commitlog end $m)"
}

normalize() { # normalize FILE: ports to roles, for the diff
  sed -e "s/127\.0\.0\.1:$B0\b/<broker-1>/g; s/127\.0\.0\.1:$B1\b/<broker-2>/g; s/127\.0\.0\.1:$NP\b/<namesrv>/g" \
      -e "s/#ControllerLeaderId\tn[0-9]/#ControllerLeaderId\t<leader>/" \
      -e "s/#ControllerLeaderAddress\t.*/#ControllerLeaderAddress\t<leader-addr>/" \
      -e '/^#Peer:/d' \
      -e 's/startOffset=[0-9]*/startOffset=<o>/g; s/endOffset=[0-9]*/endOffset=<o>/g' "$1" | sort_epoch_blocks
}

run_phase() {
  PHASE="$1"; PHASE_DIR="$WORK/$PHASE"; mkdir -p "$PHASE_DIR"
  log "== phase $PHASE"
  NP="$(pick_port)"
  printf 'listenPort=%s\nrocketmqHome=%s\n' "$NP" "$HOME_DIR" >"$PHASE_DIR/namesrv.conf"
  java_run "$PHASE_DIR/namesrv.out" org.apache.rocketmq.namesrv.NamesrvStartup -c "$PHASE_DIR/namesrv.conf"
  wait_for "$PHASE_DIR/namesrv.out" 'boot success' "$!" "Java name server"

  CTL_PIDS=()
  case "$PHASE" in
    stock|stock-mixed)
      local cp; cp="$(pick_port)"
      printf 'controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%s\ncontrollerDLegerSelfId=n0\ncontrollerStorePath=%s\nrocketmqHome=%s\n' \
        "$cp" "$PHASE_DIR/ctl" "$HOME_DIR" >"$PHASE_DIR/controller.conf"
      java_run "$PHASE_DIR/controller.out" org.apache.rocketmq.controller.ControllerStartup -c "$PHASE_DIR/controller.conf"
      CTL_PIDS+=("$!")
      wait_for "$PHASE_DIR/controller.out" 'boot success' "$!" "stock controller"
      CTL_ADDRS="127.0.0.1:$cp"
      ;;
    rmq|rmq3|rmq-mixed)
      local n=1 i peers="" addrs=""; [[ "$PHASE" == rmq3 ]] && n=3
      local -a lp
      for ((i = 0; i < n; i++)); do
        peers+="n$i-127.0.0.1:$(pick_port);"; lp[i]="$(pick_port)"; addrs+="127.0.0.1:${lp[i]};"
      done
      for ((i = 0; i < n; i++)); do
        printf 'controllerDLegerGroup=group1\ncontrollerDLegerPeers=%s\ncontrollerDLegerSelfId=n%s\ncontrollerStorePath=%s\nlistenPort=%s\nbindAddress=127.0.0.1\n' \
          "${peers%;}" "$i" "$PHASE_DIR/ctl$i" "${lp[i]}" >"$PHASE_DIR/controller$i.conf"
        "$RMQ" controller -c "$PHASE_DIR/controller$i.conf" --log-level warn >"$PHASE_DIR/controller$i.out" 2>&1 &
        PIDS+=("$!"); CTL_PIDS+=("$!")
        wait_for "$PHASE_DIR/controller$i.out" 'boot success' "$!" "rmq controller n$i"
      done
      CTL_ADDRS="${addrs%;}"
      ;;
  esac
  CTL_FIRST="${CTL_ADDRS%%;*}"
  until_ok "a controller leader" bash -c "'$RMQ' admin getControllerMetaData -a '$CTL_FIRST' | grep -q 'LeaderAddress.127'"

  B0="$(pick_port)"; B1="$(pick_port)"
  local t0 t1 t2
  t0="$(now_ms)"; start_broker b0 "$B0"
  until_ok "broker 1 elected master" has_master 1
  t1="$(now_ms)"; ELECT_MS=$((t1 - t0))
  start_broker b1 "$B1"
  until_ok "broker 2 in the sync state set" has_sync_nums 2
  t2="$(now_ms)"; SYNC_MS=$((t2 - t1))
  if [[ "$PHASE" == *-mixed ]]; then
    mqadmin updateTopic -n "127.0.0.1:$NP" -c DefaultCluster -t MixedT >/dev/null
    send_and_check "$B0" "$B1" 3 # a Java slave of an rmq master
  fi

  local out="$PHASE_DIR/mqadmin.txt"
  : >"$out"
  { echo "## getControllerMetaData"; mqadmin getControllerMetaData -a "$CTL_FIRST"
    echo "## getSyncStateSet"; mqadmin getSyncStateSet -a "$CTL_FIRST" -b broker-a
    echo "## getBrokerEpoch"; mqadmin getBrokerEpoch -n "127.0.0.1:$NP" -b broker-a
    echo "## electMaster 2"; mqadmin electMaster -a "$CTL_FIRST" -c DefaultCluster -bn broker-a -b 2 || echo "(failed)"
  } >>"$out"
  until_ok "broker 2 master after electMaster" master_is_and_alone 2 2
  until_ok "broker 1 back in the sync state set" has_sync_nums 2
  if [[ "$PHASE" == *-mixed ]]; then
    send_and_check "$B1" "$B0" 3 # an rmq slave of a Java master
  fi
  { echo "## getSyncStateSet after electMaster"; mqadmin getSyncStateSet -a "$CTL_FIRST" -b broker-a
    echo "## electMaster 2 again (the master: refused)"
    mqadmin electMaster -a "$CTL_FIRST" -c DefaultCluster -bn broker-a -b 2 | grep -o 'CODE: [0-9]*' | head -1
  } >>"$out"

  if [[ "$PHASE" == rmq3 ]]; then
    local leader idx
    leader="$("$RMQ" admin getControllerMetaData -a "$CTL_FIRST" | sed -n 's/^#ControllerLeaderId\tn//p')"
    idx="$leader"
    log "killing the leading controller node n$idx (kill -9)"
    kill -9 "${CTL_PIDS[$idx]}"
    CTL_FIRST="$(echo "$CTL_ADDRS" | tr ';' '\n' | sed -n "$(( (idx + 1) % 3 + 1 ))p")"
    until_ok "a new controller leader" bash -c "'$RMQ' admin getControllerMetaData -a '$CTL_FIRST' | grep -q 'LeaderId.n'"
    # A leader serves once it has applied its predecessors' entries (until then it answers 2007, and, as stock, it
    # leaves a broker that goes inactive to its next scan of inactive masters).
    until_ok "the new controller leader serving" has_master 2
  fi

  local tk tn
  tk="$(now_ms)"; kill -9 "$PID_b1"
  until_ok "broker 1 master after broker 2's kill -9" master_is_and_alone 1 3
  tn="$(now_ms)"; FAILOVER_MS=$((tn - tk))
  { echo "## getSyncStateSet after kill -9 of the master"; mqadmin getSyncStateSet -a "$CTL_FIRST" -b broker-a; } >>"$out"

  normalize "$out" >"$PHASE_DIR/normalized.txt"
  log "$PHASE: first election ${ELECT_MS} ms after the broker's start; sync state set of two ${SYNC_MS} ms after the slave's; new master ${FAILOVER_MS} ms after kill -9"
  FIGURES+=("$PHASE elect=${ELECT_MS}ms sync=${SYNC_MS}ms failover=${FAILOVER_MS}ms")
  { local p; for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait; } 2>/dev/null || true
  PIDS=()
}

FIGURES=()
rc=0
for ph in $PHASES; do run_phase "$ph"; done
log "stock mqadmin against the stock controller:"; sed 's/^/    /' "$WORK/stock/mqadmin.txt" 2>/dev/null || true
for ph in $PHASES; do
  [[ "$ph" == stock || ! -d "$WORK/stock" ]] && continue
  if diff -u "$WORK/stock/normalized.txt" "$WORK/$ph/normalized.txt"; then
    log "$ph: mqadmin answers as against the stock controller"
  else
    log "$ph: mqadmin's answers differ from the stock controller's (above)"; rc=1
  fi
done
for f in "${FIGURES[@]}"; do log "figures: $f"; done
exit "$rc"
