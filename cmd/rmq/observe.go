package main

import (
	"net"
	"strconv"

	"github.com/rs/zerolog"

	"rmq/broker"
	"rmq/metrics"
)

// startMetrics starts the HTTP endpoint when metricsExporterType=PROM (the
// broker must have had EnableMetrics before Start); nil when it is off.
func startMetrics(b *broker.Broker, o broker.Options, log zerolog.Logger) (*metrics.Server, error) {
	if !o.MetricsEnabled() {
		return nil, nil
	}
	host := o.MetricsPromExporterHost
	if host == "" {
		host = o.ListenHost
	}
	return metrics.Start(b, metrics.Options{
		Addr:   net.JoinHostPort(host, strconv.Itoa(o.MetricsPromExporterPort)),
		Pprof:  o.MetricsPprofEnable,
		Logger: log,
	})
}
