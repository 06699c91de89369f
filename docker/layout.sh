#!/bin/sh
# layout.sh: lays out the rmq image's file tree. Both Dockerfiles run it, the
# root Dockerfile (docker build ., from a registry) and docker/Dockerfile
# (make image, offline), in a stage of their own; their last stages, which
# must stay identical (docker/dockerfile_test.go checks it), only copy its
# output. The layout lives here and nowhere else.
#
#   layout.sh SRC OUT [VERSION...]
#
# SRC holds what goes in:
#   busybox   a static busybox built for the image's platform
#   rmq       the static rmq binary built for it
#   scripts/  mqnamesrv, mqbroker, mqadmin, mqshutdown, rmqenv.sh
#   conf/     broker.conf, namesrv.conf, 2m-2s-sync/, 2m-2s-async/ and controller/
#             (the stock distribution's pair configs, broker-{a,b}[-s].properties)
#   rootfs/   etc/passwd and etc/group with the rocketmq user (uid 3000)
#
# OUT gets two trees:
#   root/     copied to / and owned by root: busybox and its applet links
#             (/bin/sh, ...), /etc, /tmp (1777), an empty /home
#   home/     copied to /home/ owned by rocketmq (3000:3000), as the stock
#             image chowns its ROCKETMQ_HOME and the user's home:
#     rocketmq/rmq/bin            rmq and the scripts; the working directory
#     rocketmq/rmq/conf           broker.conf, namesrv.conf, 2m-2s-sync/, 2m-2s-async/
#                                 (so $ROCKETMQ_HOME/conf/2m-2s-sync/broker-a.properties
#                                 is where stock has it)
#     rocketmq/rmq/bin/store      -> /home/rocketmq/store (for ./store configs)
#     rocketmq/store, logs        the store (a volume) and the logs
#     rocketmq/rocketmq-<VERSION> -> rmq, for each VERSION given and for 4.9.8
#                                 and 5.3.3: the stock image's ROCKETMQ_HOME
#                                 (/home/rocketmq/rocketmq-${ROCKETMQ_VERSION}),
#                                 so that compose files mounting
#                                 .../rocketmq-<ver>/conf/broker.conf and
#                                 running sh mqbroker -c ../conf/broker.conf
#                                 find the same tree
#
# The applet links come from `busybox --list-full` of the busybox this
# script runs under (in the root Dockerfile the build platform's image of
# the same busybox release and variant, so the same applets), not from
# SRC/busybox, which may be built for another platform and cannot run here.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: layout.sh SRC OUT [VERSION...]" >&2
	exit 2
fi
src=$1
out=$2
shift 2

root=$out/root
home=$out/home/rocketmq

mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/etc" "$root/tmp" "$root/home"
chmod 1777 "$root/tmp"
cp "$src/busybox" "$root/bin/busybox"
chmod 0755 "$root/bin/busybox"
for applet in $(busybox --list-full); do
	case $applet in
	bin/busybox) ;;
	*) ln -s /bin/busybox "$root/$applet" ;;
	esac
done
[ -L "$root/bin/sh" ] || {
	echo "layout.sh: busybox --list-full has no bin/sh" >&2
	exit 1
}
cp -R "$src/rootfs/." "$root/"

mkdir -p "$home/rmq/bin" "$home/rmq/conf" "$home/store" "$home/logs"
cp "$src/rmq" "$src/scripts/mqnamesrv" "$src/scripts/mqbroker" "$src/scripts/mqadmin" \
	"$src/scripts/mqshutdown" "$src/scripts/rmqenv.sh" "$home/rmq/bin/"
chmod 0755 "$home/rmq/bin/rmq" "$home/rmq/bin/mqnamesrv" "$home/rmq/bin/mqbroker" \
	"$home/rmq/bin/mqadmin" "$home/rmq/bin/mqshutdown"
chmod 0644 "$home/rmq/bin/rmqenv.sh"
cp "$src/conf/broker.conf" "$src/conf/namesrv.conf" "$home/rmq/conf/"
for d in 2m-2s-sync 2m-2s-async; do
	[ -f "$src/conf/$d/broker-a.properties" ] || {
		echo "layout.sh: $src/conf/$d has no broker-a.properties" >&2
		exit 1
	}
	mkdir -p "$home/rmq/conf/$d"
	cp "$src/conf/$d/"*.properties "$home/rmq/conf/$d/"
	chmod 0644 "$home/rmq/conf/$d/"*.properties
done
# The controller-mode configs (three controller nodes, two broker sets of two):
# $ROCKETMQ_HOME/conf/controller/*.conf, as docker/compose/controller.yaml runs them.
[ -f "$src/conf/controller/controller-n0.conf" ] || {
	echo "layout.sh: $src/conf/controller has no controller-n0.conf" >&2
	exit 1
}
mkdir -p "$home/rmq/conf/controller"
cp "$src/conf/controller/"*.conf "$home/rmq/conf/controller/"
chmod 0644 "$home/rmq/conf/controller/"*.conf
ln -s /home/rocketmq/store "$home/rmq/bin/store"
# The repository's node configs keep their stores under .run/ (relative to
# where the server runs: bin/ in the image), so .run is the store volume too.
ln -s /home/rocketmq/store "$home/rmq/bin/.run"
for v in 4.9.8 5.3.3 "$@"; do
	case $v in
	'' | */* | .*)
		echo "layout.sh: bad version $v" >&2
		exit 2
		;;
	esac
	[ -L "$home/rocketmq-$v" ] || ln -s rmq "$home/rocketmq-$v"
done
