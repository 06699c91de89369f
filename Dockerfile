# The rmq image from a registry's golang and busybox images, for any
# platform Go and busybox build for:
#
#   docker build -t rmq .
#   docker buildx build --platform linux/amd64,linux/arm64 -t <repo>/rmq .
#
# It needs BuildKit (the default builder of Docker 23 and later, and buildx)
# and access to a registry. Without one, `make image` builds the same image
# offline (docker/Dockerfile, docker/image.sh).
#
# rmq is cross-compiled on the build machine's platform (CGO_ENABLED=0,
# GOOS/GOARCH from TARGETOS/TARGETARCH) and the tree is laid out there too,
# by docker/layout.sh: nothing runs on the target platform, so a
# multi-platform build needs no emulation.
#
# Build arguments:
#   VERSION           stamped into rmq (rmq version); e.g.
#                     --build-arg VERSION=$(git describe --tags --always --dirty)
#   ROCKETMQ_VERSION  the stock version the layout names (ROCKETMQ_HOME)
#   GO_VERSION        the golang image; go.mod's go version
#   BUSYBOX_VERSION   the busybox image (its static musl variant)
#
# The last stage (from "FROM scratch" on) is the same text as docker/
# Dockerfile's: docker/dockerfile_test.go fails when they differ.

ARG GO_VERSION=1.26.8
ARG BUSYBOX_VERSION=1.37.0
ARG ROCKETMQ_VERSION=4.9.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/rmq ./cmd/rmq

# The target platform's static busybox: only copied, never run here.
FROM busybox:${BUSYBOX_VERSION}-musl AS busybox

# The build platform's busybox runs docker/layout.sh.
FROM --platform=$BUILDPLATFORM busybox:${BUSYBOX_VERSION}-musl AS rootfs
ARG ROCKETMQ_VERSION
COPY --from=busybox /bin/busybox /src/busybox
COPY --from=build /out/rmq /src/rmq
COPY docker/layout.sh /src/layout.sh
COPY scripts/mqnamesrv scripts/mqbroker scripts/mqadmin scripts/mqshutdown scripts/rmqenv.sh /src/scripts/
COPY conf/broker.conf conf/namesrv.conf /src/conf/
COPY conf/2m-2s-sync/ /src/conf/2m-2s-sync/
COPY conf/2m-2s-async/ /src/conf/2m-2s-async/
COPY conf/controller/ /src/conf/controller/
COPY docker/rootfs/ /src/rootfs/
RUN sh /src/layout.sh /src /out "$ROCKETMQ_VERSION"

FROM scratch
ARG ROCKETMQ_VERSION
COPY --from=rootfs /out/root/ /
COPY --from=rootfs --chown=3000:3000 /out/home/ /home/
# The stock image's variables and working directory (apache/rocketmq:
# ROCKETMQ_HOME=/home/rocketmq/rocketmq-${ROCKETMQ_VERSION}, WORKDIR
# ${ROCKETMQ_HOME}/bin). ROCKETMQ_HOME is a link to /home/rocketmq/rmq, so
# the older paths name the same files. The broker reads
# ${ROCKETMQ_HOME}/conf/plain_acl.yml when aclEnable is set, as stock does.
ENV ROCKETMQ_VERSION=${ROCKETMQ_VERSION}
ENV ROCKETMQ_HOME=/home/rocketmq/rocketmq-${ROCKETMQ_VERSION} \
	HOME=/home/rocketmq \
	PATH=/home/rocketmq/rmq/bin:/bin:/sbin:/usr/bin:/usr/sbin
# image.sh prunes the untagged images left by earlier builds by this label.
LABEL rmq.image="true"
# The servers run as rocketmq (uid 3000, as in apache/rocketmq).
USER 3000:3000
WORKDIR ${ROCKETMQ_HOME}/bin
VOLUME ["/home/rocketmq/store"]
# Name server; broker; the broker's VIP port (listenPort-2); gRPC for the
# 5.x SDKs (grpcServerPort, the stock proxy's port).
EXPOSE 9876 10911 10909 8081
# By default a name server and a broker in one process (rmq standalone);
# compose files and recipes pick a server instead (sh mqnamesrv,
# sh mqbroker -n namesrv:9876, ...).
CMD ["./rmq", "standalone"]
