package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
)

// Options configures the HTTP endpoint.
type Options struct {
	// Addr is host:port to listen on (metricsPromExporterHost and
	// metricsPromExporterPort).
	Addr string
	// Pprof serves /debug/pprof/ (metricsPprofEnable).
	Pprof bool
	// Routes adds more handlers (the console) to the same mux; OnClose runs
	// when the server has stopped.
	Routes  func(mux *http.ServeMux)
	OnClose func()
	Now     func() time.Time // nil: time.Now
	Logger  zerolog.Logger
}

// Server is the broker's HTTP endpoint: /metrics, /healthz and, when asked
// for, /debug/pprof/.
type Server struct {
	srv     *http.Server
	ln      net.Listener
	done    chan struct{}
	log     zerolog.Logger
	onClose func()
}

// Registry returns a registry with the broker's collector and the Go and
// process collectors. The broker must have been built with
// EnableMetrics called before Start for the figures recorded on the send and
// pull paths (rpc latency, message size, pull positions, DLQ sends).
func Registry(b *broker.Broker, now func() time.Time) *prometheus.Registry {
	if now == nil {
		now = time.Now
	}
	o := b.Options()
	reg := prometheus.NewRegistry()
	c := newCollector(b, prometheus.Labels{
		labelCluster: o.BrokerClusterName, labelNodeType: "broker", labelNodeID: o.BrokerName,
	}, now)
	reg.MustRegister(c, popCollector{c})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Start listens on o.Addr and serves in the background.
func Start(b *broker.Broker, o Options) (*Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(Registry(b, o.Now), promhttp.HandlerOpts{ErrorLog: promLogger{o.Logger}}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.Ready() {
			http.Error(w, "not registered with every name server", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.Routes != nil {
		o.Routes(mux)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", o.Addr, err)
	}
	s := &Server{
		srv:     &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:      ln,
		done:    make(chan struct{}),
		log:     o.Logger,
		onClose: o.OnClose,
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("metrics: HTTP server stopped")
		}
	}()
	s.log.Info().Str("addr", ln.Addr().String()).Bool("pprof", o.Pprof).Msg("metrics endpoint listening")
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to 5 s for running requests.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if s.onClose != nil {
		s.onClose()
	}
	return err
}

// promLogger routes promhttp's errors to the broker log.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Error().Msg(fmt.Sprint(v...)) }
