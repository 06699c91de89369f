#!/bin/sh
# run.sh: the Go container test (make test-container). Builds the image
# (docker/image.sh, tag $IMAGE, default rmq:latest) and runs this module's
# test against it. Without a Docker daemon, a docker CLI or a static busybox
# it prints why and skips (exit 0).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${IMAGE:-rmq:latest}
GO=${GO:-go}

if ! why=$(sh "$ROOT/docker/available.sh"); then
	echo "test-container: SKIPPED (Go testcontainers test): $why"
	exit 0
fi
IMAGE=$IMAGE GO=$GO sh "$ROOT/docker/image.sh"
cd "$HERE"
RMQ_IMAGE=$IMAGE "$GO" test -count=1 -timeout 10m ${GOTESTFLAGS:-} .
