#!/bin/sh
# available.sh: exits 0 when the container tests can run here: a docker CLI,
# a Docker daemon that answers, and a static busybox for the image
# (BUSYBOX, default /bin/busybox), or the means for docker/image.sh to
# install one (apt-get, as root). Otherwise prints why on stdout and exits 1.
# Used by integration/container/run.sh and integration/java/run.sh, which
# skip their container tests then; .ci/run installs and starts what it can
# (docker/ci-dockerd.sh).
BUSYBOX=${BUSYBOX:-/bin/busybox}
if ! command -v docker >/dev/null 2>&1; then
	echo "no docker CLI (Debian: apt-get install docker.io)"
	exit 1
fi
if ! err=$(docker info 2>&1 >/dev/null); then
	echo "no Docker daemon answers (docker info: $(printf '%s\n' "$err" | grep -v '^$' | tail -n 1))"
	exit 1
fi
if [ ! -x "$BUSYBOX" ] && ! { [ "$BUSYBOX" = /bin/busybox ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; }; then
	echo "no static busybox at $BUSYBOX for the image (Debian: apt-get install busybox-static, or set BUSYBOX)"
	exit 1
fi
exit 0
