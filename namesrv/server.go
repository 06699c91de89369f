package namesrv

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

// Server is the name server: a remoting server over a RouteInfoManager and a
// KVConfigManager, plus the periodic scan that expires silent brokers.
type Server struct {
	opts   Options
	log    zerolog.Logger
	routes *RouteInfoManager
	kv     *KVConfigManager
	srv    *remoting.Server
	// handlers is the dispatch table (processors.go), fixed by New.
	handlers map[int32]handlerFunc

	// notifier sends NOTIFY_MIN_BROKER_ID_CHANGE (acting_master.go).
	notifier *remoting.Client

	brokerConns sync.Map     // connection id → *remoting.Conn that registered a broker
	port        atomic.Int32 // the bound port, once started

	// live is opts as UPDATE_NAMESRV_CONFIG changed them (nil: unchanged);
	// cfgMu serialises the updates (config_codes.go).
	live  atomic.Pointer[Options]
	cfgMu sync.Mutex

	mu      sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}
	scanned sync.WaitGroup
}

// New validates opts, loads the KV config and prepares the listener.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	kv, err := NewKVConfigManager(opts.KVConfigPath, opts.Logger)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:   opts,
		log:    opts.Logger,
		routes: NewRouteInfoManager(opts.Now, opts.Logger),
		kv:     kv,
		stop:   make(chan struct{}),
	}
	s.handlers = s.processors()
	s.routes.SetActingMaster(opts.SupportActingMaster, opts.NotifyMinBrokerIDChanged)
	if opts.NotifyMinBrokerIDChanged {
		s.notifier = remoting.NewClient(remoting.ClientOptions{})
	}
	listen := net.JoinHostPort(opts.ListenHost, strconv.Itoa(opts.ListenPort))
	so := remoting.ServerOptions{Addrs: []string{listen}, Logger: opts.Logger}
	opts.ServerConfig.Apply(&so)
	s.srv, err = remoting.NewServer(s, so)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	return s, nil
}

// Start listens and starts the broker expiry scan; it returns once connections
// are accepted. It prints nothing.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("namesrv: already started")
	}
	if err := s.srv.Start(); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	_, port, err := net.SplitHostPort(s.srv.Addrs()[0])
	if err != nil {
		s.srv.Stop()
		return fmt.Errorf("namesrv: bound address: %w", err)
	}
	p, _ := strconv.Atoi(port)
	s.port.Store(int32(p))
	s.started = true
	s.scanned.Add(1)
	go s.scanLoop()
	s.log.Info().Str("addr", s.Addr()).Msg("name server started")
	return nil
}

// Shutdown stops the scan and closes the listener and every connection. It may
// be called more than once, and before Start.
func (s *Server) Shutdown() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	close(s.stop)
	s.scanned.Wait()
	if started {
		s.srv.Stop()
	}
	if s.notifier != nil {
		s.notifier.Close()
	}
	s.log.Info().Msg("name server stopped")
}

// Addr is the address clients should dial: the listen host, or 127.0.0.1
// when listening on every interface, and the port listened on (with
// ListenPort 0, the port the system chose; known once Start returned).
func (s *Server) Addr() string {
	host := s.opts.ListenHost
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	port := s.opts.ListenPort
	if p := s.port.Load(); p != 0 {
		port = int(p)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// Routes exposes the route table (tests, diagnostics).
func (s *Server) Routes() *RouteInfoManager { return s.routes }

// KVConfig exposes the KV config store.
func (s *Server) KVConfig() *KVConfigManager { return s.kv }

func (s *Server) scanLoop() {
	defer s.scanned.Done()
	t := time.NewTicker(s.opts.ScanNotActiveBrokerInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.ScanNotActiveBroker()
		}
	}
}

// ScanNotActiveBroker runs one expiry pass now: brokers silent for longer than
// BrokerChannelExpiredTime are dropped and their connections closed.
func (s *Server) ScanNotActiveBroker() {
	for _, e := range s.routes.ScanNotActiveBroker(s.opts.BrokerChannelExpiredTime) {
		if v, ok := s.brokerConns.Load(e.ConnID); ok {
			v.(*remoting.Conn).Close()
		}
	}
	s.notifyMinBrokerIDChanges()
}

// ConnClosed implements remoting.ConnObserver: brokers registered over the
// closed connection leave the route table at once.
func (s *Server) ConnClosed(c *remoting.Conn) {
	if x := s.opts.Controller; x != nil {
		x.ConnClosed(c)
	}
	if _, ok := s.brokerConns.LoadAndDelete(c.ID()); !ok {
		return
	}
	if gone := s.routes.ConnClosed(c.ID()); len(gone) > 0 {
		s.log.Info().Strs("brokers", gone).Str("remote", c.RemoteAddr()).Msg("broker connection closed, routes removed")
	}
	s.notifyMinBrokerIDChanges()
}
