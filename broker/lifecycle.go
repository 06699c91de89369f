package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/acl"
	"github.com/rmqio/rmq/broker/brokeradmin"
	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/broker/clients"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/schedule"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/timer"
)

// How a broker is assembled.
//
// The store starts working inside store.Open: recovery re-dispatches the
// commitlog's tail (OnDispatch, OnDispatchBatch, TagsCode), and its cleanup
// goroutine may ask what it must keep (Retention.ProtectedOffset) or move
// (Retention.Evacuate) before Open returns. The services that answer those
// questions (delay levels, timers, transactions, POP, consumer offsets) are
// built on the store, so they cannot exist yet. The store's callbacks are
// therefore bound to storeEvents, a forwarder made before the store from
// what does exist then (the pull hold service and the delay levels); it
// reaches the Broker only once New has attached the finished value. Until
// then it gives the answers that need no service: retention keeps every
// file and moves nothing, and only held pulls are woken (there are none
// before Start); each service reads its queues when it starts. No
// callback ever sees a half-built Broker, and each service is held once
// (Broker.services), with no shadow copy for the dispatcher to read.
//
// The stages, each with its inputs and output:
//
//	completeOptions(opts)               -> opts with defaults, the IPv4 of brokerIP1
//	newShell(opts, ip)                  -> *Broker without store or services:
//	                                       identity, ports bound (ListenPort 0),
//	                                       ACL, auth, topic table, delay levels
//	newStoreEvents(pullHold, levels)    -> the store's callbacks
//	openStore(opts, host, events)       -> *store.Store (recovered, dispatching)
//	b.openServices(store)               -> services (clients, schedule,
//	                                       transactions, timers, admin, POP)
//	b.installProcessors()               -> put hooks, request handlers
//	events.attach(b)                    -> the store's callbacks reach b
//
// Services also get Broker methods for work that runs when requests are
// served or messages delivered (Put, EnsureDLQ, OnPopped, runtime
// settings); no constructor calls them, and nothing is served before Start.
//
// Start then sets deliveryStarted on a master before it starts the delay,
// timer, transaction and POP services: from then on the dispatcher wakes
// them and retention protects and moves what they hold (a SLAVE runs none
// of them, role.go).

// Background periods of the stock broker.
const (
	// statsSampleInterval feeds the put/get rates of GET_BROKER_RUNTIME_INFO.
	statsSampleInterval = time.Second
	// drainTimeout bounds how long Shutdown waits for running requests.
	drainTimeout = 10 * time.Second
)

// ErrOptions wraps invalid broker options.
var ErrOptions = errors.New("broker: invalid options")

// New validates opts, opens the store under StorePathRootDir (running its
// recovery), loads the topic, offset and group files from <root>/config and
// wires the request handlers, in the stages above. Nothing listens until
// Start.
func New(opts Options) (*Broker, error) {
	opts, ip, err := completeOptions(opts)
	if err != nil {
		return nil, err
	}
	b, err := newShell(opts, ip)
	if err != nil {
		return nil, err
	}
	events := newStoreEvents(b.pullHold, b.levels)
	st, err := openStore(b.opts, b.host, events)
	if err != nil {
		return b.abandon(fmt.Errorf("broker: open store: %w", err))
	}
	b.store, b.events = st, events
	b.initRole()
	if err := b.newControllerMode(); err != nil {
		return b.abandon(errors.Join(err, st.Close()))
	}
	svc, err := b.openServices(st)
	if err != nil {
		return b.abandon(errors.Join(err, st.Close()))
	}
	b.services = svc
	b.installProcessors()
	events.attach(b)
	return b, nil
}

// completeOptions validates opts and fills the defaults New applies. A host
// name in brokerIP1 is resolved once, as stock builds its STOREHOST
// (Kubernetes, Testcontainers); it is registered verbatim.
func completeOptions(opts Options) (Options, netip.Addr, error) {
	if err := opts.Validate(); err != nil {
		return opts, netip.Addr{}, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	ip, err := resolveIPv4(opts.BrokerIP1)
	if err != nil {
		return opts, netip.Addr{}, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.MessageClock == nil {
		opts.MessageClock = opts.Clock
		if opts.ClockControlEnable {
			// What rmqtest gives: the wall clock, which FastForward moves on.
			opts.MessageClock = clock.NewOffset(0)
		}
	}
	if opts.ListenHost == "" {
		opts.ListenHost = "0.0.0.0"
	}
	opts.FS = opts.putStallFS() // testPutStallMillis (fastfail.go)
	// The stock broker's ConsumerFilterManager overwrites
	// bitMapLengthConsumeQueueExt at start with the bit count of the bloom
	// filter the two bloom keys shape, so GET_BROKER_CONFIG reports that,
	// whatever the file says (an update shows until the next start).
	if m, ok := clients.BloomBits(opts.MaxErrorRateOfBloomFilter, opts.ExpectConsumerNumUseFilter); ok {
		opts.BitMapLengthConsumeQueueExt = m
	}
	return opts, ip, nil
}

// configDir is <root>/config: topics, groups, offsets, delay offsets.
func (o *Options) configDir() string { return filepath.Join(o.StorePathRootDir, "config") }

// newShell is the Broker without store or services: its identity (ports
// bound now with ListenPort 0, behind a gate closed until Start), the pull
// hold service, ACL, auth, the topic table and the delay levels. On error
// it releases what it bound.
func newShell(opts Options, ip netip.Addr) (*Broker, error) {
	b := &Broker{
		opts:     opts,
		log:      componentLog(opts.Logger, "broker"),
		clock:    opts.Clock,
		msgClock: opts.MessageClock,
		nsCli:    remoting.NewClient(remoting.ClientOptions{TLS: opts.ServerConfig.ClientTLS(), Logger: componentLog(opts.Logger, "broker")}),
		stop:     make(chan struct{}),
		regKick:  make(chan struct{}, 1),
		regConns: make(map[string]uint64),
		bstats:   brokerstats.NewManager(opts.BrokerClusterName),
		refusals: ratelog.New(componentLog(opts.Logger, "broker"), opts.Clock, ratelog.DefaultInterval),
		budget:   remoting.NewBudget(opts.ServerMaxInflightBytes),
	}
	vipPort := opts.vipPort()
	if opts.ListenPort == 0 {
		// The ports are part of the broker's identity (STOREHOST, message
		// ids, registration), so they are bound now; requests wait for Start.
		var err error
		if vipPort, err = b.bindPortZero(); err != nil {
			return nil, err
		}
	}
	b.vipAddr = joinHostPort(opts.BrokerIP1, vipPort)
	b.host = netip.AddrPortFrom(ip.Unmap(), uint16(b.opts.ListenPort))
	// Held pulls are woken by the store's dispatcher (storeEvents), which
	// runs from Open on, so the hold service exists before the store.
	b.pullHold = newPullRequestHoldService(b.clock, b.log, b.wakePull)

	configDir := opts.configDir()
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return b.abandon(fmt.Errorf("broker: create %s: %w", configDir, err))
	}
	var err error
	if opts.AclEnable {
		if b.acl, err = acl.Open(aclFilePath(opts), b.clock); err != nil {
			return b.abandon(fmt.Errorf("broker: %w", err))
		}
	}
	if b.auth, err = openAuth(opts, configDir); err != nil {
		return b.abandon(fmt.Errorf("broker: %w", err))
	}
	b.topics, err = newTopicConfigManager(filepath.Join(configDir, topicConfigFileName), topicConfigDefaults{
		clusterName: opts.BrokerClusterName, brokerName: opts.BrokerName,
		autoCreate: opts.AutoCreateTopicEnable, defaultQueueNums: opts.DefaultTopicQueueNums,
		traceTopic: traceTopic(&opts), fs: opts.FS,
		clusterTopic: opts.ClusterTopicEnable, brokerTopic: opts.BrokerTopicEnable,
	}, b.clock, b.log)
	if err != nil {
		return b.abandon(err)
	}
	b.topics.onChange = b.registerAsync // a topic changes by request, after Start
	if b.levels, err = schedule.ParseLevels(opts.MessageDelayLevel); err != nil {
		return b.abandon(fmt.Errorf("%w: %w", ErrOptions, err))
	}
	return b, nil
}

// abandon releases a Broker New gives up on (the ports bound at New) and
// returns err; the caller has closed what it opened after the shell.
func (b *Broker) abandon(err error) (*Broker, error) {
	if b.server != nil {
		b.server.Stop()
	}
	return nil, err
}

// openStore opens the message store under opts' directories, its callbacks
// bound to events (which exist before it: recovery dispatches during Open).
func openStore(opts Options, host netip.AddrPort, events *storeEvents) (*store.Store, error) {
	flush := store.AsyncFlush
	if opts.FlushDiskType == "SYNC_FLUSH" {
		flush = store.SyncFlush
	}
	so := store.Options{
		Dir:                        opts.StorePathRootDir,
		CommitLogDir:               opts.StorePathCommitLog,
		MappedFileSizeCommitLog:    opts.MappedFileSizeCommitLog,
		MappedFileSizeConsumeQueue: opts.MappedFileSizeConsumeQueue,
		FlushDiskType:              flush,
		FlushInterval:              time.Duration(opts.FlushIntervalCommitLog) * time.Millisecond,
		SyncFlushTimeout:           time.Duration(opts.SyncFlushTimeout) * time.Millisecond,
		MaxMessageSize:             opts.MaxMessageSize,
		StoreHost:                  host,
		OnDispatch:                 events.onDispatch,
		OnDispatchBatch:            events.onDispatchBatch,
		TagsCode:                   events.tagsCode,
		Index: store.IndexOptions{
			Disabled: !opts.MessageIndexEnable, HashSlotNum: opts.MaxHashSlotNum, MaxIndexNum: opts.MaxIndexNum,
		},
		Clock:         opts.MessageClock,
		Logger:        opts.Logger, // the store adds its own component
		NoPreallocate: opts.SmallStore,
		PageCacheKeep: opts.CommitLogPageCacheKeep,
		Retention:     opts.retentionOptions(),
		FS:            opts.FS,
	}
	so.Retention.ProtectedOffset = events.protectedOffset
	so.Retention.Evacuate = events.evacuate
	opts.lmqStoreOptions(&so)
	// Only a controller-mode store starts gated at its saved confirm
	// offset (stock reads confirmOffset only in controller mode).
	so.RestoreConfirmOffset = opts.EnableControllerMode
	so.OSPageCacheBusyTimeout = pageCacheBusyTimeout(opts.OsPageCacheBusyTimeOutMills) // fastfail.go
	if opts.storeOptions != nil {
		opts.storeOptions(&so)
	}
	return store.Open(so)
}

// services are the concerns built on the store, one package each (doc.go).
// The Broker embeds them: each is held once.
type services struct {
	clients *clients.Service     // heartbeats, groups, offsets, locks
	sched   *schedule.Service    // delivers delay-level messages
	tx      *transaction.Service // half messages, END_TRANSACTION, check-back
	timers  *timer.TimerStore    // 5.x timer messages (timer.go); nil unless timerWheelEnable
	admin   *brokeradmin.Service // topic admin, runtime info, QUERY_MESSAGE
	pop     *pop.Service         // POP consumption
}

// abort stops the services that have started goroutines at construction,
// for a New that fails after them.
func (s *services) abort() {
	if s.pop != nil {
		_ = s.pop.Stop()
	}
	if s.tx != nil {
		s.tx.Stop()
	}
	if s.timers != nil {
		_ = s.timers.Stop()
	}
	if s.sched != nil {
		_ = s.sched.Stop()
	}
}

// openServices builds the services on st and the shell (options, topic
// table, clocks, stats). Each service declares the small interface it
// consumes; the broker passes an adapter of the part that serves it
// (dlqTopics, popMetrics: the shell's tables; liveSettings, sendPath,
// runtimeExtras, the escape bridge of the delivery stores: the Broker, used
// only once requests are served or messages delivered, after New). On
// error it stops what it started; the caller closes the store.
func (b *Broker) openServices(st *store.Store) (s services, err error) {
	opts := &b.opts
	configDir := opts.configDir()
	defer func() {
		if err != nil {
			s.abort()
		}
	}()
	s.clients, err = clients.New(clients.Options{
		ConfigDir: configDir, AutoCreateSubscriptionGroup: opts.AutoCreateSubscriptionGroup, BrokerName: opts.BrokerName,
		Topics: b.topics, Store: st, Clock: b.clock, Logger: b.log, Refusals: b.refusals,
		Settings: liveSettings{b}, FS: opts.FS,
		Broker: b,
	})
	if err != nil {
		return s, err
	}
	enableLmq(opts, b.topics, s.clients)
	s.sched, err = schedule.New(schedule.Options{
		Levels: b.levels, Store: scheduleStore(st, b.bstats, b), OffsetPath: filepath.Join(configDir, "delayOffset.json"), Clock: b.msgClock,
		PersistInterval: time.Duration(opts.FlushDelayOffsetInterval) * time.Millisecond, Logger: componentLog(opts.Logger, "schedule"),
		DLQTopics: dlqTopics{b.topics}, SyncCommits: opts.FlushDiskType == "SYNC_FLUSH",
		Coalesce: time.Duration(opts.DeliverCoalesceMs) * time.Millisecond, FS: opts.FS,
	})
	if err != nil {
		return s, err
	}
	// In controller mode the role is the controller's, known at run time.
	var slaveNow func() bool
	if opts.EnableControllerMode {
		slaveNow = b.isSlave
	}
	s.tx, err = transaction.New(transaction.Options{
		Store: st, Put: sendPath{b}, Topics: b.topics, Offsets: s.clients.Offsets, Producers: s.clients.Producers,
		StoreHost: b.host, MaxMessageSize: opts.MaxMessageSize,
		Timeout:       time.Duration(opts.TransactionTimeOut) * time.Millisecond,
		CheckInterval: time.Duration(opts.TransactionCheckInterval) * time.Millisecond,
		CheckMax:      opts.TransactionCheckMax,
		Clock:         b.msgClock, Logger: componentLog(opts.Logger, "transaction"), Refusals: b.refusals,
		Slave: opts.isSlave() && !opts.EnableControllerMode, AnswerCommitted: sendPath{b}, Escape: escapeBridge{b},
		SlaveNow: slaveNow,
	})
	if err != nil {
		return s, err
	}
	if opts.TimerWheelEnable {
		s.timers, err = timer.Open(timer.Options{
			Dir: opts.StorePathRootDir, PrecisionMs: opts.TimerPrecisionMs, MaxDelaySec: opts.TimerMaxDelaySec,
			RollWindow:             timerRollWindow(opts),
			MappedFileSizeTimerLog: opts.MappedFileSizeTimerLog,
			FlushInterval:          time.Duration(opts.TimerFlushIntervalMs) * time.Millisecond,
			Store:                  timerStore(st, b.bstats, b), BrokerName: opts.BrokerName, Clock: b.msgClock, Logger: componentLog(opts.Logger, "timer"),
			DLQTopics: dlqTopics{b.topics}, Coalesce: time.Duration(opts.DeliverCoalesceMs) * time.Millisecond, FS: opts.FS,
		})
		if err != nil {
			return s, fmt.Errorf("broker: open timer store: %w", err)
		}
	}
	s.admin = brokeradmin.New(brokeradmin.Options{
		Store: st, Topics: b.topics, Offsets: offsetsAndStats{s.clients.Offsets, b.bstats}, Stats: &b.stats,
		Extras:     runtimeExtras{b},
		BrokerName: opts.BrokerName, StoreDir: opts.StorePathRootDir, Clock: b.clock, Logger: b.log,
		EnableMixedMessageType: opts.EnableMixedMessageType,
		Settings:               liveSettings{b},
	})
	s.pop, err = pop.New(pop.Options{
		Store: st, Put: sendPath{b}, Topics: b.topics, Groups: s.clients.SubGroups, Offsets: s.clients.Offsets,
		ClientIDs: s.clients.Consumers, ClusterName: opts.BrokerClusterName, BrokerName: opts.BrokerName,
		StoreHost: b.host, ConfigDir: configDir, TimerEnabled: opts.TimerWheelEnable,
		MaxInvisible: time.Duration(opts.TimerMaxDelaySec) * time.Second, Clock: b.clock, MessageClock: b.msgClock, Logger: b.log,
		OnPopped: popMetrics{b.bstats}, Escape: escapeBridge{b},
		FS: opts.FS,
	})
	if err != nil {
		return s, fmt.Errorf("broker: pop service: %w", err)
	}
	return s, nil
}

// installProcessors installs the put hooks and the request handlers over
// the services.
func (b *Broker) installProcessors() {
	// Transactions first: a half message is not delayed (its DELAY applies
	// when the commit re-stores it).
	b.putHooks = append(b.putHooks, b.rejectTransactionHook, transaction.Hook, b.delayHook, b.timerHook)
	// hookProperties names every property these act on.
	b.keyedHooks = len(b.putHooks)
	b.registerHandlers()
}

// storeEvents receives the store's callbacks (store.Options.OnDispatch,
// OnDispatchBatch, TagsCode, Retention.ProtectedOffset and Evacuate). It is
// made before the store (the stages above) and reaches the Broker once New
// has attached the finished value.
type storeEvents struct {
	levels   schedule.Levels
	pullHold *PullRequestHoldService
	// wakes is what onDispatch gathered since the last batch end.
	wakes dispatchWakes
	// broker is the assembled Broker (attach); nil while New runs.
	broker atomic.Pointer[Broker]
}

func newStoreEvents(pullHold *PullRequestHoldService, levels schedule.Levels) *storeEvents {
	return &storeEvents{levels: levels, pullHold: pullHold}
}

// attach hands the store's callbacks the finished Broker (New's last step).
func (e *storeEvents) attach(b *Broker) { e.broker.Store(b) }

// onDispatch runs in the store's dispatcher (store.Options.OnDispatch: its
// goroutine, or a put's, an event loop's among them) for every message that
// reached its consume queue. It only notes who is to be woken: held pulls of
// the queue, the schedule level, the timer enqueue. onDispatchBatch wakes
// them once the dispatcher's batch is in the consume queues, so a pull woken
// by the first of several records that arrived together reads all of them,
// and a service is signalled once per batch, not once per message. Before
// the Broker is attached (recovery during Open) there is no service to wake:
// each reads its queues when it starts.
func (e *storeEvents) onDispatch(d store.DispatchRequest) {
	w := &e.wakes
	if hs := e.pullHold; hs != nil {
		w.pulls = hs.collect(d.Topic, d.QueueID, d.QueueOffset+1, d.TagsCode, d.Props, w.pulls)
	}
	b := e.broker.Load()
	if b != nil {
		b.pop.Notify(d.Topic, d.QueueID)
	}
	switch d.Topic {
	case message.TopicSchedule:
		if d.QueueID >= 0 && d.QueueID < 64 {
			w.levels |= 1 << d.QueueID
		} else if b != nil && b.deliveryStarted.Load() {
			b.sched.Notify(d.QueueID) // not a level: Notify ignores it
		}
	case message.TopicWheelTimer:
		w.timer = true
	}
}

// dispatchWakes is what onDispatch gathered since the last batch end. Only
// the store's dispatcher (or Open's recovery, before it starts) touches it;
// its calls never overlap.
type dispatchWakes struct {
	pulls  []*heldPull
	levels uint64 // schedule queue ids dispatched to
	timer  bool
}

// onDispatchBatch runs in the store's dispatcher after a batch of
// onDispatch calls and does the wake-ups they gathered.
func (e *storeEvents) onDispatchBatch() {
	w := &e.wakes
	if len(w.pulls) > 0 {
		e.pullHold.wakeAll(w.pulls)
		clear(w.pulls)
		w.pulls = w.pulls[:0]
	}
	b := e.broker.Load()
	delivering := b != nil && b.deliveryStarted.Load()
	if w.levels != 0 {
		if delivering {
			for q := int32(0); q < 64; q++ {
				if w.levels&(1<<q) != 0 {
					b.sched.Notify(q)
				}
			}
		}
		w.levels = 0
	}
	if w.timer {
		if delivering && b.timers != nil {
			b.timers.Notify()
		}
		w.timer = false
	}
}

// tagsCode is the consume-queue tagsCode: the deliver time for schedule-topic
// messages, the tag hash for the rest.
func (e *storeEvents) tagsCode(topic string, props message.Props, storeMs int64) int64 {
	if code, ok := e.levels.TagsCode(topic, props, storeMs); ok {
		return code
	}
	return message.TagsHash(props.Get(message.PropTags))
}

// protectedOffset is store.RetentionOptions.ProtectedOffset: what the
// Broker keeps (delivery.go); every file before it is attached.
func (e *storeEvents) protectedOffset(forced bool) int64 {
	if b := e.broker.Load(); b != nil {
		return b.protectedOffset(forced)
	}
	return 0
}

// evacuate is store.RetentionOptions.Evacuate: the Broker's (delivery.go),
// nothing before it is attached.
func (e *storeEvents) evacuate(below int64) {
	if b := e.broker.Load(); b != nil {
		b.evacuate(below)
	}
}

// Start listens on ListenHost:ListenPort and the VIP port ListenPort-2 (with
// ListenPort 0, starts serving the ports New bound),
// registers with the name servers (once now, then every
// RegisterNameServerPeriod and whenever a topic changes) and starts the
// background services. After a failed Start, Shutdown still closes the store.
func (b *Broker) Start() error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("broker: already started")
	}
	b.stats.BootTime = b.clock.Now()
	if b.gate != nil {
		b.gate.open(b) // bound at New (ListenPort 0)
	} else {
		srv, err := remoting.NewServer(b, b.serverOptions(b.opts.ListenPort, b.opts.vipPort()))
		if err != nil {
			b.started.Store(false)
			return fmt.Errorf("broker: %w", err)
		}
		if err := srv.Start(); err != nil {
			b.started.Store(false)
			return fmt.Errorf("broker: %w", err)
		}
		b.server = srv
	}
	// Before registering: the registration names the HA address.
	if err := b.startHA(); err != nil {
		return err
	}
	b.pullHold.start()
	// deliveryStarted is set before the services start: the store
	// dispatches from Open on, and a delayed or timer message dispatched
	// between a service's first idle read and the flag would get no
	// wake-up. Notify only fills a one-slot buffer, so an early one is at most
	// one extra read of the queue.
	//
	// A SLAVE runs none of them (4.9.8: ScheduleMessageService is shut down
	// on a slave, DefaultMessageStore.handleScheduleMessageService, and the
	// transaction check starts only on a master, BrokerController.start;
	// 5.3.3 also keeps the timer dequeue and POP revive off,
	// changeSpecialServiceStatus): their stores are written by replication,
	// and their state, loaded at New, stays as it was for a start as master.
	// Instead it copies its master's metadata (role.go).
	if b.ctl != nil {
		b.startControllerMode() // held until the controller names this broker master
	} else if b.opts.isSlave() {
		b.startRole()
		b.startActingMaster() // its services, held until it is the group's least id
	} else {
		b.takeBackFromActingSlave() // acting_master.go: before anything is delivered or registered
		b.startSpecialServices()
	}

	if b.acl != nil {
		b.bg.Add(1)
		go b.aclLoop()
	}
	b.bg.Add(4)
	go b.persistLoop()
	go b.statsLoop()
	go b.every(b.refusals.Interval(), b.refusals.Flush)
	go b.every(fastFailPeriod, b.cleanExpiredRequests)
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		b.clients.Housekeep(b.stop)
	}()
	if len(b.opts.NamesrvAddrs()) > 0 {
		b.registerAll(true)
		b.bg.Add(1)
		go b.registerLoop()
		if !b.opts.isSlave() && b.ctl == nil {
			b.startActingMaster() // the heartbeat
		}
	}
	b.log.Info().Str("addr", b.Addr()).Str("brokerName", b.opts.BrokerName).Str("namesrv", b.opts.NamesrvAddr).Msg("broker started")
	return nil
}

// vipPort is the VIP channel's port: VIPListenPort if set, else the stock
// ListenPort-2.
func (o *Options) vipPort() int {
	if o.VIPListenPort != 0 {
		return o.VIPListenPort
	}
	return o.ListenPort - 2
}

// serverOptions are the options of the remoting server on port and vipPort.
func (b *Broker) serverOptions(port, vipPort int) remoting.ServerOptions {
	so := remoting.ServerOptions{
		Addrs: []string{
			joinHostPort(b.opts.ListenHost, port),
			joinHostPort(b.opts.ListenHost, vipPort),
		},
		// The V2 send header is read in one pass over its letters
		// (parseSendHeader), not through a map.
		RawExtCodes: []int32{remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2},
		// A send's body is done with once send has returned: the store
		// copies it into the commitlog during the put, and a SYNC_FLUSH
		// answer written later (answerAfterStore) does not refer to it.
		// Replies are not lent: their bodies go on to the requester.
		LentBodyCodes: []int32{remoting.SendMessage, remoting.SendMessageV2, remoting.SendBatchMessage},
		Lanes:         b.opts.remotingLanes(), // fastfail.go
		LaneClock:     b.clock,
		Logger:        b.log,
	}
	b.opts.ServerConfig.Apply(&so)
	so.Budget = b.budget
	so.Refusals = b.refusals // counted in rmq_refusals_total with the broker's own
	return so
}

// bindPortZero starts the remoting server on two ports the system picks,
// behind a gate that refuses requests until Start opens it, and records the
// main port as ListenPort. It returns the VIP port.
func (b *Broker) bindPortZero() (int, error) {
	b.gate = &startGate{}
	srv, err := remoting.NewServer(b.gate, b.serverOptions(0, 0))
	if err != nil {
		return 0, fmt.Errorf("broker: %w", err)
	}
	if err := srv.Start(); err != nil {
		return 0, fmt.Errorf("broker: %w", err)
	}
	b.server = srv
	var ports [2]int
	for i, a := range srv.Addrs() {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			srv.Stop()
			return 0, fmt.Errorf("broker: bound address %q: %w", a, err)
		}
		ports[i] = int(ap.Port())
	}
	b.opts.ListenPort = ports[0]
	return ports[1], nil
}

// persistLoop writes consumer offsets and consumer filters every
// flushConsumerOffsetInterval: the commits a kill -9 can lose.
func (b *Broker) persistLoop() {
	b.every(time.Duration(b.opts.FlushConsumerOffsetInterval)*time.Millisecond, func() {
		if err := b.clients.Offsets.Persist(); err != nil {
			b.log.Error().Err(err).Msg("persist consumer offsets")
		}
		if err := b.clients.Filters.Persist(); err != nil {
			b.log.Error().Err(err).Msg("persist consumer filters")
		}
	})
}

// statsLoop samples the put/get counters for the runtime-info rates.
func (b *Broker) statsLoop() {
	b.every(statsSampleInterval, func() {
		now := b.clock.Now()
		b.stats.Sample(now)
		b.bstats.Tick(now)
		b.sampleRuntimeRates(now)
	})
}

// every runs fn every period of the broker clock until Shutdown; the caller
// has counted it in b.bg.
func (b *Broker) every(period time.Duration, fn func()) {
	defer b.bg.Done()
	for {
		t := b.clock.NewTimer(period)
		select {
		case <-b.stop:
			t.Stop()
			return
		case <-t.C():
			fn()
		}
	}
}

// Shutdown stops the broker so that nothing acknowledged is lost:
// unregister (clients stop routing here), stop listening, wait for running
// requests and woken pulls, stop background loops, persist offsets, topics and
// groups, and finally close the store (which flushes and checkpoints). It is
// safe to call more than once; a broker that never started only closes.
func (b *Broker) Shutdown() error {
	b.shutOnce.Do(func() { b.shutErr = b.shutdown() })
	return b.shutErr
}

func (b *Broker) shutdown() error {
	var errs []error
	if b.ctl != nil && b.ctl.rm.Load() != nil {
		b.ctl.rm.Load().Close() // no role change (and its registration) after this
	}
	close(b.stop)
	b.bg.Wait() // the registration loop must not re-register after the unregister
	if b.started.Load() && len(b.opts.NamesrvAddrs()) > 0 {
		b.unregisterAll()
	}
	b.pullHold.shutdown()
	if b.server != nil {
		b.server.Stop()
	}
	b.life.Lock()
	b.closed = true
	b.life.Unlock()
	drained := make(chan struct{})
	go func() { b.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		errs = append(errs, errors.New("broker: requests still running at shutdown"))
	}
	b.nsCli.Close()
	if err := b.stopHA(); err != nil {
		errs = append(errs, fmt.Errorf("broker: stop HA: %w", err))
	}
	if err := b.pop.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("broker: stop pop service: %w", err))
	}
	b.tx.Stop()
	if err := b.sched.Stop(); err != nil {
		errs = append(errs, err)
	}
	if b.timers != nil {
		if err := b.timers.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("broker: stop timer store: %w", err))
		}
	}
	if err := b.clients.Offsets.Persist(); err != nil {
		errs = append(errs, fmt.Errorf("broker: persist offsets: %w", err))
	}
	if err := b.topics.Persist(); err != nil {
		errs = append(errs, err)
	}
	if err := b.clients.SubGroups.Persist(); err != nil {
		errs = append(errs, fmt.Errorf("broker: persist subscription groups: %w", err))
	}
	if err := b.clients.Filters.Persist(); err != nil {
		errs = append(errs, fmt.Errorf("broker: persist consumer filters: %w", err))
	}
	if err := b.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("broker: close store: %w", err))
	}
	b.log.Info().Str("addr", b.Addr()).Msg("broker stopped")
	return errors.Join(errs...)
}
