package broker

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/broker/brokeradmin"
	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/store/ha"
	"github.com/rmqio/rmq/topicgroup"
)

// HandlerFunc serves one request code. It returns the response, or nil when
// the request is parked (long polling) or needs no reply.
type HandlerFunc func(c *remoting.Conn, req *remoting.Command) *remoting.Command

// Broker is one broker node: request processors over a store.
type Broker struct {
	opts  Options
	log   zerolog.Logger
	clock clock.Clock
	// host is brokerIP1:listenPort of the start, the first STOREHOST; what the
	// broker advertises now is in runtime() (runtime_config.go).
	host netip.AddrPort
	// msgClock is Options.MessageClock: store timestamps, delay levels,
	// timers and transaction check-backs run on it.
	msgClock clock.Clock
	// clockCtl moves msgClock ahead on request (clock_control.go).
	clockCtl clockControl
	vipAddr  string     // brokerIP1:VIP port
	gate     *startGate // with ListenPort 0: the handler of the ports New bound

	store  *store.Store
	server *remoting.Server
	// Replication (ha.go): the HA service of a master or the client of a
	// SLAVE, set by Start; haPortBound is the HA port the system chose.
	haMaster    *ha.Master
	haClient    *ha.Client
	haPortBound atomic.Int32
	nsCli       *remoting.Client // to the name servers
	am          actingMaster     // slave-acting-master state (acting_master.go)
	ctl         *controllerMode  // controller mode (role.go); nil unless enableControllerMode

	// core: topics, send, pull, long polling, registration (topic_config.go, send_processor.go, pull_*.go, register.go)
	topics   *TopicConfigManager
	pullHold *PullRequestHoldService
	// events receives the store's callbacks (lifecycle.go).
	events *storeEvents
	// putHooks see every message before it is stored (putMessage); they are
	// installed before Start and never change afterwards.
	putHooks []putHook
	// keyedHooks is len(putHooks) while every hook is one hookProperties
	// describes; a send with none of those keys then skips the hooks and
	// the properties map (plainProperties). Another hook disables that.
	keyedHooks int
	levels     schedule.Levels // messageDelayLevel
	// deliveryStarted is set by Start on a master just before the delay,
	// timer, transaction and POP services start: from then on the store's
	// dispatcher wakes them and retention keeps and moves what they hold.
	deliveryStarted atomic.Bool
	stats           brokeradmin.Stats    // GET_BROKER_RUNTIME_INFO counters
	bstats          *brokerstats.Manager // per-topic and per-group stats (stats_processors.go)
	// refusals rate-limits the log lines of refused requests (a full disk
	// refuses every send of a retrying client) and counts them by reason
	// for the metrics endpoint; a background loop (Start) flushes its
	// summaries every interval.
	refusals *ratelog.Limiter
	// What a SLAVE learned from its registrations (role.go).
	masterAddr   atomic.Pointer[string]
	haMasterAddr atomic.Pointer[string]
	// registeredAll is true after a registration every name server accepted
	// (metrics_access.go: Ready).
	registeredAll atomic.Bool

	// The other concerns, one package each (doc.go), built on the store
	// (lifecycle.go: openServices).
	services
	// requesters maps request senders' client ids to their connections (reply.go).
	requesters requesterTable

	handlers map[int32]HandlerFunc
	// acl checks every request before dispatch; nil when aclEnable is false (acl.go).
	acl *acl.Manager
	// auth is ACL 2.0; nil unless configured (auth.go).
	auth *auth.Service
	// budget is serverMaxInflightBytes, shared by the remoting server and
	// the gRPC endpoint (InflightBudget).
	budget *remoting.Budget
	// live holds the options UPDATE_BROKER_CONFIG changes at run time (runtime_config.go).
	live atomic.Pointer[runtimeConfig]
	// configMu serialises this broker's UPDATE_BROKER_CONFIG
	// read-modify-write cycles (a broker's own: two brokers in one process
	// update their configs independently).
	configMu sync.Mutex
	// routeNext rotates the first name server NamesrvRoute asks, as the
	// client's MQClientAPIImpl picks one and moves on when it fails.
	routeNext atomic.Uint32
	// regMu serialises registrations: each takes its snapshot under it, so
	// the name servers receive them in snapshot order and the last one they
	// get is never older than a configuration already answered (register.go).
	regMu sync.Mutex
	// regConns (under regMu) holds, per name server, the serial of the
	// connection over which it last accepted a full registration; with no
	// entry, the next registration it gets is a full one (register.go).
	regConns map[string]uint64

	// life guards closed; every request and woken pull runs inside inflight,
	// entered under a read lock while !closed, so Shutdown can wait for all
	// of them before it closes the store.
	life     sync.RWMutex
	closed   bool
	inflight sync.WaitGroup

	stop     chan struct{}  // closed by Shutdown: background loops end
	bg       sync.WaitGroup // background loops
	regKick  chan struct{}  // capacity 1: a registration is wanted soon
	started  atomic.Bool
	shutOnce sync.Once
	shutErr  error
}

// Addr is the broker's advertised "ip:port" (brokerIP1:listenPort), which
// UPDATE_BROKER_CONFIG may change while the broker runs.
func (b *Broker) Addr() string { return b.runtime().addr() }

// VIPAddr is the "ip:port" of the VIP channel (stock: listenPort-2), which
// old Java clients with vipChannelEnabled use.
func (b *Broker) VIPAddr() string { return b.vipAddr }

// Store exposes the message store (tests, admin).
func (b *Broker) Store() *store.Store { return b.store }

// Topics exposes the topic table.
func (b *Broker) Topics() *TopicConfigManager { return b.topics }

// InflightBudget is the broker's budget of request bytes not yet arrived
// whole (serverMaxInflightBytes), which its remoting server and its gRPC
// endpoint share.
func (b *Broker) InflightBudget() *remoting.Budget { return b.budget }

// Pop exposes the POP consumption service (tests, the gRPC front end).
func (b *Broker) Pop() *pop.Service { return b.pop }

// Clients exposes the client managers (tests).
func (b *Broker) Clients() *clients.Service { return b.clients }

// Transactions exposes the transaction service (tests).
func (b *Broker) Transactions() *transaction.Service { return b.tx }

// storeHost is the address written as STOREHOST and encoded in offsetMsgIds.
func (b *Broker) storeHost() netip.AddrPort { return b.store.StoreHost() }

// ServeRemoting implements remoting.Handler.
func (b *Broker) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.enter() {
		return remoting.NewResponse(req, remoting.ServiceNotAvailable, "the broker is shutting down")
	}
	defer b.inflight.Done()
	if b.acl != nil {
		if resp, denied := b.checkACL(c, req); denied {
			return resp
		}
	}
	if b.auth != nil {
		if resp, denied := b.checkAuth(c, req); denied {
			return resp
		}
	}
	h := b.handlers[req.Code]
	if h == nil {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
	}
	if d := b.bstats.Detail(); d != nil {
		return b.timedServe(d, h, c, req)
	}
	return h(c, req)
}

// startGate is the handler of ports bound before the broker can serve them
// (ListenPort 0: New binds to learn its address): it refuses requests until
// Start opens it, then hands everything to the broker.
type startGate struct{ b atomic.Pointer[Broker] }

func (g *startGate) open(b *Broker) { g.b.Store(b) }

func (g *startGate) ServeRemoting(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b := g.b.Load(); b != nil {
		return b.ServeRemoting(c, req)
	}
	return remoting.NewResponse(req, remoting.ServiceNotAvailable, "the broker is starting")
}

func (g *startGate) ServeInline(c *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	if b := g.b.Load(); b != nil {
		return b.ServeInline(c, req)
	}
	return nil, false
}

func (g *startGate) ConnClosed(c *remoting.Conn) {
	if b := g.b.Load(); b != nil {
		b.ConnClosed(c)
	}
}

// enter registers one unit of work; false once shutdown has begun. A true
// result must be paired with b.inflight.Done().
func (b *Broker) enter() bool {
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return false
	}
	b.inflight.Add(1)
	return true
}

// ConnClosed implements remoting.ConnObserver.
func (b *Broker) ConnClosed(c *remoting.Conn) {
	b.pullHold.dropConn(c)
	b.clients.ConnClosed(c)
	b.requesters.dropConn(c)
}

func (b *Broker) registerHandlers() {
	b.handlers = make(map[int32]HandlerFunc)
	for code, h := range b.coreProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.clients.Processors() {
		b.handlers[code] = h
	}
	for code, h := range b.tx.Processors() {
		b.handlers[code] = h
	}
	for code, h := range b.admin.Processors() {
		b.handlers[code] = h
	}
	for code, h := range b.admin.RetentionProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.statsProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.pop.Processors(func() bool { return b.runtime().BrokerPermission&topicgroup.PermRead != 0 }) {
		b.handlers[code] = h
	}
	for code, h := range b.aclProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.authProcessors() {
		b.handlers[code] = h
	}
	for code, h := range b.clockProcessors() {
		b.handlers[code] = h
	}
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
