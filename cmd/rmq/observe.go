package main

import (
	"net"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/console"
	"github.com/rmqio/rmq/metrics"
)

// startMetrics starts the HTTP endpoint when metricsExporterType=PROM (the
// broker must have had EnableMetrics before Start), with the console unless
// consoleEnable=false; nil when it is off.
func startMetrics(b *broker.Broker, o broker.Options, log zerolog.Logger) (*metrics.Server, error) {
	if !o.MetricsEnabled() {
		return nil, nil
	}
	host := o.MetricsPromExporterHost
	if host == "" {
		host = o.ListenHost
	}
	mo := metrics.Options{
		Addr:   net.JoinHostPort(host, strconv.Itoa(o.MetricsPromExporterPort)),
		Pprof:  o.MetricsPprofEnable,
		Logger: log,
	}
	if o.ConsoleEnable {
		c := console.New(b, nil)
		mo.Routes, mo.OnClose = c.Routes, c.Close
	}
	s, err := metrics.Start(b, mo)
	if err != nil && o.ConsoleEnable && mo.OnClose != nil {
		mo.OnClose()
	}
	return s, err
}
