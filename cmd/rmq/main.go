// Command rmq runs a RocketMQ 4.x-compatible name server and broker.
//
//	rmq standalone [-c broker.conf] [--store-dir DIR] [--namesrv-port 9876] [--listen-port 10911]
//	rmq namesrv    [-c namesrv.conf] [--listen-port 9876]
//	rmq broker     [-n 127.0.0.1:9876] [-c broker.conf] [--store-dir DIR] [--listen-port 10911]
//	rmq version
//
// Each server command also takes -p (print every config key and exit), -m
// (print the important keys and exit) and --log-level. Readiness is announced
// on stdout with the stock "... boot success ..." lines that RocketMQ scripts
// grep for; logs go to stderr. SIGINT or SIGTERM shuts down cleanly (broker
// first, then name server) and exits 0; a second signal kills at once.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

func main() {
	// Millisecond log timestamps (zerolog's default is whole seconds).
	zerolog.TimeFieldFormat = time.RFC3339Nano
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, stop, os.Args, os.Stdout, os.Stderr))
}

// run executes the command line in args and returns the process exit code.
// ctx is cancelled by the first shutdown signal; stopSignals restores default
// signal handling so that a second signal ends the process at once.
func run(ctx context.Context, stopSignals func(), args []string, stdout, stderr io.Writer) int {
	app := newApp(ctx, stopSignals, stdout, stderr)
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "rmq: %v\n", err)
		return 1
	}
	return 0
}
