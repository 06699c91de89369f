package main

import (
	"context"
	"errors"
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
		if errors.Is(err, errUnknownCommand) {
			fmt.Fprintln(stderr, err) // it names the command line already
			return exitUsage
		}
		fmt.Fprintf(stderr, "rmq: %v\n", err)
		return 1
	}
	return 0
}
