package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/auth"
	"github.com/rmqio/rmq/broker/brokeradmin"
	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/broker/clockctl"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/store/ha"
	"github.com/rmqio/rmq/timer"
	"github.com/rmqio/rmq/topicgroup"
)

// The Broker: its fields and request dispatch (ServeRemoting: access
// control, then the handler table), in these parts:
//
//	dispatch        Broker, ServeRemoting, registerHandlers
//	handler table   coreProcessors: the codes the core serves itself
//	access control  checkACL (plain_acl.yml), checkAuth (ACL 2.0), their codes
//	stats requests  VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS, …
//	accessors       what the metrics endpoint, the console and tests read

// ----- Dispatch -----

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
	// clockCtl moves msgClock ahead on request (delivery.go).
	clockCtl clockctl.Control
	vipAddr  string     // brokerIP1:VIP port
	gate     *startGate // with ListenPort 0: the handler of the ports New bound

	store  *store.Store
	server *remoting.Server
	// Replication (ha.go): the HA service of a master or the client of a
	// SLAVE, set by Start; haPortBound is the HA port the system chose.
	haMaster *ha.Master
	haClient *ha.Client
	// haReady: haClient and haMaster are set (startHA); requests served
	// before then (the server starts first) must not read them.
	haReady     atomic.Bool
	haPortBound atomic.Int32
	nsCli       *remoting.Client // to the name servers
	am          actingMaster     // slave-acting-master state (acting_master.go)
	ctl         *controllerMode  // controller mode (role.go); nil unless enableControllerMode

	// core: topics, send, pull, long polling, registration (topics.go, send.go, pull.go, register.go)
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
	bstats          *brokerstats.Manager // per-topic and per-group stats
	// refusals rate-limits the log lines of refused requests (a full disk
	// refuses every send of a retrying client) and counts them by reason
	// for the metrics endpoint; a background loop (Start) flushes its
	// summaries every interval.
	refusals *ratelog.Limiter
	// What a SLAVE learned from its registrations (role.go).
	masterAddr   atomic.Pointer[string]
	haMasterAddr atomic.Pointer[string]
	// registeredAll is true after a registration every name server accepted
	// (Ready).
	registeredAll atomic.Bool

	// The other concerns, one package each (doc.go), built on the store
	// (lifecycle.go: openServices).
	services
	// requesters maps request senders' client ids to their connections (send.go).
	requesters requesterTable

	handlers map[int32]HandlerFunc
	// acl checks every request before dispatch; nil when aclEnable is false.
	acl *acl.Manager
	// auth is ACL 2.0; nil unless configured.
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

// ----- The handler table of the core -----

// coreProcessors maps the request codes served by the core of the broker:
// sends, pulls, offset/time/view queries and the broker config.
func (b *Broker) coreProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.SendMessage:        b.processSend,
		remoting.SendMessageV2:      b.processSend,
		remoting.SendBatchMessage:   b.processSend,
		remoting.SendReplyMessage:   b.processReply,
		remoting.SendReplyMessageV2: b.processReply,

		remoting.ConsumerSendMsgBack: b.processConsumerSendMsgBack,
		remoting.RecallMessage:       b.processRecallMessage,

		remoting.PullMessage:     b.processPullRequest,
		remoting.LitePullMessage: b.processPullRequest,

		remoting.GetMaxOffset:            b.processGetMaxOffset,
		remoting.GetMinOffset:            b.processGetMinOffset,
		remoting.SearchOffsetByTimestamp: b.processSearchOffset,
		remoting.GetEarliestMsgStoretime: b.processEarliestMsgStoreTime,
		remoting.ViewMessageByID:         b.processViewMessageByID,
		remoting.QueryConsumerOffset:     b.processQueryConsumerOffset,

		remoting.GetBrokerConfig:    b.processGetBrokerConfig,
		remoting.UpdateBrokerConfig: b.processUpdateBrokerConfig,

		remoting.NotifyMinBrokerIDChange: b.processNotifyMinBrokerIDChange,
		remoting.NotifyBrokerRoleChanged: b.processNotifyBrokerRoleChanged, // role.go, controller mode
		remoting.GetBrokerEpochCache:     b.processGetBrokerEpochCache,
		remoting.ExchangeBrokerHAInfo:    b.processExchangeBrokerHAInfo,

		remoting.GetAllDelayOffset:            b.processGetAllDelayOffset,
		remoting.GetSystemTopicListFromBroker: b.processGetSystemTopicListFromBroker,
		remoting.CleanUnusedTopic:             b.processCleanUnusedTopic,

		remoting.GetBrokerHaStatus: b.processGetBrokerHAStatus, // ha_status.go

		remoting.GetTimerCheckPoint: b.processGetTimerCheckPoint, // timer.go
		remoting.GetTimerMetrics:    b.processGetTimerMetrics,
	}
}

// ----- Access control: the plain ACL (plain_acl.yml) -----

// aclFilePath is where the broker's plain_acl.yml is: aclFile when set,
// else the stock place $ROCKETMQ_HOME/conf/plain_acl.yml, else
// <storePathRootDir>/config/plain_acl.yml.
func aclFilePath(opts Options) string {
	if opts.AclFile != "" {
		return opts.AclFile
	}
	if home := os.Getenv("ROCKETMQ_HOME"); home != "" {
		return filepath.Join(home, "conf", "plain_acl.yml")
	}
	return filepath.Join(opts.StorePathRootDir, "config", "plain_acl.yml")
}

// checkACL runs the ACL before dispatch (BrokerController.initialAcl's rpc
// hook): nil lets the request through; a refusal is the stock SYSTEM_ERROR
// with the AclException's description (no reply to a oneway request).
func (b *Broker) checkACL(c *remoting.Conn, req *remoting.Command) (resp *remoting.Command, denied bool) {
	err := b.acl.Check(c.RemoteAddr(), req)
	if err == nil {
		return nil, false
	}
	remark := err.Error()
	if d, ok := err.(*acl.Denied); ok {
		remark = d.Remark()
	}
	// Counted by the refusal limiter (a client with a wrong key retries
	// every request), at debug level as before.
	b.refusals.Event(&b.log, zerolog.DebugLevel, "acl_denied", remoting.SystemError).Str("remote", c.RemoteAddr()).
		Int32("requestCode", req.Code).Str("cause", err.Error()).Msg("acl: request refused")
	if req.IsOneway() {
		return nil, true
	}
	return remoting.NewResponse(req, remoting.SystemError, remark), true
}

// aclLoop reloads plain_acl.yml when its content changes, every
// acl.ReloadInterval of the broker clock (the stock AclFileWatchService).
func (b *Broker) aclLoop() {
	b.every(acl.ReloadInterval*time.Millisecond, func() {
		changed, err := b.acl.Reload()
		switch {
		case err != nil:
			b.log.Error().Err(err).Msg("acl: reload failed; the previous rules stay")
		case changed:
			b.log.Info().Str("file", b.acl.Path()).Msg("acl: reloaded")
		}
	})
}

func (b *Broker) aclProcessors() map[int32]HandlerFunc {
	out := make(map[int32]HandlerFunc)
	info := func() acl.BrokerInfo {
		return acl.BrokerInfo{ClusterName: b.opts.BrokerClusterName, BrokerName: b.opts.BrokerName, BrokerAddr: b.Addr()}
	}
	for code, h := range acl.Processors(b.acl, info, b.opts.AclConfigRequiresAdmin) {
		out[code] = h
	}
	return out
}

// ACL is the broker's plain ACL, nil when aclEnable is false; the gRPC
// endpoint checks its requests against the same rules.
func (b *Broker) ACL() *acl.Manager { return b.acl }

// ----- Access control: ACL 2.0 -----

// ACL 2.0 (package auth) in the broker: the service when any of its keys
// asks for it, its check before dispatch (after the plain ACL's, where both
// are configured), and the codes 3001-3010.

// openAuth starts ACL 2.0 from opts, nil when none of its keys is set.
func openAuth(opts Options, configDir string) (*auth.Service, error) {
	cfg := auth.Config{
		AuthenticationEnabled:                opts.AuthenticationEnabled,
		AuthorizationEnabled:                 opts.AuthorizationEnabled,
		AuthenticationProvider:               opts.AuthenticationProvider,
		AuthorizationProvider:                opts.AuthorizationProvider,
		AuthenticationMetadataProvider:       opts.AuthenticationMetadataProvider,
		AuthorizationMetadataProvider:        opts.AuthorizationMetadataProvider,
		AuthenticationWhitelist:              opts.AuthenticationWhitelist,
		AuthorizationWhitelist:               opts.AuthorizationWhitelist,
		InitAuthenticationUser:               opts.InitAuthenticationUser,
		InnerClientAuthenticationCredentials: opts.InnerClientAuthenticationCredentials,
		MigrateAuthFromV1Enabled:             opts.MigrateAuthFromV1Enabled,
		ClusterName:                          opts.BrokerClusterName,
		FS:                                   opts.FS,
	}
	if !cfg.Enabled() && cfg.InitAuthenticationUser == "" && cfg.InnerClientAuthenticationCredentials == "" && !cfg.MigrateAuthFromV1Enabled {
		return nil, nil
	}
	// The stock migration reads $ROCKETMQ_HOME/conf/plain_acl.yml (rmq:
	// aclFile first, as for the plain ACL) and conf/acl/*.yml.
	return auth.Open(cfg, configDir, auth.V1Files(os.Getenv("ROCKETMQ_HOME"), aclFilePath(opts)))
}

// checkAuth is the broker's authentication and authorization pipeline
// (BrokerController.initialRequestPipeline): a refusal is NO_PERMISSION
// with the stock message (no reply to a oneway request).
func (b *Broker) checkAuth(c *remoting.Conn, req *remoting.Command) (resp *remoting.Command, denied bool) {
	err := b.auth.Check(c.RemoteAddr(), req)
	if err == nil {
		return nil, false
	}
	var d *auth.Denied
	remark := err.Error()
	if errors.As(err, &d) {
		remark = d.Msg
	}
	b.refusals.Event(&b.log, zerolog.DebugLevel, "auth_denied", remoting.NoPermission).Str("remote", c.RemoteAddr()).
		Int32("requestCode", req.Code).Str("cause", remark).Msg("auth: request refused")
	if req.IsOneway() {
		return nil, true
	}
	return remoting.NewResponse(req, remoting.NoPermission, remark), true
}

// authProcessors are the handlers of 3001-3010, served whether or not
// ACL 2.0 runs (auth.Unconfigured).
func (b *Broker) authProcessors() map[int32]HandlerFunc {
	out := make(map[int32]HandlerFunc)
	hs := auth.Unconfigured()
	if b.auth != nil {
		hs = b.auth.Processors()
	}
	for code, h := range hs {
		out[code] = func(_ *remoting.Conn, req *remoting.Command) *remoting.Command { return h(req) }
	}
	return out
}

// Auth is the broker's ACL 2.0, nil when not configured; the gRPC
// endpoint checks its calls with it.
func (b *Broker) Auth() *auth.Service { return b.auth }

// ----- Stats requests -----

// statsProcessors maps the requests served from the broker stats
// (brokerstats.Manager) and the client tables: mqadmin statsAll,
// brokerConsumeStats and producer, rocketmq-exporter and the dashboard.
func (b *Broker) statsProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.ViewBrokerStatsData:   b.processViewBrokerStatsData,
		remoting.GetBrokerConsumeStats: b.processGetBrokerConsumeStats,
		remoting.GetAllProducerInfo:    b.processGetAllProducerInfo,
	}
}

// BrokerStats exposes the per-topic and per-group stats (metrics, console).
func (b *Broker) BrokerStats() *brokerstats.Manager { return b.bstats }

// processViewBrokerStatsData serves VIEW_BROKER_STATS_DATA: the minute, hour
// and day windows of one stats item (J4 AdminBrokerProcessor.ViewBrokerStatsData).
func (b *Broker) processViewBrokerStatsData(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ViewBrokerStatsDataRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	name, key := hd.StatsName, hd.StatsKey
	var it *brokerstats.Item
	if set := b.bstats.Set(name); set != nil {
		it = set.LookupText(key)
	}
	if it == nil {
		return remoting.NewResponse(req, remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key))
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = brokerstats.BrokerStatsData(it)
	return resp
}

// processGetBrokerConsumeStats serves GET_BROKER_CONSUME_STATS (mqadmin
// brokerConsumeStats): every group's ConsumeStats, in a ConsumeStatsList.
func (b *Broker) processGetBrokerConsumeStats(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	// isOrder is a Boolean that cannot fail to decode.
	hd, _ := remoting.DecodeHeader[remoting.GetConsumeStatsInBrokerHeader](req)
	isOrder := hd.IsOrder
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = b.clients.BrokerConsumeStats(b.Addr(), isOrder, b.bstats.GroupGetTps)
	return resp
}

// processGetAllProducerInfo serves GET_ALL_PRODUCER_INFO (mqadmin producer,
// rocketmq-exporter): a ProducerTableInfo {"data":{group:[ProducerInfo]}}.
func (b *Broker) processGetAllProducerInfo(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := json.Marshal(struct {
		Data map[string][]clients.ProducerInfo `json:"data"`
	}{b.clients.Producers.Table()})
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// ----- Metrics and accessors -----

// Accessors for the metrics endpoint and the console (read-only use).

// EnableMetrics turns on the figures only the metrics endpoint reads
// (request latencies, message sizes, pull positions, DLQ sends), best
// before Start. Without it the send and pull paths record none of them.
func (b *Broker) EnableMetrics() { b.bstats.EnableDetail() }

// Refusals counts refused requests by reason and response code (every
// front end's) and rate-limits their log lines.
func (b *Broker) Refusals() *ratelog.Limiter { return b.refusals }

// Schedule is the delay-level service.
func (b *Broker) Schedule() *schedule.Service { return b.sched }

// Timers is the timer store, nil when timerWheelEnable is off.
func (b *Broker) Timers() *timer.TimerStore { return b.timers }

// Permission is the broker's current brokerPermission (it changes with
// UPDATE_BROKER_CONFIG and wipeWritePerm).
func (b *Broker) Permission() int32 { return b.runtime().BrokerPermission }

// TopicCount is the number of topics in the topic table.
func (b *Broker) TopicCount() int {
	b.topics.mu.RLock()
	defer b.topics.mu.RUnlock()
	return len(b.topics.table)
}

// Options are the options the broker was built with.
func (b *Broker) Options() Options { return b.opts }

// Ready is true once the broker has started and, with name servers
// configured, its last registration was accepted by every one of them.
func (b *Broker) Ready() bool {
	if !b.started.Load() {
		return false
	}
	if len(b.opts.NamesrvAddrs()) == 0 {
		return true
	}
	return b.registeredAll.Load()
}

// timedServe runs h and records its latency by request and response code;
// a parked request (nil response) is not recorded.
func (b *Broker) timedServe(d *brokerstats.Detail, h HandlerFunc, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	begin := b.clock.Now()
	resp := h(c, req)
	if resp == nil {
		return nil
	}
	took := b.clock.Now().Sub(begin)
	d.RecordRPC(req.Code, resp.Code, took)
	// 5.x times topic and group creates apart (AdminBrokerProcessor:
	// topicCreateExecuteTime, consumerGroupCreateExecuteTime), over the
	// whole request, by outcome and, for a topic, whether the topic named
	// is a system topic. The _LIST forms are timed as stock times them: a
	// body that does not decode is not (it fails before the timed block);
	// the topic list's is_system is TopicValidator.isSystemTopic of the
	// names joined as "a;b;", so only a first topic with the system prefix
	// sets it.
	switch req.Code {
	case remoting.UpdateAndCreateTopicList:
		if raw, err := remoting.DecodeListBody(req.Body, "topicConfigList", len(req.Body)); err == nil {
			var names strings.Builder
			for _, r := range raw {
				var tc struct {
					TopicName string `json:"topicName"`
				}
				_ = remoting.UnmarshalBody(r, &tc)
				names.WriteString(tc.TopicName + ";")
			}
			sys := b.topics.IsSystemTopic(names.String())
			d.TopicCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success, System: sys}, took.Milliseconds())
		}
	case remoting.UpdateAndCreateSubscriptionGroupList:
		if _, err := remoting.DecodeListBody(req.Body, "groupConfigList", len(req.Body)); err == nil {
			d.GroupCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success}, took.Milliseconds())
		}
	case remoting.UpdateAndCreateTopic:
		// Only the topic matters here; the processor has answered a bad header.
		hd, _ := remoting.DecodeHeader[remoting.CreateTopicRequestHeader](req)
		sys := b.topics.IsSystemTopic(hd.Topic)
		d.TopicCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success, System: sys}, took.Milliseconds())
	case remoting.UpdateAndCreateSubscriptionGroup:
		d.GroupCreate.Observe(brokerstats.CreateKey{Success: resp.Code == remoting.Success}, took.Milliseconds())
	}
	return resp
}

// popMetrics counts a pop for the metrics endpoint (pop.PopCounter).
type popMetrics struct{ stats *brokerstats.Manager }

func (p popMetrics) CountPop(topic, group string, retry bool, msgs, bytes int) {
	if d := p.stats.Detail(); d != nil {
		d.RecordPop(topic, group, retry, msgs, bytes)
	}
}

// MetricsConfig holds the keys of the HTTP endpoint (package metrics),
// which cmd/rmq starts next to the broker.
type MetricsConfig struct {
	// MetricsExporterType is the 5.x key: "PROM" serves Prometheus metrics;
	// "DISABLE" (the default) serves nothing.
	MetricsExporterType string `conf:"metricsExporterType"`
	// MetricsPromExporterHost is the interface to listen on ("" means
	// bindAddress).
	MetricsPromExporterHost string `conf:"metricsPromExporterHost"`
	MetricsPromExporterPort int    `conf:"metricsPromExporterPort"`
	// MetricsPprofEnable also serves /debug/pprof/ on the metrics port.
	MetricsPprofEnable bool `conf:"metricsPprofEnable"`
	// ConsoleEnable serves the read-only web console on the metrics port
	// (at / and /console).
	ConsoleEnable bool `conf:"consoleEnable"`
}

// MetricsEnabled reports whether metricsExporterType asks for Prometheus.
func (c MetricsConfig) MetricsEnabled() bool { return strings.EqualFold(c.MetricsExporterType, "PROM") }

func defaultMetricsConfig() MetricsConfig {
	return MetricsConfig{MetricsExporterType: "DISABLE", MetricsPromExporterPort: 5557, ConsoleEnable: true}
}

// componentLog is log for a subsystem: its "component" field lets
// --log-level set the subsystem's level. log must be the process's logger
// (Options.Logger), never a component's: zerolog appends fields, so a
// second "component" would repeat the key, which JSON log stores such as
// Elasticsearch refuse.
func componentLog(log zerolog.Logger, name string) zerolog.Logger {
	return log.With().Str("component", name).Logger()
}

// offsetsAndStats forgets a deleted topic's consumer offsets and its stats
// items (brokeradmin's DELETE_TOPIC_IN_BROKER).
type offsetsAndStats struct {
	offsets interface{ RemoveTopic(string) }
	stats   *brokerstats.Manager
}

func (o offsetsAndStats) RemoveTopic(topic string) {
	o.offsets.RemoveTopic(topic)
	o.stats.RemoveTopic(topic)
}

// sampleRuntimeRates records the store's pull counters for the get TPS
// figures of GET_BROKER_RUNTIME_INFO (found, missed, total).
func (b *Broker) sampleRuntimeRates(now time.Time) {
	info := b.store.RuntimeInfo()
	total, _ := strconv.ParseInt(info["getMessageTimesTotal"], 10, 64)
	found, _ := strconv.ParseInt(info["getMessageTimesTotalFound"], 10, 64)
	b.bstats.Runtime.Sample(now, found, total-found, total)
}

// liveSettings are the live options (runtime_config.go) as the services
// read them per request (clients.LiveSettings, brokeradmin.LiveSettings).
type liveSettings struct{ b *Broker }

func (s liveSettings) PropertyFilterEnabled() bool { return s.b.runtime().EnablePropertyFilter }
func (s liveSettings) NotifyConsumerIdsChanged() bool {
	return s.b.runtime().NotifyConsumerIdsChangedEnable
}
func (s liveSettings) DefaultQueryMaxNum() int { return s.b.runtime().DefaultQueryMaxNum }

// runtimeExtras is the broker's part of GET_BROKER_RUNTIME_INFO
// (brokeradmin.RuntimeExtras).
type runtimeExtras struct{ b *Broker }

func (r runtimeExtras) AddRuntimeInfo(t map[string]string) { r.b.runtimeInfoExtras(t) }

// runtimeInfoExtras adds to GET_BROKER_RUNTIME_INFO the timer figures and
// the stock StoreStatsService get rates ("%.2f %.2f %.2f" over 10 s, 1 min
// and 10 min).
func (b *Broker) runtimeInfoExtras(t map[string]string) {
	b.timerRuntimeInfo(t)
	b.laneRuntimeInfo(t) // fastfail.go
	t["getFoundTps"] = b.bstats.Runtime.Text(0)
	t["getMissTps"] = b.bstats.Runtime.Text(1)
	t["getTotalTps"] = b.bstats.Runtime.Text(2)
	b.haRuntimeInfo(t)
}

// Replication keys of GET_BROKER_RUNTIME_INFO. Stock 4.9.8 and 5.3.3 put
// none in the table (the HA offsets show only as commitLogMaxOffset, and
// 4.9.8 logs slaveFallBehindMuch once a minute, printMasterAndSlaveDiff);
// 5.x serves them apart, as HARuntimeInfo (GET_BROKER_HA_STATUS). rmq adds
// them to the table, so that mqadmin brokerStatus, rmq admin and the
// console show a pair's state from one request, under the names of the
// stock figures they are:
//
//	brokerRole, brokerId              both (the BrokerConfig keys; brokerActive is 5.3.3's)
//	haConnectionCount                 master: connected slaves (HAService.connectionCount)
//	haPush2SlaveMaxOffset             master: the highest offset a slave acked (push2SlaveMaxOffset)
//	haSlaveFallBehindMuch             master: commitLogMaxOffset - haPush2SlaveMaxOffset (DefaultMessageStore.slaveFallBehindMuch)
//	haSlaveAckOffset_<addr>           master: one slave's last ack (HAConnectionRuntimeInfo.slaveAckOffset, -1 before the first)
//	haSlaveDiff_<addr>                master: commitLogMaxOffset - that ack (HAConnectionRuntimeInfo.diff)
//	haMasterAddress, haMasterConnected, haReportedOffset
//	                                  slave: the HA address followed, whether connected, the offset last reported to it
//
// Per-slave keys carry the address as the stock per-path keys do
// (commitLogDiskRatio_<path>). In controller mode brokerRole is the role
// the controller gave, with the epoch and sync state set keys of
// ctlRuntimeInfo.
func (b *Broker) haRuntimeInfo(t map[string]string) {
	// 5.3.3's key (isSpecialServiceRunning: the delay, transaction-check
	// and revive services run), which its mqadmin clusterList prints as
	// #ACTIVATED: a master runs them, a slave does not (role.go).
	t["brokerActive"] = strconv.FormatBool(!b.isSlave())
	t["brokerRole"] = b.opts.BrokerRole
	t["brokerId"] = strconv.FormatInt(b.brokerID(), 10)
	if st, ok := b.HAMasterStats(); ok {
		t["haConnectionCount"] = strconv.Itoa(st.Connections)
		t["haPush2SlaveMaxOffset"] = strconv.FormatInt(st.Push2SlaveMaxOffset, 10)
		t["haSlaveFallBehindMuch"] = strconv.FormatInt(st.MasterMaxOffset-st.Push2SlaveMaxOffset, 10)
		for _, sl := range st.Slaves {
			t["haSlaveAckOffset_"+sl.Addr] = strconv.FormatInt(sl.AckOffset, 10)
			t["haSlaveDiff_"+sl.Addr] = strconv.FormatInt(SlaveLag(st.MasterMaxOffset, sl.AckOffset), 10)
		}
	}
	if st, ok := b.HAClientStats(); ok {
		t["haMasterAddress"] = st.MasterAddr
		t["haMasterConnected"] = strconv.FormatBool(st.Connected)
		t["haReportedOffset"] = strconv.FormatInt(st.ReportedOffset, 10)
	}
	b.ctlRuntimeInfo(t) // ctl_state.go
}

// SlaveLag is how many commitlog bytes a slave that acked ack lacks of a
// master at masterMax: all of them before its first ack (-1), never less
// than 0 (a slave that restarted with a longer commitlog acks past it).
func SlaveLag(masterMax, ack int64) int64 {
	return max(masterMax-max(ack, 0), 0)
}
