package autoswitch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/store/ha"
)

// Store is what the service needs of the broker's store (*store.Store).
type Store interface {
	// MaxPhyOffset is the commitlog end; MinPhyOffset its first offset.
	MaxPhyOffset() int64
	MinPhyOffset() int64
	// CommitLogFileSize is the size of every commitlog file.
	CommitLogFileSize() int64
	// ReadCommitLog copies the bytes from off up to the end of its file,
	// at most len(p) of them (0 and an error when off holds nothing).
	ReadCommitLog(off int64, p []byte) (int, error)
	// WaitDispatched returns once the commitlog below off is dispatched,
	// or ctx ends: the master's wake-up for new data.
	WaitDispatched(ctx context.Context, off int64) error
	// ReplicaEnd is where the next replicated bytes must start;
	// AppendReplicated writes the master's bytes read at off and returns
	// the new ReplicaEnd.
	ReplicaEnd() int64
	AppendReplicated(off int64, b []byte) (int64, error)
	// TruncateTo cuts the commitlog (and what was built from it) back to
	// off, a record boundary.
	TruncateTo(off int64) error
	// SetConfirmOffset gates what consumers see at off; -1 removes the
	// gate. ConfirmOffset is the gate in force (-1: none), which a
	// restarted store reloads.
	SetConfirmOffset(off int64)
	ConfirmOffset() int64
}

// Config is the service's settings (5.3.3 MessageStoreConfig keys).
type Config struct {
	// ListenAddr is the HA port (haListenPort), listened on in every role.
	ListenAddr string
	// TransferBatchSize (haTransferBatchSize, 32 KiB) bounds a chunk.
	TransferBatchSize int
	// HeartbeatInterval (haSendHeartbeatInterval, 5 s): the master sends an
	// empty chunk, and the slave reports, after this long of silence.
	HeartbeatInterval time.Duration
	// HousekeepingInterval (haHousekeepingInterval, 20 s): a connection
	// that read nothing for this long is closed.
	HousekeepingInterval time.Duration
	// MaxTimeSlaveNotCatchup (haMaxTimeSlaveNotCatchup, 15 s): a member of
	// the sync state set that has not caught up for this long is proposed
	// for removal.
	MaxTimeSlaveNotCatchup time.Duration
	// CheckSyncStateSetInterval (checkSyncStateSetPeriod, 5 s) is how often
	// the master looks for members to remove.
	CheckSyncStateSetInterval time.Duration
	// AllAckInSyncStateSet (allAckInSyncStateSet): a SYNC send waits for
	// every member of the sync state set, and the confirm offset is their
	// minimum ack.
	AllAckInSyncStateSet bool
	// SyncFromLastFile and AsyncLearner are the flags the slave sends in
	// its handshake (syncFromLastFile, asyncLearner).
	SyncFromLastFile bool
	AsyncLearner     bool
	// SlaveTimeout (slaveTimeout, 3 s) is WaitReplicated's deadline.
	SlaveTimeout time.Duration
	// InSyncReplicas (inSyncReplicas, 1): without AllAckInSyncStateSet a
	// SYNC send waits for InSyncReplicas-1 slaves' acks, none (released
	// at once) when it is 1 or less (CommitLog.handleHA, :1317-1332).
	InSyncReplicas int
	// ReconnectDelay is the slave's pause before connecting again (5 s);
	// DialTimeout bounds a connection attempt (3 s).
	ReconnectDelay time.Duration
	DialTimeout    time.Duration
	// LocalBrokerID is this broker's controller id (SetLocalBrokerID
	// changes it; ChangeToSlave sets it).
	LocalBrokerID int64
	// OnSyncStateSetChange receives every proposed sync state set (expand
	// or shrink), in order, on one goroutine; the broker reports it with
	// ALTER_SYNC_STATE_SET (1001) and calls SetSyncStateSet with what the
	// controller accepted. nil: proposals are only logged.
	OnSyncStateSetChange func(proposed []int64)
	// Clock times heartbeats, housekeeping, catch-up and SlaveTimeout.
	Clock  clock.Clock
	Logger zerolog.Logger
}

func (c *Config) normalize() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HeartbeatInterval, 5*time.Second)
	def(&c.HousekeepingInterval, 20*time.Second)
	def(&c.MaxTimeSlaveNotCatchup, 15*time.Second)
	def(&c.CheckSyncStateSetInterval, 5*time.Second)
	def(&c.SlaveTimeout, 3*time.Second)
	def(&c.ReconnectDelay, 5*time.Second)
	def(&c.DialTimeout, 3*time.Second)
	if c.TransferBatchSize <= 0 {
		c.TransferBatchSize = 32 << 10
	}
	c.TransferBatchSize = min(c.TransferBatchSize, MaxTransferBody)
	if c.InSyncReplicas <= 0 {
		c.InSyncReplicas = 1
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
}

// Role is the service's side.
type Role int

// The roles: none before the first ChangeToMaster/ChangeToSlave.
const (
	RoleNone Role = iota
	RoleMaster
	RoleSlave
)

func (r Role) String() string {
	return [...]string{"NONE", "MASTER", "SLAVE"}[r]
}

// ErrEpochFenced is a role change to an epoch below the epoch file's last
// (changeToMaster/changeToSlave refuse it the same way).
var ErrEpochFenced = errors.New("autoswitch: epoch below the last epoch")

// Service is AutoSwitchHAService: the HA port of a broker in controller
// mode. As master it streams its commitlog to slaves with the AutoSwitch
// frames, keeps their acks, the confirm offset and the SYNC waiters, and
// proposes sync state set changes; as slave it follows a master's HA
// address, truncates to the consistent point and appends what it is sent.
//
// Locking: mu guards the role, the connections, the sync state set and
// the acks' derived values; it is never held across socket I/O or a
// callback. Each connection has its own goroutines (reader, writer).
type Service struct {
	st     Store
	epochs *EpochFile
	cfg    Config
	log    zerolog.Logger

	ln     net.Listener
	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	role     Role
	localID  int64
	conns    map[*masterConn]struct{}
	set      []int64 // the accepted sync state set, sorted
	setEpoch int32
	// proposed is the last proposal not yet answered by SetSyncStateSet
	// (stock remoteSyncStateSet with isSynchronizingSyncStateSet); while
	// it is set, the effective set is the union of both.
	proposed   []int64
	caughtUp   map[int64]time.Time // slave id → last time it caught up
	confirm    int64               // the master's computed confirm offset
	pushedGate int64               // the last SetConfirmOffset value
	waiters    *ha.Waiters         // SYNC waiters; nil unless master
	ackSeq     uint64
	client     *slaveClient // nil unless slave
	masterAddr string

	gated        atomic.Bool // the master's store gate is on (writers poll)
	slaveConfirm atomic.Int64
	wake         chan struct{} // closed and replaced to wake the writers
	wakeMu       sync.Mutex
	notes        chan struct{} // a proposal is pending for the notifier
	notesQ       [][]int64     // under mu
}

// NewService returns a service over st and epochs; Start listens.
func NewService(st Store, epochs *EpochFile, cfg Config) *Service {
	cfg.normalize()
	s := &Service{st: st, epochs: epochs, cfg: cfg, log: cfg.Logger,
		stop: make(chan struct{}), localID: cfg.LocalBrokerID,
		conns: make(map[*masterConn]struct{}), caughtUp: make(map[int64]time.Time),
		confirm: -1, pushedGate: -2, wake: make(chan struct{}), notes: make(chan struct{}, 1)}
	s.slaveConfirm.Store(-1)
	return s
}

// Start listens on the HA port and runs the housekeeping goroutines.
func (s *Service) Start() error {
	ln, err := ha.Listen(s.cfg.ListenAddr, &s.wg, s.closed.Load, s.log, s.take)
	if err != nil {
		return err
	}
	s.ln = ln
	s.wg.Add(2)
	go s.checkLoop()
	go s.notifyLoop()
	s.log.Info().Str("addr", ln.Addr().String()).Msg("autoswitch: HA port listening")
	return nil
}

// Addr is the HA port's address (after Start).
func (s *Service) Addr() net.Addr { return s.ln.Addr() }

// Epochs is the epoch file (GET_BROKER_EPOCH_CACHE, metrics).
func (s *Service) Epochs() *EpochFile { return s.epochs }

// Close stops everything: the port, the connections, the slave client and
// the waiters (which fail).
func (s *Service) Close() {
	if s.closed.Swap(true) {
		return
	}
	close(s.stop)
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Lock()
	release := s.leaveLocked(RoleNone)
	s.mu.Unlock()
	release()
	s.wg.Wait()
}

// SetLocalBrokerID sets this broker's controller id (the master leaves
// itself out of the acks it waits for).
func (s *Service) SetLocalBrokerID(id int64) {
	s.mu.Lock()
	s.localID = id
	s.mu.Unlock()
}

// ChangeToMaster makes the service the master of epoch
// (AutoSwitchHAService.changeToMaster, :115-162): it refuses an epoch
// below the last, stops following a master, drops every connection,
// removes the store's gate (everything written becomes visible: a new
// master serves all it has) and waits for the dispatch, drops epoch
// entries at or above epoch and those starting after the commitlog end (a
// tail a crash lost), then appends (epoch, commitlog end) durably. An
// entry starting at the end is kept: a term that wrote nothing, whose old
// master, rejoining as a slave, matches on it (a stock slave finds no
// other point when it is its only entry; see EpochEntry). The broker
// takes writes only after it returns nil.
func (s *Service) ChangeToMaster(epoch int32) error {
	// RoleNone until the end: connections arriving meanwhile are refused.
	release, err := s.switchRole(epoch, RoleNone, nil)
	if err != nil {
		return err
	}
	release()

	// truncateInvalidMsg: this store's commitlog never holds a torn
	// replicated record, only its pending bytes, which TruncateTo at the
	// end drops (store.TruncateTo).
	if err := s.st.TruncateTo(s.st.MaxPhyOffset()); err != nil {
		return fmt.Errorf("autoswitch: dropping incomplete replicated bytes: %w", err)
	}
	s.pushGate(-1)
	end := s.st.MaxPhyOffset()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = s.st.WaitDispatched(ctx, end)
	cancel()
	if err != nil {
		return fmt.Errorf("autoswitch: waiting for the dispatch to %d: %w", end, err)
	}
	if err := s.epochs.TruncateSuffixByEpoch(epoch); err != nil {
		return err
	}
	if err := s.epochs.TruncateSuffixByOffset(end + 1); err != nil {
		return err
	}
	if err := s.epochs.Append(epoch, end); err != nil {
		return err
	}

	s.mu.Lock()
	s.role = RoleMaster
	s.waiters = ha.NewWaiters(s.cfg.Clock, s.cfg.SlaveTimeout)
	s.proposed = nil
	clear(s.caughtUp)
	s.confirm = end
	s.slaveConfirm.Store(-1)
	note := s.refreshLocked()
	s.mu.Unlock()
	note()
	s.log.Info().Int32("epoch", epoch).Int64("startOffset", end).Msg("autoswitch: changed to master")
	return nil
}

// ChangeToSlave makes the service a slave of the master of masterEpoch
// (changeToSlave, :164-196): it refuses an epoch below the last, fails the
// SYNC waiters, drops the connections and follows masterHAAddr (set later
// with SetMasterHAAddr when ""). A store with no gate (a former master)
// is gated at its commitlog end: what is there stays visible, what the
// master sends becomes visible as the master confirms it; a store with a
// gate (a restarted slave) keeps it, so it serves no more than it did.
func (s *Service) ChangeToSlave(masterHAAddr string, masterEpoch int32, selfBrokerID int64) error {
	var c *slaveClient
	var addr string
	release, err := s.switchRole(masterEpoch, RoleSlave, func() {
		s.localID = selfBrokerID
		s.proposed = nil
		if masterHAAddr != "" {
			s.masterAddr = masterHAAddr
		}
		if s.client == nil {
			s.client = newSlaveClient(s)
			s.client.start()
		}
		c, addr = s.client, s.masterAddr
	})
	if err != nil {
		return err
	}
	s.gated.Store(false)
	gate := s.st.ConfirmOffset()
	if gate < 0 {
		gate = s.st.MaxPhyOffset()
	}
	s.slaveConfirm.Store(gate)
	s.pushGate(gate)
	release()
	c.setAddr(addr)
	s.log.Info().Str("master", addr).Int32("epoch", masterEpoch).Int64("brokerId", selfBrokerID).Msg("autoswitch: changed to slave")
	return nil
}

// SetMasterHAAddr sets the master's HA address the slave follows (learnt
// from the name server's register result); a change reconnects at once.
func (s *Service) SetMasterHAAddr(addr string) {
	s.mu.Lock()
	s.masterAddr = addr
	c := s.client
	s.mu.Unlock()
	if c != nil {
		c.setAddr(addr)
	}
}

// SetSyncStateSet takes the sync state set the controller accepted (and
// ends the pending proposal); a set of an older epoch is ignored.
func (s *Service) SetSyncStateSet(ids []int64, epoch int32) {
	s.mu.Lock()
	if epoch < s.setEpoch {
		s.mu.Unlock()
		return
	}
	s.set = sortedIDs(ids)
	s.setEpoch = epoch
	s.proposed = nil
	note := s.refreshLocked()
	s.mu.Unlock()
	note()
}

// SyncStateSet returns the accepted sync state set and its epoch.
func (s *Service) SyncStateSet() ([]int64, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.set), s.setEpoch
}

// ConfirmOffset is CommitLog.getConfirmOffset: on the master, the minimum
// ack over the sync state set when AllAckInSyncStateSet and the set has
// more than one member, else the commitlog end; on a slave, the last
// confirm offset its master sent, bounded by what it holds; -1 before a
// role.
func (s *Service) ConfirmOffset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmLocked()
}

func (s *Service) confirmLocked() int64 {
	switch s.role {
	case RoleMaster:
		if s.gateOnLocked() {
			return s.confirm
		}
		return s.st.MaxPhyOffset()
	case RoleSlave:
		return s.slaveConfirm.Load()
	}
	return -1
}

// WaitReplicated calls fn(true) once the slaves acked end — every member
// of the sync state set but the master with AllAckInSyncStateSet (at once
// when the set is the master alone), InSyncReplicas-1 slaves otherwise (at
// once for InSyncReplicas <= 1) — or fn(false)
// SlaveTimeout after the call, at a role change or at Close. fn runs on
// the goroutine of the ack, of the expiry or of the caller and must not
// block. No goroutine or poll exists per call.
func (s *Service) WaitReplicated(end int64, fn func(ok bool)) {
	s.mu.Lock()
	w := s.waiters
	s.mu.Unlock()
	if w == nil {
		fn(false)
		return
	}
	w.Add(end, fn)
	s.wakeWriters()
}

// IsSlaveOK is true on a master: 5.3.3 never answers a SYNC send with
// SLAVE_NOT_AVAILABLE (CommitLog has no isSlaveOK any more); in
// controller mode the only refusal is IN_SYNC_REPLICAS_NOT_ENOUGH, by
// the sync state set's size, which the broker checks, and a send then
// waits (WaitReplicated) and ends PUT_OK or FLUSH_SLAVE_TIMEOUT.
func (s *Service) IsSlaveOK(end int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role == RoleMaster
}

// SlaveStat is one slave connection on the master.
type SlaveStat struct {
	Addr         string
	BrokerID     int64 // -1 before its handshake
	AckOffset    int64 // -1 before its first report
	TransferFrom int64 // the next offset sent to it, -1 before the start
	InSync       bool  // a member of the sync state set
	AsyncLearner bool
	// TransferredByteInSecond is the bytes written to it in the last
	// whole second (the connection's FlowMonitor, headers included).
	TransferredByteInSecond int64
}

// ServiceStats is what haStatus shows.
type ServiceStats struct {
	Role           Role
	MaxOffset      int64
	ConfirmOffset  int64
	SyncStateSet   []int64
	SyncStateEpoch int32
	Slaves         []SlaveStat // by address; master only
	MasterAddr     string      // slave only
	Connected      bool        // slave only
	ReportedOffset int64       // slave only
	SlaveSessions  int64       // slave only: connections made
	// Slave only, HAClientRuntimeInfo's figures (AutoSwitchHAService
	// .getRuntimeInfo, :379-392): the clock Unix ms of the last read from
	// and write to the master (0 for the read between sessions) and the
	// bytes read from it in the last whole second.
	LastReadTimestamp       int64
	LastWriteTimestamp      int64
	TransferredByteInSecond int64
	LastEpoch               int32
	EpochEntryCount         int
}

// Stats reads the service's state.
func (s *Service) Stats() ServiceStats {
	s.mu.Lock()
	st := ServiceStats{Role: s.role, MaxOffset: s.st.MaxPhyOffset(), ConfirmOffset: s.confirmLocked(),
		SyncStateSet: slices.Clone(s.set), SyncStateEpoch: s.setEpoch, MasterAddr: s.masterAddr}
	eff := s.effectiveSetLocked()
	now := s.cfg.Clock.Now()
	for c := range s.conns {
		id := int64(-1)
		if c.handshook {
			id = c.slaveID
		}
		st.Slaves = append(st.Slaves, SlaveStat{Addr: c.addr, BrokerID: id, AckOffset: c.ack.Load(),
			TransferFrom: c.from.Load(), InSync: c.handshook && slices.Contains(eff, c.slaveID), AsyncLearner: c.asyncLearner,
			TransferredByteInSecond: c.sent.PerSecond(now)})
	}
	cl := s.client
	s.mu.Unlock()
	if cl != nil {
		st.Connected, st.ReportedOffset, st.SlaveSessions = cl.connected.Load(), cl.reported.Load(), cl.sessions.Load()
		st.LastReadTimestamp, st.LastWriteTimestamp = cl.readAt.Load(), cl.wroteAt.Load()
		st.TransferredByteInSecond = cl.read.PerSecond(s.cfg.Clock.Now())
	}
	slices.SortFunc(st.Slaves, func(a, b SlaveStat) int {
		if a.Addr < b.Addr {
			return -1
		}
		if a.Addr > b.Addr {
			return 1
		}
		return 0
	})
	st.LastEpoch, st.EpochEntryCount = s.epochs.LastEpoch(), s.epochs.Len()
	return st
}

// effectiveSetLocked is getSyncStateSet: the accepted set, or its union
// with the pending proposal.
func (s *Service) effectiveSetLocked() []int64 {
	if s.proposed == nil {
		return s.set
	}
	u := slices.Clone(s.set)
	for _, id := range s.proposed {
		if !slices.Contains(u, id) {
			u = append(u, id)
		}
	}
	slices.Sort(u)
	return u
}

// gateOnLocked: the confirm offset is the minimum ack (CommitLog
// getConfirmOffset, :655-668, which looks at the accepted set: a proposal
// alone does not gate; the minimum then covers the proposal too).
func (s *Service) gateOnLocked() bool {
	return s.cfg.AllAckInSyncStateSet && len(s.set) > 1
}

// refreshLocked recomputes what follows from the acks and the set on a
// master: the confirm offset and the store's gate, and the offset the SYNC
// waiters are released at. It returns what to run once mu is released.
func (s *Service) refreshLocked() func() {
	if s.role != RoleMaster {
		return s.takeNoteLocked()
	}
	eff := s.effectiveSetLocked()
	gate := int64(-1)
	if s.gateOnLocked() {
		s.confirm = s.computeConfirmLocked(eff)
		gate = s.confirm
	}
	s.gated.Store(gate >= 0)
	// The SYNC release point.
	rel := int64(-1)
	if s.cfg.AllAckInSyncStateSet {
		rel = math.MaxInt64
		if len(eff) > 1 {
			for _, id := range eff {
				if id != s.localID {
					rel = min(rel, s.ackOfLocked(id))
				}
			}
		}
	} else if k := s.cfg.InSyncReplicas - 1; k <= 0 {
		rel = math.MaxInt64 // handleHA: needAckNums <= 1 is PUT_OK at once
	} else {
		// GroupTransferService: ackNums counts the master and every
		// connection that acked; the release point is the k-th highest
		// ack.
		acks := make([]int64, 0, len(s.conns))
		for c := range s.conns {
			acks = append(acks, c.ack.Load())
		}
		if len(acks) >= k {
			slices.Sort(acks)
			rel = acks[len(acks)-k]
		}
	}
	s.ackSeq++
	w, seq := s.waiters, s.ackSeq
	note := s.takeNoteLocked()
	// The gate is pushed under mu so that two refreshes never reach the
	// store out of order (SetConfirmOffset is a store update, no I/O).
	if s.pushedGate != gate {
		s.pushedGate = gate
		s.st.SetConfirmOffset(gate)
	}
	return func() {
		if w != nil {
			w.Set(rel, seq)
		}
		note()
	}
}

// computeConfirmLocked is computeConfirmOffset (:416-438): the minimum
// positive ack of the connected members, from the commitlog end; a member
// without a connection keeps the last value (#6662).
func (s *Service) computeConfirmLocked(eff []int64) int64 {
	for _, id := range eff {
		if id != s.localID && s.ackOfLocked(id) < 0 {
			return s.confirm
		}
	}
	c := s.st.MaxPhyOffset()
	for conn := range s.conns {
		if ack := conn.ack.Load(); conn.handshook && ack > 0 && slices.Contains(eff, conn.slaveID) {
			c = min(c, ack)
		}
	}
	return c
}

// ackOfLocked is the highest ack of slave id's connections, -1 for none.
func (s *Service) ackOfLocked(id int64) int64 {
	a := int64(-1)
	for c := range s.conns {
		if c.handshook && c.slaveID == id {
			a = max(a, c.ack.Load())
		}
	}
	return a
}

// pushGate sets the store's gate (only on a change).
func (s *Service) pushGate(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pushedGate != off {
		s.pushedGate = off
		s.st.SetConfirmOffset(off)
	}
}

// proposeLocked marks set as the pending proposal and queues it for
// OnSyncStateSetChange (markSynchronizingSyncStateSet and
// notifySyncStateSetChanged).
func (s *Service) proposeLocked(set []int64) {
	set = sortedIDs(set)
	s.proposed = set
	s.notesQ = append(s.notesQ, slices.Clone(set))
	s.log.Info().Ints64("proposed", set).Ints64("current", s.set).Msg("autoswitch: proposing a new sync state set")
}

// takeNoteLocked returns the signal to the notifier when a proposal is
// queued.
func (s *Service) takeNoteLocked() func() {
	if len(s.notesQ) == 0 {
		return func() {}
	}
	return func() {
		select {
		case s.notes <- struct{}{}:
		default:
		}
	}
}

// notifyLoop hands the proposals to OnSyncStateSetChange in order.
func (s *Service) notifyLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.notes:
		case <-s.stop:
			return
		}
		for {
			s.mu.Lock()
			if len(s.notesQ) == 0 {
				s.mu.Unlock()
				break
			}
			p := s.notesQ[0]
			s.notesQ = s.notesQ[1:]
			s.mu.Unlock()
			if s.cfg.OnSyncStateSetChange != nil {
				s.cfg.OnSyncStateSetChange(p)
			}
		}
	}
}

// checkLoop runs maybeShrinkSyncStateSet every CheckSyncStateSetInterval.
func (s *Service) checkLoop() {
	defer s.wg.Done()
	for {
		t := s.cfg.Clock.NewTimer(s.cfg.CheckSyncStateSetInterval)
		select {
		case <-t.C():
		case <-s.stop:
			t.Stop()
			return
		}
		s.TruncateEpochPrefix()
		s.CheckSyncStateSet()
	}
}

// TruncateEpochPrefix drops the epochs whose bytes the commitlog no longer
// holds (truncateEpochFilePrefix(minPhyOffset - 1), which stock's commitlog
// cleanup calls in controller mode); it runs every
// CheckSyncStateSetInterval, in every role, and writes the file only when
// an entry goes. Without it the table grows by one entry per election for
// good, and a master past MaxHandshakeEntries answers no handshake.
func (s *Service) TruncateEpochPrefix() {
	if min := s.st.MinPhyOffset(); min > 0 {
		if err := s.epochs.TruncatePrefixByOffset(min - 1); err != nil {
			s.log.Warn().Err(err).Int64("minPhyOffset", min).Msg("autoswitch: dropping the epochs before the commitlog start failed; retried")
		}
	}
}

// CheckSyncStateSet is maybeShrinkSyncStateSet (:273-303): on a master, a
// member (other than the master) that has not caught up for
// MaxTimeSlaveNotCatchup, or never did, is proposed for removal. It runs
// every CheckSyncStateSetInterval; the broker may call it too.
func (s *Service) CheckSyncStateSet() {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	if s.role != RoleMaster {
		s.mu.Unlock()
		return
	}
	eff := s.effectiveSetLocked()
	keep := make([]int64, 0, len(eff))
	for _, id := range eff {
		t, ok := s.caughtUp[id]
		if id == s.localID || (ok && now.Sub(t) <= s.cfg.MaxTimeSlaveNotCatchup) {
			keep = append(keep, id)
		}
	}
	if len(keep) != len(eff) {
		s.proposeLocked(keep)
	}
	note := s.refreshLocked()
	s.mu.Unlock()
	note()
}

// onAck takes a slave's report (ReadSocketService's TRANSFER case,
// AutoSwitchHAConnection.java:337-349): the catch-up time and a possible
// expansion of the sync state set (maybeExpandInSyncStateSet, :214-220 and
// the service's :309-326), then the confirm offset and the waiters.
func (s *Service) onAck(c *masterConn, ack int64) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	c.ack.Store(ack)
	if s.role != RoleMaster {
		s.mu.Unlock()
		return
	}
	if !c.asyncLearner && ack >= c.lastMasterMax.Load() {
		t := time.Unix(0, c.lastTransferAt.Load())
		if s.st.MaxPhyOffset() == ack {
			t = now
		}
		if prev, ok := s.caughtUp[c.slaveID]; !ok || t.After(prev) {
			s.caughtUp[c.slaveID] = t
		}
		eff := s.effectiveSetLocked()
		if !slices.Contains(eff, c.slaveID) && ack >= s.confirmLocked() {
			if last, ok := s.epochs.LastEntry(); ok && ack >= last.StartOffset {
				s.proposeLocked(append(slices.Clone(eff), c.slaveID))
			}
		}
	}
	note := s.refreshLocked()
	s.mu.Unlock()
	note()
}

// markCaughtUp records that slave id was sent everything (the writer found
// nothing to send, :619-621).
func (s *Service) markCaughtUp(c *masterConn) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	if c.handshook && s.role == RoleMaster {
		if prev, ok := s.caughtUp[c.slaveID]; !ok || now.After(prev) {
			s.caughtUp[c.slaveID] = now
		}
	}
	s.mu.Unlock()
}

// wakeChan is the channel the next wakeWriters closes.
func (s *Service) wakeChan() <-chan struct{} {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	return s.wake
}

// wakeWriters wakes the connection writers (a SYNC send waits: stock
// wakes them in handleHA), needed while the gate holds the dispatch back.
func (s *Service) wakeWriters() {
	if !s.gated.Load() {
		return
	}
	s.wakeMu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.wakeMu.Unlock()
}

// switchRole refuses an epoch below the epoch file's last, then, under
// mu, leaves the current role for role and runs edit; the returned
// release closes what was left (connections, waiters, and the slave
// client unless role is RoleSlave) once mu is released.
func (s *Service) switchRole(epoch int32, role Role, edit func()) (func(), error) {
	if last := s.epochs.LastEpoch(); epoch < last {
		return nil, fmt.Errorf("%w: %d < %d", ErrEpochFenced, epoch, last)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, errors.New("autoswitch: service closed")
	}
	release := s.leaveLocked(role)
	if edit != nil {
		edit()
	}
	return release, nil
}

// leaveLocked sets role and takes the connections, the waiters (which
// fail) and, unless role is RoleSlave, the slave client, returning their
// closing.
func (s *Service) leaveLocked(role Role) func() {
	conns := s.takeConnsLocked()
	w := s.waiters
	s.waiters = nil
	var c *slaveClient
	if role != RoleSlave {
		c, s.client = s.client, nil
	}
	s.role = role
	return func() {
		closeAll(conns)
		if c != nil {
			c.close()
		}
		if w != nil {
			w.Close()
		}
	}
}

func (s *Service) takeConnsLocked() []*masterConn {
	conns := make([]*masterConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	clear(s.conns)
	return conns
}

func closeAll(conns []*masterConn) {
	for _, c := range conns {
		c.close()
	}
}

func sortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
