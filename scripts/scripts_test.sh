#!/usr/bin/env bash
# Script test: start a name server and a broker through mqnamesrv and
# mqbroker, list the cluster through mqadmin, stop both through mqshutdown.
#
# Needs RMQ_BIN (a built rmq), WORK (an empty scratch directory), NS_PORT and
# BROKER_PORT (free loopback ports; BROKER_PORT-2 free too). Run by
# scripts_test.go; prints "PASS" last on success.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
: "${RMQ_BIN:?}" "${WORK:?}" "${NS_PORT:?}" "${BROKER_PORT:?}"
export RMQ_BIN
export RMQ_PID_DIR="$WORK/pids"
export RMQ_SHUTDOWN_WAIT=20
unset NAMESRV_ADDR
ns="127.0.0.1:$NS_PORT"

fail() {
	echo "FAIL: $*" >&2
	for f in "$WORK"/*.log; do
		[ -e "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
	done
	exit 1
}

# wait_for FILE TEXT: poll FILE until it contains TEXT (deadline 30 s).
wait_for() {
	for _ in $(seq 300); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "no \"$2\" in $1 within 30s"
}

# pids_of ROLE: the pids mq* recorded for ROLE.
pids_of() {
	ls "$RMQ_PID_DIR" 2>/dev/null | sed -n "s/^$1\.//p"
}

# alive PID: the process exists and is not a zombie awaiting its parent.
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ -n $st && $st != Z ]]
}

# Servers stopped however the test ends.
cleanup() {
	for role in broker namesrv; do
		for pid in $(pids_of "$role"); do
			kill "$pid" 2>/dev/null || true
		done
	done
}
trap cleanup EXIT

cat >"$WORK/namesrv.conf" <<CONF
listenPort=$NS_PORT
CONF
cat >"$WORK/broker.conf" <<CONF
brokerClusterName=ScriptCluster
brokerName=broker-s
listenPort=$BROKER_PORT
brokerIP1=127.0.0.1
storePathRootDir=$WORK/store
mappedFileSizeCommitLog=1048576
mappedFileSizeConsumeQueue=20480
maxMessageSize=65536
grpcServerPort=0
clockControlEnable=true
CONF

# -m prints the important config and exits without recording a pid.
out=$("$here/mqbroker" -c "$WORK/broker.conf" -n "$ns" -m)
grep -q "listenPort=$BROKER_PORT" <<<"$out" || fail "mqbroker -m printed: $out"
grep -q "namesrvAddr=$ns" <<<"$out" || fail "mqbroker -m lacks namesrvAddr: $out"
[ -z "$(pids_of broker)" ] || fail "mqbroker -m recorded a pid"

# Nothing runs yet.
if out=$("$here/mqshutdown" broker); then fail "mqshutdown with nothing running succeeded"; fi
[ "$out" = "No mqbroker running." ] || fail "mqshutdown broker printed: $out"

nohup "$here/mqnamesrv" -c "$WORK/namesrv.conf" >"$WORK/namesrv.log" 2>&1 &
wait_for "$WORK/namesrv.log" "The Name Server boot success"
nohup "$here/mqbroker" -n "$ns" -c "$WORK/broker.conf" >"$WORK/broker.log" 2>&1 &
wait_for "$WORK/broker.log" "The broker\[broker-s, 127.0.0.1:$BROKER_PORT\] boot success"

ns_pid=$(pids_of namesrv)
broker_pid=$(pids_of broker)
[ -n "$ns_pid" ] && [ -n "$broker_pid" ] || fail "pids not recorded: namesrv=$ns_pid broker=$broker_pid"

# The broker registers at start; clusterList lists it with its version.
listed=
for _ in $(seq 100); do
	out=$("$here/mqadmin" clusterList -n "$ns") || fail "mqadmin clusterList failed: $out"
	if grep -Eq "^ScriptCluster +broker-s +0 +127\.0\.0\.1:$BROKER_PORT +V4_9_8 " <<<"$out"; then
		listed=yes
		break
	fi
	sleep 0.1
done
[ -n "$listed" ] || fail "clusterList never listed broker-s: $out"
head -1 <<<"$out" | grep -q "^#Cluster Name" || fail "clusterList header: $out"

# fastForward (rmq's own subcommand) moves the broker's message clock, with
# -c resolving the cluster's masters through the name server.
out=$("$here/mqadmin" fastForward -n "$ns" -c ScriptCluster -d 30m) || fail "mqadmin fastForward failed: $out"
grep -q "^127\.0\.0\.1:$BROKER_PORT fast-forwarded 30m0s: broker time " <<<"$out" || fail "fastForward printed: $out"

# Errors exit non-zero and name the peer.
if out=$("$here/mqadmin" topicRoute -n "$ns" -t NoSuchTopic 2>&1); then fail "topicRoute of a missing topic succeeded"; fi
grep -q "name server $ns answered GET_ROUTEINFO_BY_TOPIC(105) with CODE 17" <<<"$out" || fail "topicRoute error: $out"

out=$("$here/mqshutdown" broker) || fail "mqshutdown broker: $out"
grep -q "^The mqbroker($broker_pid) is running...$" <<<"$out" || fail "mqshutdown broker printed: $out"
grep -q "^Send shutdown request to mqbroker($broker_pid) OK$" <<<"$out" || fail "mqshutdown broker printed: $out"
alive "$broker_pid" && fail "broker $broker_pid still runs after mqshutdown"
wait_for "$WORK/broker.log" "broker stopped"

out=$("$here/mqshutdown" namesrv) || fail "mqshutdown namesrv: $out"
grep -q "^Send shutdown request to mqnamesrv($ns_pid) OK$" <<<"$out" || fail "mqshutdown namesrv printed: $out"
if out=$("$here/mqshutdown" namesrv); then fail "second mqshutdown namesrv succeeded"; fi
[ "$out" = "No mqnamesrv running." ] || fail "second mqshutdown printed: $out"
[ -z "$(pids_of namesrv)$(pids_of broker)" ] || fail "pid records left: $(ls "$RMQ_PID_DIR")"

if out=$("$here/mqshutdown" both); then fail "mqshutdown both succeeded"; fi
grep -q "Useage: mqshutdown broker | namesrv" <<<"$out" || fail "usage: $out"

echo PASS
