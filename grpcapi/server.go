package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
)

// Metadata keys the 5.x SDKs send with every request (Signature.java).
const (
	mdClientID = "x-mq-client-id"
)

// Server is the gRPC endpoint: apache.rocketmq.v2.MessagingService over the
// broker's Go API.
type Server struct {
	v2.UnimplementedMessagingServiceServer

	b    *broker.Broker
	opts Options
	log  zerolog.Logger

	ln      *sniffListener
	gs      *grpc.Server
	addr    netip.AddrPort // bound address
	clients *clientTable
	txs     *txTable
	routes  *routeCache // the name server routes (cluster_route.go)
	// renewals are the messages received with auto_renew; renewDone is
	// closed when the renewal loop has handed them back at Stop.
	renewals  *renewTable
	renewDone chan struct{}
	done      chan struct{}
	// budget is the broker's in-flight budget, arriving the calls whose
	// request has not arrived whole (limits.go).
	budget   inflightBudget
	arriving *arrivingCalls
	pool     *budgetPool
}

// New makes the endpoint for b; nothing listens until Start.
func New(b *broker.Broker, o Options) *Server {
	o = withDefaults(o)
	s := &Server{b: b, opts: o, log: o.Logger, clients: newClientTable(), txs: newTxTable(), routes: newRouteCache(), renewals: newRenewTable(), done: make(chan struct{}),
		budget: b.InflightBudget(), arriving: newArrivingCalls()}
	s.pool = newBudgetPool(mem.DefaultBufferPool(), s.budget, s.arriving.cancelAll)
	return s
}

// Start listens on the broker's bind address and the configured port and
// serves TLS and plaintext there. The broker must be started.
func (s *Server) Start() error {
	bo := s.b.Options()
	cfg, err := tlsConfig(s.opts, time.Now())
	if err != nil {
		return err
	}
	host := bo.ListenHost
	if host == "" {
		host = "0.0.0.0"
	}
	raw, err := net.Listen("tcp4", net.JoinHostPort(host, strconv.Itoa(s.opts.Port)))
	if err != nil {
		// Say which keys move or turn off the port: a second rmq on one
		// machine meets this first, and the listen error alone names none.
		return fmt.Errorf("grpcapi: the gRPC endpoint for the 5.x SDKs cannot listen (set grpcServerPort to a free port, 0 for any, or enableGrpc=false): %w", err)
	}
	ap, err := netip.ParseAddrPort(raw.Addr().String())
	if err != nil {
		raw.Close()
		return fmt.Errorf("grpcapi: listen address: %w", err)
	}
	s.addr = ap
	s.ln = newSniffListener(raw, cfg)
	s.gs = grpc.NewServer(append(s.limitOptions(),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.unaryACL),
		grpc.ChainStreamInterceptor(s.streamACL),
	)...)
	v2.RegisterMessagingServiceServer(s.gs, s)
	s.b.Transactions().SetChecker(s)
	s.renewDone = make(chan struct{})
	go func() {
		defer close(s.renewDone)
		s.renewLoop()
	}()
	go func() {
		if err := s.gs.Serve(s.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error().Err(err).Msg("grpc endpoint stopped serving")
		}
	}()
	s.log.Info().Str("addr", ap.String()).Msg("grpc endpoint started")
	return nil
}

// Addr is the bound address (valid after Start).
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Stop closes the endpoint and every stream on it.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
		close(s.done)
	}
	s.b.Transactions().SetChecker(nil)
	if s.gs != nil {
		s.gs.Stop()
	}
	if s.renewDone != nil {
		<-s.renewDone
	}
}

// endpoint is this server as the 5.x clients reach it: brokerIP1 and the
// bound port (the stock proxy's local mode).
func (s *Server) endpoint() *v2.Endpoints {
	return &v2.Endpoints{Scheme: v2.AddressScheme_IPv4, Addresses: []*v2.Address{{Host: s.b.Options().BrokerIP1, Port: int32(s.addr.Port())}}}
}

// clientID is the x-mq-client-id of the request.
func clientID(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(mdClientID); len(v) > 0 {
		return v[0]
	}
	return ""
}

// peerAddr is the client's address (unspecified when unknown).
func peerAddr(ctx context.Context) netip.AddrPort {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
}
