package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/metrics"
	"github.com/rmqio/rmq/namesrv"
)

// servers starts a name server, a broker or both, announces each on stdout
// with the stock boot line, and shuts them down when the context ends.
type servers struct {
	stdout io.Writer
	log    zerolog.Logger
}

// run starts the name server (if nsOpts is non-nil) and then the broker (if
// bOpts is non-nil), waits for ctx, and stops them in reverse order: the
// broker first, so that it can still unregister from a live name server.
func (s *servers) run(ctx context.Context, stopSignals func(), nsOpts *namesrv.Options, bOpts *broker.Options) error {
	tuneRuntime(os.Getenv, s.log, bOpts != nil)
	var ns *namesrv.Server
	if nsOpts != nil {
		var err error
		if ns, err = namesrv.New(*nsOpts); err != nil {
			return err
		}
		if err := ns.Start(); err != nil {
			return err
		}
		// Stock NamesrvStartup line; scripts grep for "boot success".
		fmt.Fprintln(s.stdout, "The Name Server boot success. serializeType=JSON")
	}

	var b *broker.Broker
	var ms *metrics.Server // HTTP endpoint (observe.go), nil when off
	if bOpts != nil {
		var err error
		if b, err = broker.New(*bOpts); err == nil {
			if bOpts.MetricsEnabled() {
				b.EnableMetrics()
			}
			if err = b.Start(); err == nil {
				ms, err = startMetrics(b, *bOpts, s.log)
			}
			if err != nil {
				// Start failed after the store was opened: close it so that the
				// abort marker does not claim a crash.
				if serr := b.Shutdown(); serr != nil {
					s.log.Error().Err(serr).Msg("broker shutdown after failed start")
				}
			}
		}
		if err != nil {
			if ns != nil {
				ns.Shutdown()
			}
			return err
		}
		// Stock BrokerStartup line.
		tip := fmt.Sprintf("The broker[%s, %s] boot success. serializeType=JSON", bOpts.BrokerName, b.Addr())
		if bOpts.NamesrvAddr != "" {
			tip += " and name server is " + bOpts.NamesrvAddr
		}
		fmt.Fprintln(s.stdout, tip)
	}

	<-ctx.Done()
	// From here a second signal terminates the process at once.
	stopSignals()
	s.log.Info().Msg("shutting down (signal again to force)")

	var errs []error
	if ms != nil {
		if err := ms.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b != nil {
		if err := b.Shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if ns != nil {
		ns.Shutdown()
	}
	return errors.Join(errs...)
}
