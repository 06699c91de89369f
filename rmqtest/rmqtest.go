package rmqtest

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/conf"
	"github.com/rmqio/rmq/grpcapi"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testlog"
	"github.com/rmqio/rmq/namesrv"
	"github.com/rmqio/rmq/topicgroup"
)

// Server is a name server and a broker running in the test's process. A
// Server from Start is bound to its test; one from Run to none, and T binds
// a view of it to a test.
type Server struct {
	*server
	// t fails the bound test; for a server from Run without T it is
	// unbound, which panics instead (run.go).
	t failer
}

// server is the state the views of one Server share.
type server struct {
	ns     *namesrv.Server
	b      *broker.Broker
	gs     *grpcapi.Server // nil without WithGRPC / enableGrpc
	clk    *clock.Offset
	settle time.Duration

	// ffMu keeps Restart from replacing b under a FastForward or Settle
	// (the broker serialises the jumps themselves).
	ffMu sync.Mutex

	// What a restart needs: the broker's options with the bound ports, the
	// gRPC endpoint's, and the temp store Close removes (Run only).
	bo      broker.Options
	grpc    grpcapi.Options
	ownDir  string
	life    sync.Mutex // Restart and Close
	closed  bool
	closeEr error
}

// failer is what the helpers need of a test (testing.TB has it).
type failer interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Option adjusts a Server before Start or Run runs it.
type Option func(*config)

type config struct {
	brokerConf  map[string]string
	namesrvConf map[string]string
	start       time.Time
	settle      time.Duration
	grpc        bool
}

// WithBrokerConfig sets broker.conf keys (Java names, e.g.
// "defaultTopicQueueNums": "4" or "transactionCheckInterval": "10000").
// The keys go through the same binding as a broker.conf file, so every key
// the broker knows works, the gRPC endpoint's included (enableGrpc,
// grpcServerPort, ...: see WithGRPC), and an unknown key or bad value fails
// the test (Run returns it as an error). namesrvAddr is always the server's own name server. Later
// options win.
func WithBrokerConfig(kv map[string]string) Option {
	return func(c *config) {
		for k, v := range kv {
			c.brokerConf[k] = v
		}
	}
}

// WithNamesrvConfig sets namesrv.conf keys, like WithBrokerConfig.
func WithNamesrvConfig(kv map[string]string) Option {
	return func(c *config) {
		for k, v := range kv {
			c.namesrvConf[k] = v
		}
	}
}

// WithClockStart starts the broker's virtual clock at t instead of the wall
// clock's now (t may lie in the past or the future). It then runs at the
// speed of real time and FastForward moves it on.
func WithClockStart(t time.Time) Option {
	return func(c *config) { c.start = t }
}

// WithSettleTimeout bounds, in real time, how long FastForward waits for the
// deliveries due at one step to be stored (default 30 s). Past it the test
// fails.
func WithSettleTimeout(d time.Duration) Option {
	return func(c *config) { c.settle = d }
}

// Start runs a name server and a broker on free 127.0.0.1 ports with a
// small store under t.TempDir(). It returns once the broker has registered
// with the name server; t.Cleanup stops both and removes the store.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	// Warnings and errors of the name server and broker go to t.Log (shown
	// for a failed test), every level with RMQ_TEST_LOG set.
	s, err := start(opts, testlog.New(t), t.TempDir())
	if err != nil {
		t.Fatalf("rmqtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("rmqtest: %v", err)
		}
	})
	return &Server{server: s, t: t}
}

// start runs the name server, then the broker (and the gRPC endpoint) on a
// store in dir; on an error it stops what it started.
func start(opts []Option, log zerolog.Logger, dir string) (*server, error) {
	cfg := config{brokerConf: map[string]string{}, namesrvConf: map[string]string{}, settle: 30 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	var initial time.Duration
	if !cfg.start.IsZero() {
		initial = time.Until(cfg.start)
	}
	s := &server{clk: clock.NewOffset(initial), settle: cfg.settle}

	no := namesrv.DefaultOptions()
	no.ListenHost = "127.0.0.1"
	no.ListenPort = 0
	no.Logger = log
	if err := applyConf(cfg.namesrvConf, "WithNamesrvConfig", &no); err != nil {
		return nil, err
	}
	// The gRPC endpoint is off unless asked for, and on a port of the
	// system's choosing unless grpcServerPort says otherwise.
	s.grpc = grpcapi.DefaultOptions()
	s.grpc.Enable, s.grpc.Port = cfg.grpc, 0
	// Tests send every kind of message to auto-created (untyped) topics:
	// the stock proxy's topic message type check is off here unless
	// WithBrokerConfig sets enableTopicMessageTypeCheck=true.
	s.grpc.EnableTopicMessageTypeCheck = false
	bo := brokerDefaults(dir)
	if err := applyConf(cfg.brokerConf, "WithBrokerConfig", &bo, &s.grpc); err != nil {
		return nil, err
	}
	s.grpc.Logger = log.With().Str("component", "grpc").Logger()
	ns, err := namesrv.New(no)
	if err != nil {
		return nil, fmt.Errorf("name server: %w", err)
	}
	if err := ns.Start(); err != nil {
		return nil, fmt.Errorf("start name server: %w", err)
	}
	s.ns = ns
	bo.NamesrvAddr = ns.Addr()
	bo.MessageClock = s.clk
	bo.Logger = log
	s.bo = bo
	if err := s.startBroker(); err != nil {
		ns.Shutdown()
		return nil, err
	}
	return s, nil
}

// startBroker starts a broker (and the gRPC endpoint) with s.bo and
// s.grpc, and records the ports they bound so that a restart takes them
// again.
func (s *server) startBroker() error {
	b, err := broker.New(s.bo)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		return fmt.Errorf("start broker: %w", err)
	}
	// Start registers synchronously; a failed registration is only logged.
	if bd := s.ns.Routes().ClusterInfo().BrokerAddrTable[s.bo.BrokerName]; bd == nil || bd.BrokerAddrs[s.bo.BrokerID] != b.Addr() {
		_ = b.Shutdown()
		return fmt.Errorf("broker %s (%s) did not register with the name server %s", s.bo.BrokerName, b.Addr(), s.ns.Addr())
	}
	var gs *grpcapi.Server
	if s.grpc.Enable {
		gs = grpcapi.New(b, s.grpc)
		if err := gs.Start(); err != nil {
			_ = b.Shutdown()
			return err
		}
		s.grpc.Port = int(gs.Addr().Port())
	}
	s.b, s.gs = b, gs
	s.bo.ListenPort = portOf(b.Addr())
	s.bo.VIPListenPort = portOf(b.VIPAddr())
	// The HA port too: with a listen port set, the broker would otherwise
	// take listenPort+1 on the restart, a port nobody checked (another
	// socket, even a client's, may hold it).
	if p := portOf(b.HAAddr()); p > 0 {
		s.bo.HaListenPortEnable, s.bo.HaListenPort = true, p
	}
	return nil
}

// portOf is the port of a "host:port" the broker reports (0 if none).
func portOf(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0
	}
	return int(ap.Port())
}

// brokerDefaults are the stock broker defaults on 127.0.0.1 and free ports,
// with store files small enough for many servers at once.
func brokerDefaults(dir string) broker.Options {
	o := broker.DefaultOptions()
	o.StorePathRootDir = dir
	o.ListenHost = "127.0.0.1"
	o.BrokerIP1 = "127.0.0.1"
	o.ListenPort = 0
	o.MappedFileSizeCommitLog = 8 << 20 // still holds the stock 4 MiB maxMessageSize
	o.MappedFileSizeConsumeQueue = 20 * 16384
	o.MappedFileSizeTimerLog = 1 << 20
	o.MaxHashSlotNum = 1 << 14
	o.MaxIndexNum = 1 << 16
	o.SmallStore = true // no fallocate: the disk holds what was written
	// No stock fast failure: a test server on a loaded CI runner would
	// answer SYSTEM_BUSY whenever the scheduler kept a pooled send waiting
	// 200 ms. A test of a client's overload path turns it on with
	// WithBrokerConfig(map[string]string{"brokerFastFailureEnable": "true"}).
	o.BrokerFastFailureEnable = false
	return o
}

// applyConf loads kv as a properties file into dst; unknown keys are errors.
func applyConf(kv map[string]string, name string, dst ...any) error {
	if len(kv) == 0 {
		return nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(escape(k, true))
		b.WriteByte('=')
		b.WriteString(escape(kv[k], false))
		b.WriteByte('\n')
	}
	warnings, err := conf.Load(strings.NewReader(b.String()), name, dst...)
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		return fmt.Errorf("%s", strings.Join(warnings, "; "))
	}
	return nil
}

// escape writes s for one properties line: backslashes and line breaks
// always, separators and blanks in keys, blanks at a value's ends.
func escape(s string, isKey bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == ' ' && (isKey || i == 0 || i == len(s)-1):
			b.WriteString(`\ `)
		case isKey && (c == '=' || c == ':' || i == 0 && (c == '#' || c == '!')):
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// NamesrvAddr is the name server's "127.0.0.1:port": give it to clients
// (primitive.NewPassthroughResolver, setNamesrvAddr).
func (s *Server) NamesrvAddr() string { return s.ns.Addr() }

// BrokerAddr is the broker's "127.0.0.1:port", as registered.
func (s *Server) BrokerAddr() string { return s.b.Addr() }

// BrokerVIPAddr is the broker's VIP channel address (stock: port-2), which
// clients with vipChannelEnabled use.
func (s *Server) BrokerVIPAddr() string { return s.b.VIPAddr() }

// CreateTopic creates topic with queues read and write queues on the broker
// and returns once the name server routes it, so that a push consumer can
// subscribe before the first send (the stock Go client refuses to start on
// a topic without a route).
func (s *Server) CreateTopic(topic string, queues int) {
	s.t.Helper()
	s.b.Topics().Update(&topicgroup.TopicConfig{
		TopicName: topic, ReadQueueNums: int32(queues), WriteQueueNums: int32(queues),
		Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: "SINGLE_TAG",
	})
	deadline := time.Now().Add(s.settle)
	for s.ns.Routes().TopicRoute(topic) == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("rmqtest: topic %s not routed by the name server after %v", topic, s.settle)
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitProducer waits until a producer of group is connected to the broker.
// Transaction check-backs go only to a connected producer of the half
// message's group, and the stock Go client registers its producer in a
// heartbeat about a second after Start, only with brokers it has a route to
// (so after its first send): wait for it before fast-forwarding to a check.
func (s *Server) WaitProducer(group string) {
	s.t.Helper()
	deadline := time.Now().Add(s.settle)
	for s.b.Clients().Producers.AvailableConn(group) == nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("rmqtest: no producer of group %s connected after %v", group, s.settle)
		}
		time.Sleep(time.Millisecond)
	}
}

// Now is the broker's virtual time: the wall clock plus every FastForward
// (and the WithClockStart shift). Compute absolute deliver times
// (TIMER_DELIVER_MS, WithDelayTimestamp) from it, not from time.Now.
func (s *Server) Now() time.Time { return s.clk.Now() }

// FastForward moves the broker's virtual clock d ahead. Every delay level,
// timer message, POP invisible time and transaction check pass due within
// d happens, in due order, each no earlier than its time on the virtual
// clock: the clock is moved to the next due time, the broker is left to
// deliver what is due there, and so on up to now+d. FastForward returns once
// everything due by then is stored on its topic and in its consume queue;
// consumers receive it as soon as their next pull (long polling: at once).
// It fails the test if the deliveries of one step take longer than the
// settle timeout. The stepping is the broker's (broker.FastForward), the
// same that CLOCK_FAST_FORWARD runs for `rmq admin fastForward`.
func (s *Server) FastForward(d time.Duration) {
	s.t.Helper()
	s.ffMu.Lock()
	defer s.ffMu.Unlock()
	if _, err := s.b.FastForward(context.Background(), d, s.settle); err != nil {
		s.fail(err)
	}
}

// Settle waits until nothing due at the virtual now is left undelivered
// (FastForward does it after every step).
func (s *Server) Settle() {
	s.t.Helper()
	s.ffMu.Lock()
	defer s.ffMu.Unlock()
	if _, _, err := s.b.WaitSettled(context.Background(), s.settle); err != nil {
		s.fail(err)
	}
}

// fail ends the test on a jump that did not settle, with the goroutines of
// the process: what the broker's services were stuck on.
func (s *Server) fail(err error) {
	s.t.Helper()
	var stacks bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
	s.t.Logf("rmqtest: goroutines of the test process:\n%s", stacks.Bytes())
	s.t.Fatalf("rmqtest: %v", err)
}
