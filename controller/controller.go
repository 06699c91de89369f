package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// Controller is one node of an rmq controller group: the state machine of
// 5.3.3 ReplicasInfoManager on a hashicorp/raft log, served over remoting
// with the stock controller codes (ControllerRequestProcessor).
//
// Writes follow DLedgerController's event scheduler: on the leader, one at
// a time (sched), the request is checked against the state and its events
// go through the log; the answer leaves once the events are committed and
// applied here. Reads are answered from the leader's state. A node that
// is not the leader, or a leader that has not yet applied everything its
// predecessors committed (the barrier after winning), answers
// CONTROLLER_NOT_LEADER as stock does.
type Controller struct {
	opts  Options
	log   zerolog.Logger
	clock clock.Clock
	self  peer
	peers []peer
	group string

	mu sync.RWMutex // guards st
	st *state

	raft      *raft.Raft
	transport raft.Transport
	logs      raft.LogStore
	closers   []io.Closer

	sched   sync.Mutex  // serialises check-and-propose on the leader
	leading atomic.Bool // leader, and caught up (stock RoleChangeHandler LEADER)

	hb     *heartbeats
	conns  sync.Map // connection id → *remoting.Conn a broker heartbeats over
	srv    *remoting.Server
	client *remoting.Client
	addr   atomic.Pointer[string] // remoting address, once listening

	handlers map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command

	stop    chan struct{}
	bgMu    sync.Mutex
	wg      sync.WaitGroup
	ready   atomic.Bool // the Raft node runs (requests before it find no leader)
	stopped atomic.Bool
}

// New builds a controller node: it parses the peers, opens (or creates)
// the Raft store and prepares the remoting listener. Start joins the group.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	all, self, group, err := opts.peers()
	if err != nil {
		return nil, err
	}
	c := &Controller{
		opts: opts, log: opts.Logger, clock: opts.Clock, self: self, peers: all, group: group,
		st: newState(), hb: newHeartbeats(opts.Clock), stop: make(chan struct{}),
		client: remoting.NewClient(remoting.ClientOptions{Logger: opts.Logger}),
	}
	c.handlers = c.processors()
	if !opts.NoListener {
		host, port := opts.ListenHost, opts.ListenPort
		if self.RPCAddr != "" && port == DefaultListenPort {
			// jRaft: the node listens on its jRaftControllerRPCAddr entry.
			h, p, err := net.SplitHostPort(self.RPCAddr)
			if err != nil {
				return nil, fmt.Errorf("%w: jRaftControllerRPCAddr %q: %v", ErrInvalidOptions, self.RPCAddr, err)
			}
			port, _ = strconv.Atoi(p)
			if host == "0.0.0.0" || host == "" {
				host = h
			}
		}
		if self.RPCAddr == "" && net.JoinHostPort(hostOf(self.RaftAddr), strconv.Itoa(port)) == self.RaftAddr {
			return nil, fmt.Errorf("%w: listenPort %d is the Raft port of %s: give the controller's remoting server its own listenPort", ErrInvalidOptions, port, self.ID)
		}
		so := remoting.ServerOptions{Addrs: []string{net.JoinHostPort(host, strconv.Itoa(port))}, Logger: opts.Logger}
		opts.ServerConfig.Apply(&so)
		if c.srv, err = remoting.NewServer(c, so); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
	} else if opts.AdvertiseAddr != "" {
		a := opts.AdvertiseAddr
		c.addr.Store(&a)
	}
	return c, nil
}

// raftLog writes hashicorp/raft's lines (warnings and errors only) to the
// controller's log.
type raftLog struct{ log zerolog.Logger }

func (w raftLog) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

func hostOf(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

// Start listens for remoting, opens the Raft node (bootstrapping the
// group from the configured peers on a first start) and starts the scans.
func (c *Controller) Start() error {
	if c.srv != nil {
		if err := c.srv.Start(); err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		a := c.srv.Addrs()[0]
		if h, p, err := net.SplitHostPort(a); err == nil && (h == "0.0.0.0" || h == "::") {
			a = net.JoinHostPort(hostOf(c.self.RaftAddr), p)
		}
		c.addr.Store(&a)
	}
	if err := c.startRaft(); err != nil {
		if c.srv != nil {
			c.srv.Stop()
		}
		return err
	}
	c.ready.Store(true)
	c.wg.Add(3)
	go c.watchLeadership()
	go c.every(c.opts.ScanNotActiveBrokerInterval, c.ScanNotActiveBroker)
	go c.every(c.opts.ScanInactiveMasterInterval, c.ScanInactiveMaster)
	c.log.Info().Str("id", c.self.ID).Str("raft", c.self.RaftAddr).Str("addr", c.Addr()).Msg("controller started")
	return nil
}

func (c *Controller) startRaft() error {
	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(c.self.ID)
	cfg.HeartbeatTimeout = c.opts.RaftTimeout
	cfg.ElectionTimeout = c.opts.RaftTimeout
	cfg.LeaderLeaseTimeout = c.opts.RaftTimeout / 2
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: raftLog{c.log}, DisableTime: true})

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if c.opts.StorePath == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(c.opts.StorePath, 0o755); err != nil {
			return fmt.Errorf("controller: store: %w", err)
		}
		bolt, err := raftboltdb.NewBoltStore(filepath.Join(c.opts.StorePath, "raft.db"))
		if err != nil {
			return fmt.Errorf("controller: raft log: %w", err)
		}
		c.closers = append(c.closers, bolt)
		logs, stable = bolt, bolt
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(c.opts.StorePath, 2, cfg.Logger); err != nil {
			return fmt.Errorf("controller: raft snapshots: %w", err)
		}
	}
	c.logs = logs
	c.transport = c.opts.Transport
	if c.transport == nil {
		tr, err := raft.NewTCPTransportWithLogger(c.self.RaftAddr, nil, 3, 10*time.Second, cfg.Logger)
		if err != nil {
			c.closeStores()
			return fmt.Errorf("controller: raft transport on %s: %w", c.self.RaftAddr, err)
		}
		c.transport = tr
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		c.closeStores()
		return fmt.Errorf("controller: raft state: %w", err)
	}
	r, err := raft.NewRaft(cfg, (*fsm)(c), logs, stable, snaps, c.transport)
	if err != nil {
		c.closeStores()
		return fmt.Errorf("controller: raft: %w", err)
	}
	c.raft = r
	if !has {
		var servers []raft.Server
		for _, p := range c.peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	return nil
}

func (c *Controller) closeStores() {
	for _, cl := range c.closers {
		cl.Close()
	}
	c.closers = nil
}

// background runs fn on a goroutine Shutdown waits for, unless the
// controller is stopping (bgMu orders the wait group's Add before Wait).
func (c *Controller) background(fn func()) {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.stopped.Load() {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}

// Shutdown leaves the group and closes the listener; it may be called
// more than once.
func (c *Controller) Shutdown() {
	c.bgMu.Lock()
	already := c.stopped.Swap(true)
	c.bgMu.Unlock()
	if already {
		return
	}
	close(c.stop)
	c.leading.Store(false)
	if c.raft != nil {
		c.raft.Shutdown().Error()
	}
	c.wg.Wait()
	if c.srv != nil {
		c.srv.Stop()
	}
	if t, ok := c.transport.(io.Closer); ok && c.opts.Transport == nil {
		t.Close()
	}
	c.closeStores()
	c.client.Close()
	c.log.Info().Str("id", c.self.ID).Msg("controller stopped")
}

// SetAddr sets the address a controller without a listener announces
// (the name server's, known once it listens); call it before Start.
func (c *Controller) SetAddr(addr string) { c.addr.Store(&addr) }

// Addr is the remoting address brokers and tools dial.
func (c *Controller) Addr() string {
	if a := c.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// ID is this node's id in the group.
func (c *Controller) ID() string { return c.self.ID }

// IsLeader reports whether this node leads and serves requests.
func (c *Controller) IsLeader() bool { return c.leading.Load() }

// watchLeadership is RoleChangeHandler: a new leader first makes sure it
// has applied everything committed before it (a barrier: stock appends an
// empty entry), announces its remoting address through the log, and only
// then serves.
func (c *Controller) watchLeadership() {
	defer c.wg.Done()
	ch := c.raft.LeaderCh()
	for {
		select {
		case <-c.stop:
			return
		case leader := <-ch:
			if !leader {
				c.leading.Store(false)
				c.log.Info().Str("id", c.self.ID).Msg("controller is no longer the leader")
				continue
			}
			c.takeLead()
		}
	}
}

func (c *Controller) takeLead() {
	for c.raft.State() == raft.Leader && !c.stopped.Load() {
		err := c.raft.Barrier(5 * time.Second).Error()
		if err == nil {
			ev := event{Type: evMember, Member: c.self.ID, Addr: c.Addr()}
			c.sched.Lock()
			err = c.raft.Apply(encodeEvents([]event{ev}), 5*time.Second).Error()
			if err == nil {
				c.leading.Store(true)
			}
			c.sched.Unlock()
		}
		if err == nil {
			c.log.Info().Str("id", c.self.ID).Msg("controller is the leader")
			return
		}
		c.log.Warn().Err(err).Msg("controller leader could not commit its first entry; retrying")
	}
}

// every runs fn at each interval of the controller's clock until Shutdown.
func (c *Controller) every(d time.Duration, fn func()) {
	defer c.wg.Done()
	for {
		t := c.clock.NewTimer(d)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C():
			fn()
		}
	}
}

// view runs fn with the state read-locked.
func (c *Controller) view(fn func(st *state)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fn(c.st)
}

// errNotLeader marks a request a non-leader cannot serve.
var errNotLeader = errors.New("The controller is not in leader state")

// propose is the write path of ControllerEventHandler: check on the
// leader, replicate the events, answer. check runs under sched, so no
// other write sees the state between a check and its events.
func (c *Controller) propose(check func(st *state) result) (result, error) {
	if !c.leading.Load() {
		return result{}, errNotLeader
	}
	c.sched.Lock()
	defer c.sched.Unlock()
	if !c.leading.Load() {
		return result{}, errNotLeader
	}
	var res result
	c.view(func(st *state) { res = check(st) })
	if len(res.events) > 0 {
		if err := c.raft.Apply(encodeEvents(res.events), 5*time.Second).Error(); err != nil {
			return result{}, fmt.Errorf("append to the controller log failed: %w", err)
		}
	}
	return res, nil
}

// read is the read path: the leader answers from its state, confirming
// its leadership with a quorum first when processReadEvent is set.
func (c *Controller) read(check func(st *state) result) (result, error) {
	if !c.leading.Load() {
		return result{}, errNotLeader
	}
	if c.opts.ProcessReadEvent {
		if err := c.raft.VerifyLeader().Error(); err != nil {
			return result{}, fmt.Errorf("leadership check failed: %w", err)
		}
	}
	var res result
	c.view(func(st *state) { res = check(st) })
	return res, nil
}

// fsm is the Controller as raft.FSM: it applies committed events to the
// state, and snapshots and restores the whole state as JSON.
type fsm Controller

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	evs, err := decodeEvents(l.Data)
	if err != nil {
		// Only rmq controllers write the log; an entry that does not
		// decode is a bug, and skipping it on every node alike keeps
		// the nodes equal.
		f.log.Error().Err(err).Uint64("index", l.Index).Msg("controller: undecodable log entry skipped")
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range evs {
		f.st.apply(e)
	}
	return nil
}

// Snapshot implements raft.FSM.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.st)
	if err != nil {
		return nil, err
	}
	return snapshot(b), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st := newState()
	if err := json.NewDecoder(rc).Decode(st); err != nil {
		return fmt.Errorf("controller: restore snapshot: %w", err)
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}

// leaderInfo is what GET_METADATA_INFO reports of the group: the leader's
// id and remoting address (announced through the log with DLedger keys,
// configured with jRaft keys) and the peers as stock lists them.
func (c *Controller) leaderInfo() (id, addr string, peers string) {
	_, lid := c.raft.LeaderWithID()
	id = string(lid)
	var b strings.Builder
	for _, p := range c.peers {
		if p.RPCAddr != "" {
			b.WriteString(p.RPCAddr + ";")
		} else {
			b.WriteString(p.ID + ":" + p.RaftAddr + ";")
		}
		if p.ID == id && p.RPCAddr != "" {
			addr = p.RPCAddr
		}
	}
	if id != "" && addr == "" {
		c.view(func(st *state) { addr = st.Members[id] })
	}
	return id, addr, b.String()
}

// notifyRoleChanged is ControllerManager.notifyBrokerRoleChanged: after a
// new master is elected, every alive member of the set gets
// NOTIFY_BROKER_ROLE_CHANGED (oneway), each from a goroutine of its own.
func (c *Controller) notifyRoleChanged(brokerName string, hdr *remoting.ElectMasterResponseHeader, set []int64) {
	if !c.opts.NotifyBrokerRoleChanged || hdr.MasterBrokerID == nil {
		return
	}
	var cluster string
	var members map[int64]string
	c.view(func(st *state) {
		if r := st.Replicas[brokerName]; r != nil {
			cluster = r.Cluster
			members = memberGroup(r).BrokerAddrs
		}
	})
	var epoch int32
	if hdr.SyncStateSetEpoch != nil {
		epoch = *hdr.SyncStateSetEpoch
	}
	body := (&remoting.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: epoch}).Encode()
	for _, id := range slices.Sorted(maps.Keys(members)) {
		addr := members[id]
		if addr == "" || !c.hb.alive(cluster, brokerName, id) {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, hdr.Fields(), body)
		req.Flag |= remoting.FlagOneway
		c.background(func() {
			if err := c.client.Oneway(addr, req); err != nil {
				c.log.Warn().Err(err).Str("broker", addr).Msg("controller: notify broker role changed failed")
			}
		})
	}
}

// ScanNotActiveBroker runs one pass of the broker expiry now: brokers
// silent past their heartbeat timeout are dropped, their connections
// closed, and a dropped master triggers an election (on the leader).
func (c *Controller) ScanNotActiveBroker() {
	for _, e := range c.hb.expire() {
		c.log.Warn().Str("brokerName", e.BrokerName).Int64("brokerId", e.BrokerID).Msg("controller: broker heartbeat expired")
		if v, ok := c.conns.Load(e.ConnID); ok {
			v.(*remoting.Conn).Close()
		}
		c.onBrokerInactive(e.BrokerName, &e.BrokerID)
	}
}

// ScanInactiveMaster runs one pass of the leader's scan now: sets whose
// master is gone while a member is alive get an election.
func (c *Controller) ScanInactiveMaster() {
	if !c.leading.Load() {
		return
	}
	var names []string
	c.view(func(st *state) { names = st.needReelect(c.hb) })
	for _, name := range names {
		c.onBrokerInactive(name, nil)
	}
}

// onBrokerInactive is ControllerManager.onBrokerInactive: on the leader,
// an inactive master (or a set named without a broker) gets an election
// the controller asks for, tried up to electMasterMaxRetryCount times.
func (c *Controller) onBrokerInactive(brokerName string, id *int64) {
	if !c.leading.Load() {
		return
	}
	if id != nil {
		var master *int64
		c.view(func(st *state) {
			if s := st.Syncs[brokerName]; s != nil && st.contains(brokerName) {
				master = s.Master
			}
		})
		if master == nil || *master != *id {
			return
		}
	}
	for range c.opts.ElectMasterMaxRetryCount {
		res, err := c.electMaster(&remoting.ElectMasterRequestHeader{BrokerName: brokerName, BrokerID: -1})
		if err == nil && res.code == remoting.Success {
			c.log.Info().Str("brokerName", brokerName).Msg("controller: elected a new master after the old one went inactive")
			return
		}
		if errors.Is(err, errNotLeader) {
			return
		}
	}
}

// electMaster proposes an election and, when a master is elected,
// notifies the set.
func (c *Controller) electMaster(req *remoting.ElectMasterRequestHeader) (result, error) {
	res, err := c.propose(func(st *state) result { return st.electMaster(req, c.hb, c.opts.EnableElectUncleanMaster) })
	if err == nil && res.code == remoting.Success {
		hdr := res.header.(*remoting.ElectMasterResponseHeader)
		c.notifyRoleChanged(req.BrokerName, hdr, []int64{*hdr.MasterBrokerID})
	}
	return res, err
}

// ConnClosed implements remoting.ConnObserver: a broker whose heartbeat
// connection closes is inactive at once (BrokerHousekeepingService).
func (c *Controller) ConnClosed(conn *remoting.Conn) {
	if _, ok := c.conns.LoadAndDelete(conn.ID()); !ok {
		return
	}
	for _, e := range c.hb.connClosed(conn.ID()) {
		c.onBrokerInactive(e.BrokerName, &e.BrokerID)
	}
}
