# Sourced by the mq* scripts: finds the rmq binary and the pid directory.
#
#   RMQ_BIN      the rmq binary; default: rmq next to this script, then
#                ../bin/rmq (make build), then rmq on PATH
#   RMQ_PID_DIR  where mqnamesrv/mqbroker record their pids for mqshutdown;
#                default ${TMPDIR:-/tmp}/rmq-<uid>
#
# POSIX sh: the stock scripts are often started as `sh bin/mqbroker`.

# rmq_home resolves symlinks to this script's directory, like the stock
# scripts' ROCKETMQ_HOME lookup.
rmq_script_dir() {
	prg=$1
	while [ -h "$prg" ]; do
		link=$(ls -ld "$prg" | sed 's/.*-> //')
		case $link in
		/*) prg=$link ;;
		*) prg=$(dirname "$prg")/$link ;;
		esac
	done
	cd "$(dirname "$prg")" && pwd
}

RMQ_SCRIPT_DIR=$(rmq_script_dir "$0")

if [ -z "${RMQ_BIN:-}" ]; then
	for cand in "$RMQ_SCRIPT_DIR/rmq" "$RMQ_SCRIPT_DIR/../bin/rmq"; do
		if [ -x "$cand" ]; then
			RMQ_BIN=$cand
			break
		fi
	done
fi
if [ -z "${RMQ_BIN:-}" ]; then
	RMQ_BIN=$(command -v rmq 2>/dev/null || true)
fi
if [ -z "${RMQ_BIN:-}" ] || [ ! -x "$RMQ_BIN" ]; then
	echo "$(basename "$0"): rmq binary not found: set RMQ_BIN, run 'make build', or put rmq on PATH" >&2
	exit 1
fi

RMQ_PID_DIR=${RMQ_PID_DIR:-${TMPDIR:-/tmp}/rmq-$(id -u)}

# rmq_serve ROLE ARGS...: runs `rmq ROLE ARGS...` in this process (exec), so
# the recorded pid is the server's. Print-and-exit runs (-p, -m, -h) record
# nothing.
rmq_serve() {
	role=$1
	shift
	record=yes
	for a in "$@"; do
		case $a in
		-p | -m | -h | --help | -printConfigItem | --printConfigItem | -printImportantConfig | --printImportantConfig) record=no ;;
		esac
	done
	if [ "$record" = yes ]; then
		mkdir -p "$RMQ_PID_DIR" || exit 1
		echo $$ >"$RMQ_PID_DIR/$role.$$"
	fi
	exec "$RMQ_BIN" "$role" "$@"
}
