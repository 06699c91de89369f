#!/bin/sh
# image.sh: build the rmq container image offline (make image).
#
#   IMAGE             tag to build (default rmq:latest)
#   BUSYBOX           a statically linked busybox (default /bin/busybox,
#                     Debian's busybox-static package)
#   GO                the go tool (default go)
#   VERSION           version stamped into the binary (default: git describe)
#   ROCKETMQ_VERSION  passed to docker/Dockerfile as a build argument when set
#
# The image has no base to pull: the context is staged under .image/ from
# a static rmq (CGO_ENABLED=0), busybox, scripts/, conf/, docker/rootfs and
# docker/layout.sh, then `docker build` runs docker/Dockerfile on it. It is
# built for this machine's platform; the root Dockerfile builds others.
#
# When BUSYBOX is the default and /bin/busybox is missing, image.sh installs
# Debian's busybox-static with apt-get (as root); otherwise it says what to
# install and stops.
set -eu

cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-rmq:latest}
BUSYBOX=${BUSYBOX:-/bin/busybox}
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}

if ! command -v docker >/dev/null 2>&1; then
	echo "image.sh: docker not found" >&2
	exit 1
fi
if [ ! -e "$BUSYBOX" ] && [ "$BUSYBOX" = /bin/busybox ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	echo "image.sh: no $BUSYBOX: installing busybox-static (apt-get)" >&2
	# A fresh machine may have no package lists yet: update once, then retry.
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >&2; then
		apt-get update -qq >&2 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >&2 || true
	fi
fi
if [ ! -x "$BUSYBOX" ]; then
	echo "image.sh: $BUSYBOX not found: install a static busybox (Debian: apt-get install busybox-static) or set BUSYBOX" >&2
	exit 1
fi
# The image has no libc: a dynamically linked busybox would not start (the
# first RUN of the Dockerfile fails then). readelf, when present, says so
# up front.
if command -v readelf >/dev/null 2>&1 && readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'INTERP'; then
	echo "image.sh: $BUSYBOX is dynamically linked; install busybox-static (or set BUSYBOX to a static one)" >&2
	exit 1
fi

ctx=.image
rm -rf "$ctx"
mkdir -p "$ctx/scripts" "$ctx/conf"
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$ctx/rmq" ./cmd/rmq
cp "$BUSYBOX" "$ctx/busybox"
cp scripts/mqnamesrv scripts/mqbroker scripts/mqadmin scripts/mqshutdown scripts/rmqenv.sh "$ctx/scripts/"
cp conf/broker.conf conf/namesrv.conf "$ctx/conf/"
cp -R conf/2m-2s-sync conf/2m-2s-async conf/controller "$ctx/conf/"
cp -R docker/rootfs "$ctx/rootfs"
cp docker/layout.sh docker/Dockerfile "$ctx/"
docker build ${ROCKETMQ_VERSION:+--build-arg ROCKETMQ_VERSION=$ROCKETMQ_VERSION} -t "$IMAGE" "$ctx"
# A rebuild leaves the previous image untagged (the version stamp changes):
# drop those, and only those (dangling and labelled by docker/Dockerfile).
docker image prune -f --filter label=rmq.image=true >/dev/null
echo "image.sh: built $IMAGE"
