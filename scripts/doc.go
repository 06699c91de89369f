// Package scripts holds the stock-style wrappers around the rmq binary:
//
//	mqnamesrv [-c namesrv.conf] [-p|-m]            rmq namesrv, in the foreground
//	mqbroker  [-n addr] [-c broker.conf] [-p|-m]   rmq broker, in the foreground
//	mqadmin   <command> [flags]                    rmq admin
//	mqshutdown namesrv|broker                      SIGTERM to the recorded servers
//
// They find the binary through RMQ_BIN, then next to themselves, then
// ../bin/rmq (make build), then PATH (rmqenv.sh). mqnamesrv and mqbroker
// exec the server, so the pid they record in RMQ_PID_DIR (default
// ${TMPDIR:-/tmp}/rmq-<uid>) is the server's own; mqshutdown signals only
// recorded pids that still run `rmq namesrv` / `rmq broker`, then waits up
// to RMQ_SHUTDOWN_WAIT seconds (default 30) for them to exit.
//
// The Go package holds only the test that drives scripts_test.sh.
package scripts
