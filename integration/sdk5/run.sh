#!/usr/bin/env bash
# The Python and Node.js 5.x SDKs against rmq's gRPC endpoint (make test-sdk5, part of make test).
#
# Installs each SDK, pinned, from its registry into a git-ignored directory next to its program
# (python/.deps with pip install --target from python/requirements.txt; node/node_modules with npm ci from
# node/package-lock.json), once per change of those files, then runs TestSDK5Python and TestSDK5Node
# (integration/sdk5_test.go): they start rmq, run python/producer.py and node/producer.js against its
# grpcServerPort (producer: normal, FIFO, delay, transaction commit/rollback/check-back, checked with a 4.x
# consumer; SimpleConsumer: receive, ack, change of invisible duration and redelivery, checked by the program),
# and TestSDK5PythonClock (integration/sdk5_clock_test.go): python/clock.py sends a 2-hour timer message,
# runs `rmq admin fastForward` against a broker with clockControlEnable=true and receives it within seconds;
# and TestSDK5PythonAuth / TestSDK5NodeAuth (integration/sdk5_auth_test.go): python/auth.py and node/auth.js sign
# with ACL 2.0 users (Credentials / sessionCredentials) against a broker with authenticationEnabled and
# authorizationEnabled: an allowed send and receive, and a Deny policy, a wrong secret and no credentials refused
# with the stock UNAUTHORIZED (40100) and reason; deny over allow, source IPs, and a user disabled at run time
# refused on its producer's next send; and TestSDK5PythonCluster, TestSDK5NodeCluster and
# TestSDK5PythonClusterOwnEndpoint (integration/sdk5_cluster_test.go, issue 45): python/cluster.py and
# node/cluster.js against a name server and two rmq brokers of one cluster (127.0.0.2/127.0.0.3, one gRPC port),
# given one broker's endpoint (or, Python, both): sends land on both brokers and are received; one broker is
# killed with SIGKILL, the routes lose it, and the producer and SimpleConsumer go on with the other.
# An SDK whose runtime (python3, node and npm) is missing is skipped with a message saying so.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
GO="${GO:-go}"

log() { printf '[sdk5] %s\n' "$*"; }

# stamp_ok DIR FILE: DIR was installed from the current FILE.
stamp_ok() { [[ -f "$1/.installed" ]] && cmp -s "$1/.installed" "$2"; }

install_python() {
  local dir="$HERE/python/.deps" req="$HERE/python/requirements.txt"
  if stamp_ok "$dir" "$req"; then return 0; fi
  log "installing the Python SDK into $dir (pip, $(python3 --version 2>&1))"
  rm -rf "$dir"
  python3 -m pip install --disable-pip-version-check --root-user-action=ignore --no-input -q --target "$dir" -r "$req"
  cp "$req" "$dir/.installed"
}

install_node() {
  local dir="$HERE/node/node_modules" lock="$HERE/node/package-lock.json"
  if stamp_ok "$dir" "$lock"; then return 0; fi
  log "installing the Node.js SDK into $dir (npm ci, node $(node --version))"
  (cd "$HERE/node" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$lock" "$dir/.installed"
}

RUN=""
if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
  install_python
  export RMQ_SDK5_PYTHON="$HERE/python/.deps"
  RUN="TestSDK5Python|TestSDK5PythonClock|TestSDK5PythonAuth|TestSDK5PythonCluster|TestSDK5PythonClusterOwnEndpoint"
else
  log "Python SDK SKIPPED: python3 with pip is not on PATH"
fi
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  install_node
  export RMQ_SDK5_NODE="$HERE/node/node_modules"
  RUN="${RUN:+$RUN|}TestSDK5Node|TestSDK5NodeAuth|TestSDK5NodeCluster"
else
  log "Node.js SDK SKIPPED: node or npm is not on PATH"
fi
if [[ -z "$RUN" ]]; then
  log "nothing to run"
  exit 0
fi
cd "$ROOT/integration" # a module of its own (integration/go.mod)
exec "$GO" test -count=1 -v -run "^($RUN)\$" .
