package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
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
// wires the request handlers. Nothing listens until Start.
func New(opts Options) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	// A host name is resolved once, as stock builds its STOREHOST
	// (Kubernetes, Testcontainers); it is registered verbatim.
	ip, err := resolveIPv4(opts.BrokerIP1)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
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
	fail := func(err error) (*Broker, error) {
		if b.server != nil {
			b.server.Stop()
		}
		return nil, err
	}
	// The hold service exists before the store: recovery may already dispatch.
	b.pullHold = newPullRequestHoldService(b.clock, b.log, b.wakePull)

	configDir := filepath.Join(opts.StorePathRootDir, "config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return fail(fmt.Errorf("broker: create %s: %w", configDir, err))
	}
	if opts.AclEnable {
		if b.acl, err = acl.Open(aclFilePath(opts), b.clock); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	if b.auth, err = openAuth(opts, configDir); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.topics, err = newTopicConfigManager(filepath.Join(configDir, topicConfigFileName), topicConfigDefaults{
		clusterName: opts.BrokerClusterName, brokerName: opts.BrokerName,
		autoCreate: opts.AutoCreateTopicEnable, defaultQueueNums: opts.DefaultTopicQueueNums,
		traceTopic: traceTopic(&opts), fs: opts.FS,
		clusterTopic: opts.ClusterTopicEnable, brokerTopic: opts.BrokerTopicEnable,
	}, b.clock, b.log)
	if err != nil {
		return fail(err)
	}
	b.topics.onChange = b.registerAsync
	if b.levels, err = schedule.ParseLevels(opts.MessageDelayLevel); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrOptions, err))
	}

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
		StoreHost:                  b.host,
		OnDispatch:                 b.onDispatch,
		OnDispatchBatch:            b.onDispatchBatch,
		TagsCode:                   b.tagsCode,
		Index: store.IndexOptions{
			Disabled: !opts.MessageIndexEnable, HashSlotNum: opts.MaxHashSlotNum, MaxIndexNum: opts.MaxIndexNum,
		},
		Clock:         b.msgClock,
		Logger:        opts.Logger, // the store adds its own component
		NoPreallocate: opts.SmallStore,
		PageCacheKeep: opts.CommitLogPageCacheKeep,
		Retention:     opts.retentionOptions(),
		FS:            opts.FS,
	}
	so.Retention.ProtectedOffset = b.protectedOffset
	so.Retention.Evacuate = b.evacuate
	opts.lmqStoreOptions(&so)
	so.OSPageCacheBusyTimeout = time.Duration(opts.OsPageCacheBusyTimeOutMills) * time.Millisecond // fastfail.go
	if opts.storeOptions != nil {
		opts.storeOptions(&so)
	}
	b.store, err = store.Open(so)
	if err != nil {
		return fail(fmt.Errorf("broker: open store: %w", err))
	}
	closeStore := func(err error) (*Broker, error) {
		return fail(errors.Join(err, b.store.Close()))
	}
	b.initRole()

	b.clients, err = clients.New(clients.Options{
		ConfigDir: configDir, AutoCreateSubscriptionGroup: opts.AutoCreateSubscriptionGroup, BrokerName: opts.BrokerName,
		Topics: b.topics, Store: b.store, Clock: b.clock, Logger: b.log, Refusals: b.refusals,
		PropertyFilterEnabled: func() bool { return b.runtime().EnablePropertyFilter }, FS: opts.FS,
		NotifyEnabled: func() bool { return b.runtime().NotifyConsumerIdsChangedEnable },
	})
	if err != nil {
		return closeStore(err)
	}
	b.enableLmq()
	b.sched, err = schedule.New(schedule.Options{
		Levels: b.levels, Store: scheduleStore(b), OffsetPath: filepath.Join(configDir, "delayOffset.json"), Clock: b.msgClock,
		PersistInterval: time.Duration(opts.FlushDelayOffsetInterval) * time.Millisecond, Logger: componentLog(b.opts.Logger, "schedule"),
		EnsureDLQ: b.ensureDLQ, SyncCommits: opts.FlushDiskType == "SYNC_FLUSH",
		Coalesce: time.Duration(opts.DeliverCoalesceMs) * time.Millisecond, FS: opts.FS,
	})
	if err != nil {
		return closeStore(err)
	}
	b.tx, err = transaction.New(transaction.Options{
		Store: b.store, Put: b.putMessage, Topics: b.topics, Offsets: b.clients.Offsets, Producers: b.clients.Producers,
		StoreHost: b.host, MaxMessageSize: opts.MaxMessageSize,
		Timeout:       time.Duration(opts.TransactionTimeOut) * time.Millisecond,
		CheckInterval: time.Duration(opts.TransactionCheckInterval) * time.Millisecond,
		CheckMax:      opts.TransactionCheckMax,
		Clock:         b.msgClock, Logger: componentLog(b.opts.Logger, "transaction"), Refusals: b.refusals,
		Slave: opts.isSlave(),
	})
	if err != nil {
		_ = b.sched.Stop()
		return closeStore(err)
	}
	// Transactions first: a half message is not delayed (its DELAY applies
	// when the commit re-stores it).
	if opts.TimerWheelEnable {
		b.timers, err = timer.Open(timer.Options{
			Dir: opts.StorePathRootDir, PrecisionMs: opts.TimerPrecisionMs, MaxDelaySec: opts.TimerMaxDelaySec,
			RollWindow:             timerRollWindow(&opts),
			MappedFileSizeTimerLog: opts.MappedFileSizeTimerLog,
			FlushInterval:          time.Duration(opts.TimerFlushIntervalMs) * time.Millisecond,
			Store:                  timerStore(b), BrokerName: opts.BrokerName, Clock: b.msgClock, Logger: componentLog(b.opts.Logger, "timer"),
			EnsureDLQ: b.ensureDLQ, Coalesce: time.Duration(opts.DeliverCoalesceMs) * time.Millisecond, FS: opts.FS,
		})
		if err != nil {
			_ = b.sched.Stop()
			return closeStore(fmt.Errorf("broker: open timer store: %w", err))
		}
	}
	b.admin = brokeradmin.New(brokeradmin.Options{
		Store: b.store, Topics: b.topics, Offsets: offsetsAndStats{b.clients.Offsets, b.bstats}, Stats: &b.stats,
		TimerInfo:  b.runtimeInfoExtras,
		BrokerName: opts.BrokerName, StoreDir: opts.StorePathRootDir, Clock: b.clock, Logger: b.log,
		EnableMixedMessageType: opts.EnableMixedMessageType,
		DefaultQueryMaxNum:     func() int { return b.runtime().DefaultQueryMaxNum },
	})
	b.putHooks = append(b.putHooks, b.rejectTransactionHook, transaction.Hook, b.delayHook, b.timerHook)
	// hookProperties names every property these act on.
	b.keyedHooks = len(b.putHooks)
	b.pop, err = pop.New(pop.Options{
		Store: b.store, Put: b.putMessage, Topics: b.topics, Groups: b.clients.SubGroups, Offsets: b.clients.Offsets,
		ClientIDs: b.clients.Consumers.ClientIDs, ClusterName: opts.BrokerClusterName, BrokerName: opts.BrokerName,
		StoreHost: b.host, ConfigDir: configDir, TimerEnabled: opts.TimerWheelEnable,
		MaxInvisible: time.Duration(opts.TimerMaxDelaySec) * time.Second, Clock: b.clock, MessageClock: b.msgClock, Logger: b.log,
		OnPopped: b.recordPop,
		FS:       opts.FS,
	})
	if err != nil {
		b.tx.Stop()
		_ = b.sched.Stop()
		if b.timers != nil {
			_ = b.timers.Stop()
		}
		return closeStore(fmt.Errorf("broker: pop service: %w", err))
	}
	b.popLive.Store(b.pop)
	b.registerHandlers()
	// From here on the store's cleanup may ask what is pending.
	b.retentionReady.Store(true)
	return b, nil
}

// onDispatch runs in the store's dispatcher (store.Options.OnDispatch: its
// goroutine, or a put's, an event loop's among them) for every message that
// reached its consume queue. It only notes who is to be woken: held pulls of
// the queue, the schedule level, the timer enqueue. onDispatchBatch wakes
// them once the dispatcher's batch is in the consume queues, so a pull woken
// by the first of several records that arrived together reads all of them,
// and a service is signalled once per batch, not once per message.
func (b *Broker) onDispatch(d store.DispatchRequest) {
	w := &b.dispatchWakes
	if hs := b.pullHold; hs != nil {
		w.pulls = hs.collect(d.Topic, d.QueueID, d.QueueOffset+1, d.TagsCode, d.Props, w.pulls)
	}
	if p := b.popLive.Load(); p != nil {
		p.Notify(d.Topic, d.QueueID)
	}
	switch d.Topic {
	case message.TopicSchedule:
		if d.QueueID >= 0 && d.QueueID < 64 {
			w.levels |= 1 << d.QueueID
		} else if s := b.schedLive.Load(); s != nil {
			s.Notify(d.QueueID) // not a level: Notify ignores it
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
func (b *Broker) onDispatchBatch() {
	w := &b.dispatchWakes
	if len(w.pulls) > 0 {
		b.pullHold.wakeAll(w.pulls)
		clear(w.pulls)
		w.pulls = w.pulls[:0]
	}
	if w.levels != 0 {
		if s := b.schedLive.Load(); s != nil {
			for q := int32(0); q < 64; q++ {
				if w.levels&(1<<q) != 0 {
					s.Notify(q)
				}
			}
		}
		w.levels = 0
	}
	if w.timer {
		if t := b.timersLive.Load(); t != nil {
			t.Notify()
		}
		w.timer = false
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
	// The live pointers are published before the services start: the store
	// dispatches from Open on, and a delayed or timer message dispatched
	// between a service's first idle read and the publication would get no
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
	if b.opts.isSlave() {
		b.startRole()
		b.startActingMaster() // its services, held until it is the group's least id
	} else {
		b.schedLive.Store(b.sched)
		b.sched.Start()
		if b.timers != nil {
			b.timersLive.Store(b.timers)
			b.timers.Start()
		}
		b.tx.Start()
		b.pop.Start()
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
		if !b.opts.isSlave() {
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
