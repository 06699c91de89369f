#!/usr/bin/env bash
# AutoSwitch interop, the other direction: an rmq broker in controller mode (store/ha/autoswitch's Service behind
# the broker's controller wiring) is elected master by the stock 5.3.3 controller; stock mqadmin sends it a
# message; then a Java 5.3.3 broker of the same broker set joins, is made its slave by the controller, learns the
# rmq master's HA address from the name server and replicates over the AutoSwitch frames: its commitlog must hold
# the message, its epochFileCheckpoint must equal the rmq master's, and after a second send its sync state set
# (stock mqadmin getSyncStateSet) holds both brokers and its commitlog the second message.
#
# With the argument empty-term instead: the Java broker starts first and is elected master of epoch 1; the rmq
# broker follows it (its epoch file records epoch 1 from the master's heartbeat) and joins its sync state set;
# the Java master is killed (-9) before any message, so epoch 1 is an empty term, and the controller elects the
# rmq broker (epoch 2, at offset 0). The Java broker restarts over its store and epoch file [1-0] as the rmq
# master's slave: its doTruncate must find a consistent point in the rmq master's handshake table (the rmq
# master keeps the empty 1-0 next to 2-0, as a stock master keeps 1-0), then replicate a message sent after
# and rejoin the sync state set (issue 45; before the fix it retried "no consistent point" forever).
#
# Needs RMQ_BIN: an rmq binary whose broker wires controller mode (helper B's ctl-broker with ctl-ha merged).
# Jars: integration/java/target/controller-oracle-5.3.3/lib (fetched as autoswitch-java-master.sh does).
# Bounded: waits have $WAIT (90) s deadlines; every process (JVMs -Xmx384m or less) is killed on exit.
set -euo pipefail
WAIT="${WAIT:-90}" # seconds each wait may take (a loaded machine boots JVMs slowly)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${RMQ_BIN:?set RMQ_BIN to an rmq binary with controller mode wired}"
LIB="${LIB:-$HERE/target/controller-oracle-5.3.3/lib}"
if ! ls "$LIB"/rocketmq-controller-*.jar >/dev/null 2>&1; then
  mvn -B -q -f "$HERE/controller-oracle-pom.xml" -Dstyle.color=never \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
fi
WORK=$(mktemp -d /tmp/autoswitch-slave-interop.XXXXXX); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  [[ -n "${KEEP:-}" ]] || rm -rf "$WORK"; }
trap cleanup EXIT
JOPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED)
H="$WORK/home"; mkdir -p "$H/conf"; echo '<configuration><root level="WARN"/></configuration>' >"$H/conf/logback.xml"
for f in rmq_controller_logback.xml rmq.controller.logback.xml rmq.namesrv.logback.xml rmq.broker.logback.xml rmq.tools.logback.xml; do cp "$H/conf/logback.xml" "$H/conf/$f"; done
jr() { local out="$1"; shift; ROCKETMQ_HOME="$H" java -Xms64m -Xmx384m -XX:MaxDirectMemorySize=256m "${JOPENS[@]}" -Duser.home="$H" -Drocketmq.client.logRoot="$WORK/logs" -cp "$LIB/*" "$@" >"$out" 2>&1 & PIDS+=("$!"); }
waitf() { local end=$((SECONDS+WAIT)); until grep -q "$2" "$1" 2>/dev/null; do (( SECONDS < end )) || { echo "timeout $1"; tail -20 "$1"; exit 1; }; sleep 0.3; done; }
port_taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
while :; do NP=$((20000 + RANDOM % 8000)); CP=$((NP+7)); RP=$((NP+20)); JP=$((NP+30))
  port_taken $NP || port_taken $CP || port_taken $RP || port_taken $((RP+1)) || port_taken $((RP-2)) ||
    port_taken $JP || port_taken $((JP+1)) || port_taken $((JP-2)) || break; done
printf 'listenPort=%s\nrocketmqHome=%s\n' $NP "$H" > $WORK/ns.conf
jr $WORK/ns.out org.apache.rocketmq.namesrv.NamesrvStartup -c $WORK/ns.conf
printf 'controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%s\ncontrollerDLegerSelfId=n0\ncontrollerStorePath=%s\nrocketmqHome=%s\n' $CP $WORK/ctl "$H" > $WORK/ctl.conf
jr $WORK/ctl.out org.apache.rocketmq.controller.ControllerStartup -c $WORK/ctl.conf
waitf $WORK/ns.out 'boot success'; waitf $WORK/ctl.out 'boot success'
conf() { # conf PORT STORE: one broker of broker-a in controller mode
cat <<C
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=-1
brokerRole=SLAVE
enableControllerMode=true
controllerAddr=127.0.0.1:$CP
namesrvAddr=127.0.0.1:$NP
listenPort=$1
haListenPort=$(($1+1))
brokerIP1=127.0.0.1
storePathRootDir=$2
storePathCommitLog=$2/commitlog
rocketmqHome=$H
mappedFileSizeCommitLog=67108864
autoCreateTopicEnable=true
allAckInSyncStateSet=true
C
}
conf $RP $WORK/rmq > $WORK/rmq.conf
admin() { ROCKETMQ_HOME="$H" timeout 60 java -Xmx128m -Duser.home="$H" -cp "$LIB/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@"; }
send() { # send BODY until SEND_OK
  local end=$((SECONDS+WAIT))
  until admin sendMessage -n 127.0.0.1:$NP -t AswTopic -p "$1" > $WORK/send.out 2>&1 && grep -q SEND_OK $WORK/send.out; do
    (( SECONDS < end )) || { echo "send failed"; tail $WORK/send.out; tail -30 $WORK/rmq.out; exit 1; }; sleep 1; done
  grep SEND_OK $WORK/send.out | head -1
}
holds() { # holds BODY: the Java slave's commitlog has it
  local end=$((SECONDS+WAIT))
  until ls $WORK/java/commitlog/0* >/dev/null 2>&1 && grep -q -a "$1" $WORK/java/commitlog/0*; do
    (( SECONDS < end )) || { echo "the Java slave lacks $1"; ls -la $WORK/java $WORK/java/commitlog 2>&1; tail -30 $WORK/rmq.out; exit 1; }; sleep 0.5; done
  echo "the Java slave holds $1"
}
sss() { # sss PATTERN: wait until stock mqadmin getSyncStateSet's output matches PATTERN (grep -E)
  local end=$((SECONDS+WAIT))
  until admin getSyncStateSet -a 127.0.0.1:$CP -b broker-a > $WORK/sss.out 2>&1 && grep -Eq "$1" $WORK/sss.out; do
    (( SECONDS < end )) || { echo "sync state set never matched $1"; cat $WORK/sss.out; tail -30 $WORK/rmq.out; exit 1; }; sleep 1; done
  grep -E "^#Master|SyncStateSetNums" $WORK/sss.out | tr '\n' ' '; echo
}
if [[ "${1:-}" == empty-term ]]; then
  conf $JP $WORK/java > $WORK/java.conf
  jr $WORK/java.out org.apache.rocketmq.broker.BrokerStartup -c $WORK/java.conf; JPID=${PIDS[-1]}
  waitf $WORK/java.out 'boot success'
  sss "#MasterAddr[[:space:]]+127.0.0.1:$JP"
  "$RMQ_BIN" broker -c $WORK/rmq.conf --log-level info > $WORK/rmq.out 2>&1 & PIDS+=("$!")
  sss 'SyncStateSetNums[[:space:]]*2'
  end=$((SECONDS+WAIT)) # the Java master's heartbeat names epoch 1 (after haSendHeartbeatInterval, 5 s)
  until grep -qx '1-0' $WORK/rmq/epochFileCheckpoint 2>/dev/null; do
    (( SECONDS < end )) || { echo "the rmq slave never recorded epoch 1"; cat $WORK/rmq/epochFileCheckpoint; exit 1; }; sleep 0.5; done
  kill -9 $JPID; echo "killed the Java master of epoch 1 before any message"
  sss "#MasterAddr[[:space:]]+127.0.0.1:$RP"
  echo "rmq master epochs:"; cat $WORK/rmq/epochFileCheckpoint; echo ---
  echo "Java old master epochs:"; cat $WORK/java/epochFileCheckpoint; echo ---
  jr $WORK/java2.out org.apache.rocketmq.broker.BrokerStartup -c $WORK/java.conf
  waitf $WORK/java2.out 'boot success'
  send after-the-empty-term
  holds after-the-empty-term
  sss 'SyncStateSetNums[[:space:]]*2'
  send after-the-rejoin
  holds after-the-rejoin
  echo "Java slave epochs:"; cat $WORK/java/epochFileCheckpoint; echo ---
  echo "PASS: a Java 5.3.3 old master of an empty term rejoined the rmq master and replicated"
  exit 0
fi
"$RMQ_BIN" broker -c $WORK/rmq.conf --log-level info > $WORK/rmq.out 2>&1 & PIDS+=("$!")
send rmq-master-epoch-one
echo "rmq master epochs:"; cat $WORK/rmq/epochFileCheckpoint; echo ---
conf $JP $WORK/java > $WORK/java.conf
jr $WORK/java.out org.apache.rocketmq.broker.BrokerStartup -c $WORK/java.conf
waitf $WORK/java.out 'boot success'
holds rmq-master-epoch-one
end=$((SECONDS+WAIT))
until cmp -s $WORK/rmq/epochFileCheckpoint $WORK/java/epochFileCheckpoint; do
  (( SECONDS < end )) || { echo "epoch files differ"; cat $WORK/rmq/epochFileCheckpoint $WORK/java/epochFileCheckpoint; exit 1; }; sleep 0.5; done
echo "epoch files equal:"; cat $WORK/java/epochFileCheckpoint; echo ---
# The rmq master proposes the Java slave into its sync state set once it caught up; the controller accepts it.
end=$((SECONDS+WAIT))
until admin getSyncStateSet -a 127.0.0.1:$CP -b broker-a > $WORK/sss.out 2>&1 && grep -q 'SyncStateSetNums[[:space:]]*2' $WORK/sss.out; do
  (( SECONDS < end )) || { echo "sync state set not expanded"; cat $WORK/sss.out; tail -30 $WORK/rmq.out; exit 1; }; sleep 1; done
grep -v "logback\|^\$\|^[0-9:,]* |-INFO" $WORK/sss.out
send rmq-master-epoch-one-second
holds rmq-master-epoch-one-second
echo "PASS: a Java 5.3.3 slave replicated from the rmq master"
