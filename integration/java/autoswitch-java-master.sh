#!/usr/bin/env bash
# AutoSwitch interop (store/ha/autoswitch): a Java 5.3.3 broker in controller mode (stock name server and stock
# controller 5.3.3, one broker set) is elected master; stock mqadmin sends it a message; the broker is killed
# (-9) and restarted, elected again with epoch 2, and sent a second message; then
# store/ha/autoswitch's TestJavaMaster connects to its HA port as a new slave with this package's frames
# (handshake, report 0), decodes the master's epoch table and the transfer frames, checks their epochs against
# the chunks TransferCursor predicts (cut at the epoch boundary), and replicates the master's whole commitlog
# (which must hold both messages). The master's
# epochFileCheckpoint is printed (testdata/java-5.3.3/epoch-live-master is one).
# Then TestJavaMasterService runs the package's Service as an rmq slave (real store) of that Java master: handshake,
# epoch table, replication, the slave's epoch file equal to the master's table and both messages in its consume
# queues (let through by the confirm offset the master sends).
#
# Jars: integration/java/target/controller-oracle-5.3.3/lib (fetched as controller-oracle.sh does).
# Bounded: waits have 90 s deadlines; every JVM (-Xmx384m or less) is killed on exit.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
LIB="${LIB:-$HERE/target/controller-oracle-5.3.3/lib}"
if ! ls "$LIB"/rocketmq-controller-*.jar >/dev/null 2>&1; then
  mvn -B -q -f "$HERE/controller-oracle-pom.xml" -Dstyle.color=never \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
fi
WORK=$(mktemp -d /tmp/autoswitch-interop.XXXXXX); PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
JOPENS=(--add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED)
H="$WORK/home"; mkdir -p "$H/conf"; echo '<configuration><root level="WARN"/></configuration>' >"$H/conf/logback.xml"
for f in rmq_controller_logback.xml rmq.controller.logback.xml rmq.namesrv.logback.xml rmq.broker.logback.xml rmq.tools.logback.xml; do cp "$H/conf/logback.xml" "$H/conf/$f"; done
jr() { local out="$1"; shift; ROCKETMQ_HOME="$H" java -Xms64m -Xmx384m -XX:MaxDirectMemorySize=256m "${JOPENS[@]}" -Duser.home="$H" -Drocketmq.client.logRoot="$WORK/logs" -cp "$LIB/*" "$@" >"$out" 2>&1 & PIDS+=("$!"); }
waitf() { local end=$((SECONDS+90)); until grep -q "$2" "$1" 2>/dev/null; do (( SECONDS < end )) || { echo "timeout $1"; tail -20 "$1"; exit 1; }; sleep 0.3; done; }
port_taken() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
while :; do NP=$((20000 + RANDOM % 8000)); CP=$((NP+7)); BP=$((NP+20))
  port_taken $NP || port_taken $CP || port_taken $BP || port_taken $((BP+1)) || port_taken $((BP-2)) || break; done
printf 'listenPort=%s\nrocketmqHome=%s\n' $NP "$H" > $WORK/ns.conf
jr $WORK/ns.out org.apache.rocketmq.namesrv.NamesrvStartup -c $WORK/ns.conf
printf 'controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%s\ncontrollerDLegerSelfId=n0\ncontrollerStorePath=%s\nrocketmqHome=%s\n' $CP $WORK/ctl "$H" > $WORK/ctl.conf
jr $WORK/ctl.out org.apache.rocketmq.controller.ControllerStartup -c $WORK/ctl.conf
waitf $WORK/ns.out 'boot success'; waitf $WORK/ctl.out 'boot success'
cat > $WORK/b.conf <<C
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=-1
brokerRole=SLAVE
enableControllerMode=true
controllerAddr=127.0.0.1:$CP
namesrvAddr=127.0.0.1:$NP
listenPort=$BP
haListenPort=$((BP+1))
brokerIP1=127.0.0.1
storePathRootDir=$WORK/store
storePathCommitLog=$WORK/store/commitlog
rocketmqHome=$H
mappedFileSizeCommitLog=67108864
autoCreateTopicEnable=true
C
send() { # send BODY: stock mqadmin sendMessage until SEND_OK (the master may still be taking over)
  local end=$((SECONDS+90))
  until ROCKETMQ_HOME="$H" timeout 60 java -Xmx128m -Duser.home="$H" -cp "$LIB/*" org.apache.rocketmq.tools.command.MQAdminStartup \
      sendMessage -n 127.0.0.1:$NP -t AswTopic -p "$1" > $WORK/send.out 2>&1 && grep -q SEND_OK $WORK/send.out; do
    (( SECONDS < end )) || { echo "send failed"; tail $WORK/send.out; exit 1; }; sleep 1; done
  grep SEND_OK $WORK/send.out | head -1
}
jr $WORK/b.out org.apache.rocketmq.broker.BrokerStartup -c $WORK/b.conf
waitf $WORK/b.out 'boot success'
send rmq-autoswitch-epoch-one
# kill -9 and restart: the controller elects it again with the next epoch, and it appends (epoch, max offset).
BPID=${PIDS[-1]}; kill -9 $BPID; wait $BPID 2>/dev/null || true
jr $WORK/b2.out org.apache.rocketmq.broker.BrokerStartup -c $WORK/b.conf
waitf $WORK/b2.out 'boot success'
end=$((SECONDS+90))
until [[ "$(head -1 $WORK/store/epochFileCheckpoint 2>/dev/null)" == 2 ]]; do
  (( SECONDS < end )) || { echo "no second epoch"; cat $WORK/store/epochFileCheckpoint; exit 1; }; sleep 0.5; done
send rmq-autoswitch-epoch-two
cat $WORK/store/epochFileCheckpoint; echo ---
cd "$ROOT" && RMQ_AUTOSWITCH_JAVA_MASTER=127.0.0.1:$((BP+1)) RMQ_AUTOSWITCH_JAVA_BODY="rmq-autoswitch-epoch-one rmq-autoswitch-epoch-two" go test -count=1 -run 'TestJavaMaster$|TestJavaMasterService' -v ./store/ha/autoswitch
