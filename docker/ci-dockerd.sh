#!/bin/sh
# ci-dockerd.sh: makes a Docker daemon available for the container tests, as
# root on a Debian machine (.ci/run). Installs docker.io with apt-get when
# dockerd is missing and starts dockerd in the background
# when none answers. Prints the pid of a dockerd it started on stdout (empty
# when one was already running), so that the caller can stop it; on failure
# prints why on stderr and exits 1 (the container tests then skip). The
# image's static busybox is docker/image.sh's business: it installs
# busybox-static itself.
#
# dockerd runs with
#   --ip=127.0.0.1            ports a container publishes bind to loopback only
#                             (the default would be every interface)
#   --iptables=false          no NAT or firewall rules on the machine: the tests
#   --ip6tables=false         reach containers through published ports, served
#                             by docker-proxy, and containers need no way out
# and logs to ${RMQ_DOCKERD_LOG:-/tmp/rmq-dockerd.log}.
set -u
LOG=${RMQ_DOCKERD_LOG:-/tmp/rmq-dockerd.log}

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	exit 0
fi

pkgs=""
command -v dockerd >/dev/null 2>&1 || pkgs="docker.io"
if [ -n "$pkgs" ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "ci-dockerd.sh: cannot install$pkgs: no apt-get" >&2
		exit 1
	fi
	apt-get update -qq >&2 || true
	# shellcheck disable=SC2086
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >&2; then
		echo "ci-dockerd.sh: apt-get install$pkgs failed" >&2
		exit 1
	fi
fi

dockerd --iptables=false --ip6tables=false --ip=127.0.0.1 >"$LOG" 2>&1 &
pid=$!
i=0
while [ "$i" -lt 60 ]; do
	if docker info >/dev/null 2>&1; then
		echo "$pid"
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	sleep 0.5
	i=$((i + 1))
done
echo "ci-dockerd.sh: dockerd did not come up; last lines of $LOG:" >&2
tail -n 20 "$LOG" >&2
kill "$pid" 2>/dev/null
exit 1
