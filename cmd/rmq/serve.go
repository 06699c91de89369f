package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/controller"
	"github.com/rmqio/rmq/grpcapi"
	"github.com/rmqio/rmq/metrics"
	"github.com/rmqio/rmq/namesrv"
)

// servers starts a name server, a broker or both, announces each on stdout
// with the stock boot line, and shuts them down when the context ends.
type servers struct {
	stdout io.Writer
	stderr io.Writer // the standalone address block; nil prints none
	log    zerolog.Logger
	// grpc, when set and enabled, runs the gRPC endpoint beside the broker.
	grpc *grpcapi.Options
	// memoryLimitKey is memoryLimitBytes (runtime_settings.go).
	memoryLimitKey int64
}

// grpcOptions is the gRPC endpoint's part of the broker settings.
func grpcOptions(bs *brokerSettings, log zerolog.Logger) *grpcapi.Options {
	o := bs.grpc
	o.Logger = log.With().Str("component", "grpc").Logger()
	return &o
}

// run starts the name server (if nsOpts is non-nil) and then the broker (if
// bOpts is non-nil), waits for ctx, and stops them in reverse order: the
// broker first, so that it can still unregister from a live name server.
func (s *servers) run(ctx context.Context, stopSignals func(), nsOpts *namesrv.Options, bOpts *broker.Options) error {
	tuneRuntime(os.Getenv, s.log, bOpts != nil, serverMemoryLimitFor(s.memoryLimitKey))
	var ns *namesrv.Server
	var ctl *controller.Controller // enableControllerInNamesrv
	if nsOpts != nil {
		var err error
		if ns, err = namesrv.New(*nsOpts); err != nil {
			return err
		}
		if err := ns.Start(); err != nil {
			return err
		}
		if c, ok := nsOpts.Controller.(*controller.Controller); ok {
			c.SetAddr(ns.Addr())
			if err := c.Start(); err != nil {
				ns.Shutdown()
				return err
			}
			ctl = c
			defer ctl.Shutdown()
		}
	}
	// Stock NamesrvStartup line; scripts grep for "boot success". In
	// standalone it waits for the broker: a start that then fails must not
	// have announced anything.
	nsReady := "The Name Server boot success. serializeType=JSON"
	if ns != nil && bOpts == nil {
		fmt.Fprintln(s.stdout, nsReady)
	}
	if ctl != nil {
		fmt.Fprintln(s.stdout, "The ControllerManager boot success. serializeType=JSON") // as NamesrvStartup, after the name server's
	}

	var b *broker.Broker
	var gs *grpcapi.Server
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
		// The gRPC endpoint for the 5.x SDKs serves before the broker is
		// announced ready.
		if s.grpc != nil && s.grpc.Enable {
			gs = grpcapi.New(b, *s.grpc)
			if err := gs.Start(); err != nil {
				if ms != nil {
					_ = ms.Close()
				}
				if serr := b.Shutdown(); serr != nil {
					s.log.Error().Err(serr).Msg("broker shutdown after failed start")
				}
				if ns != nil {
					ns.Shutdown()
				}
				return err
			}
		}
		if ns != nil {
			fmt.Fprintln(s.stdout, nsReady)
		}
		// Stock BrokerStartup line.
		tip := fmt.Sprintf("The broker[%s, %s] boot success. serializeType=JSON", bOpts.BrokerName, b.Addr())
		if bOpts.NamesrvAddr != "" {
			tip += " and name server is " + bOpts.NamesrvAddr
		}
		fmt.Fprintln(s.stdout, tip)
		if ns != nil {
			metricsAddr := ""
			if ms != nil {
				metricsAddr = ms.Addr()
			}
			grpcAddr := ""
			if gs != nil {
				grpcAddr = net.JoinHostPort(dialHost(gs.Addr().Addr().String()), strconv.Itoa(int(gs.Addr().Port())))
			}
			s.printAddresses(ns.Addr(), b.Addr(), b.VIPAddr(), grpcAddr, metricsAddr, bOpts.ConsoleEnable, bOpts.StorePathRootDir)
		}
	}

	<-ctx.Done()
	// From here a second signal terminates the process at once.
	stopSignals()
	s.log.Info().Msg("shutting down (signal again to force)")

	var errs []error
	if gs != nil {
		gs.Stop()
	}
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

// printAddresses writes, after the readiness lines of standalone, the
// addresses a user needs in one block on stderr (stdout keeps only the stock
// lines that scripts grep for). metricsAddr is the metrics endpoint's
// listener, "" when off; console says whether it also serves the web console.
func (s *servers) printAddresses(nsAddr, brokerAddr, vipAddr, grpcAddr, metricsAddr string, console bool, storeDir string) {
	if s.stderr == nil {
		return
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\nrmq standalone is ready:\n")
	fmt.Fprintf(&w, "  name server  %s   <- give clients this one (setNamesrvAddr, -n, NAMESRV_ADDR)\n", nsAddr)
	fmt.Fprintf(&w, "  broker       %s  (clients learn it from the name server)\n", brokerAddr)
	fmt.Fprintf(&w, "  VIP port     %s  (old Java clients with vipChannelEnabled)\n", vipAddr)
	if grpcAddr != "" {
		fmt.Fprintf(&w, "  gRPC         %s  <- 5.x SDKs (endpoints)\n", grpcAddr)
	}
	if metricsAddr != "" {
		base := "http://" + metricsAddr
		if host, port, err := net.SplitHostPort(metricsAddr); err == nil {
			base = "http://" + net.JoinHostPort(dialHost(host), port)
		}
		fmt.Fprintf(&w, "  metrics      %s/metrics\n", base)
		if console {
			fmt.Fprintf(&w, "  console      %s/\n", base)
		}
	}
	fmt.Fprintf(&w, "  store        %s\nStop with Ctrl-C.\n\n", storeDir)
	io.WriteString(s.stderr, w.String())
}
