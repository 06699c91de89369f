package ha

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
)

// Source is the master's store as the HA service reads it (*store.Store).
type Source interface {
	// MaxPhyOffset is the commitlog end.
	MaxPhyOffset() int64
	// CommitLogFileSize is the size of every commitlog file.
	CommitLogFileSize() int64
	// ReadCommitLog copies the bytes from off up to the end of its file,
	// at most len(p) of them (0 and an error when off holds nothing).
	ReadCommitLog(off int64, p []byte) (int, error)
	// WaitDispatched returns once the commitlog up to off is written and
	// dispatched, or ctx ends: the writers' wake-up for new data.
	WaitDispatched(ctx context.Context, off int64) error
}

// MasterConfig is the master side's settings (MessageStoreConfig keys).
type MasterConfig struct {
	// ListenAddr is where slaves connect (host:haListenPort).
	ListenAddr string
	// HeartbeatInterval (haSendHeartbeatInterval, 5 s): a connection that
	// sent nothing for this long sends an empty frame.
	HeartbeatInterval time.Duration
	// HousekeepingInterval (haHousekeepingInterval, 20 s): a connection
	// that read nothing for this long is closed.
	HousekeepingInterval time.Duration
	// TransferBatchSize (haTransferBatchSize, 32 KiB) bounds a chunk; at
	// most MaxBodySize.
	TransferBatchSize int
	// FallBehindMax (haSlaveFallbehindMax, 5.x haMaxGapNotInSync, 256 MiB):
	// IsSlaveOK fails when the acked offset is this far behind.
	FallBehindMax int64
	// SlaveTimeout (slaveTimeout, 3 s) is WaitReplicated's deadline.
	SlaveTimeout time.Duration
	// AllowAckAboveMax keeps a connection whose ack is above the master's
	// commitlog end (5.x); 4.9.8 closes it (the default here).
	AllowAckAboveMax bool
	// Clock times heartbeats, housekeeping and SlaveTimeout (nil: real).
	Clock  clock.Clock
	Logger zerolog.Logger // the caller names the component
}

func (c *MasterConfig) normalize() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = 20 * time.Second
	}
	if c.TransferBatchSize <= 0 {
		c.TransferBatchSize = 32 << 10
	}
	c.TransferBatchSize = min(c.TransferBatchSize, MaxBodySize)
	if c.FallBehindMax <= 0 {
		c.FallBehindMax = 256 << 20
	}
	if c.SlaveTimeout <= 0 {
		c.SlaveTimeout = 3 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
}

// Master is the master side: it accepts slaves and streams them the
// commitlog, and tracks how far they acked (push2SlaveMaxOffset).
type Master struct {
	src Source
	cfg MasterConfig
	log zerolog.Logger

	ln     net.Listener
	push   atomic.Int64 // push2SlaveMaxOffset: the highest ack of any slave; never goes down
	group  *Waiters
	closed atomic.Bool
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[*conn]struct{}
	nconn atomic.Int32 // len(conns), read by IsSlaveOK on every SYNC_MASTER send
}

// NewMaster returns a master over src; Start listens.
func NewMaster(src Source, cfg MasterConfig) *Master {
	cfg.normalize()
	m := &Master{src: src, cfg: cfg, log: cfg.Logger,
		conns: make(map[*conn]struct{})}
	m.group = NewWaiters(cfg.Clock, cfg.SlaveTimeout)
	return m
}

// Start listens on ListenAddr and accepts slaves until Close.
func (m *Master) Start() error {
	ln, err := Listen(m.cfg.ListenAddr, &m.wg, m.closed.Load, m.log, m.take)
	if err != nil {
		return err
	}
	m.ln = ln
	m.log.Info().Str("addr", ln.Addr().String()).Msg("ha: master listening for slaves")
	return nil
}

// Addr is the listening address (after Start).
func (m *Master) Addr() net.Addr { return m.ln.Addr() }

// take registers an accepted slave connection and starts it; false
// (closed meanwhile) ends the accept loop.
func (m *Master) take(nc net.Conn) bool {
	c := newConn(m, nc)
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		nc.Close()
		return false
	}
	m.conns[c] = struct{}{}
	m.nconn.Store(int32(len(m.conns)))
	m.mu.Unlock()
	m.log.Info().Str("slave", c.addr).Msg("ha: slave connected")
	c.start()
	return true
}

// Listen opens the HA port at addr and runs AcceptLoop on it, on a
// goroutine counted in wg, with closed and take as AcceptLoop takes them.
// Both HA services listen with it.
func Listen(addr string, wg *sync.WaitGroup, closed func() bool, log zerolog.Logger, take func(net.Conn) bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		AcceptLoop(ln, closed, log, take)
	}()
	return ln, nil
}

// AcceptLoop accepts on ln until closed reports the owner closed (the
// listener's error then ends it) or take returns false; a failed accept
// is logged and retried after a pause (EMFILE). Both HA services use it.
func AcceptLoop(ln net.Listener, closed func() bool, log zerolog.Logger, take func(net.Conn) bool) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			log.Warn().Err(err).Msg("ha: accept failed")
			time.Sleep(100 * time.Millisecond) // pacing only (EMFILE)
			continue
		}
		if !take(nc) {
			return
		}
	}
}

// drop forgets a closed connection.
func (m *Master) drop(c *conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.nconn.Store(int32(len(m.conns)))
	m.mu.Unlock()
}

// notifyAck raises push2SlaveMaxOffset to ack (never lowers it) and
// releases the sends it covers (HAService.notifyTransferSome).
func (m *Master) notifyAck(ack int64) {
	for {
		cur := m.push.Load()
		if ack <= cur {
			return
		}
		if m.push.CompareAndSwap(cur, ack) {
			break
		}
	}
	m.group.Ack(ack)
}

// Push2SlaveMaxOffset is the highest offset any slave acked.
func (m *Master) Push2SlaveMaxOffset() int64 { return m.push.Load() }

// Connections is the number of connected slaves.
func (m *Master) Connections() int { return int(m.nconn.Load()) }

// IsSlaveOK is HAService.isSlaveOK: a slave is connected and the acked
// offset is less than FallBehindMax behind putEnd.
func (m *Master) IsSlaveOK(putEnd int64) bool {
	return m.Connections() > 0 && putEnd-m.push.Load() < m.cfg.FallBehindMax
}

// WaitReplicated calls fn(true) once a slave acked end, or fn(false)
// SlaveTimeout after the call (or at Close). fn runs on the goroutine of
// the ack, of the expiry or of the caller (acked already), and must not
// block.
func (m *Master) WaitReplicated(end int64, fn func(ok bool)) {
	m.group.Add(end, fn)
}

// SlaveStat is one connected slave.
type SlaveStat struct {
	Addr      string
	AckOffset int64 // its last report; -1 before the first
	// InSync: MasterMaxOffset - AckOffset is below FallBehindMax (5.x
	// DefaultHAService.isInSyncSlave, haMaxGapNotInSync).
	InSync bool
	// TransferFromWhere is where the next chunk to it starts
	// (nextTransferFromWhere), -1 before its request offset.
	TransferFromWhere int64
	// TransferredByteInSecond is the commitlog bytes sent to it in the
	// last whole second (FlowMonitor).
	TransferredByteInSecond int64
}

// MasterStats is what tooling shows of the master side.
type MasterStats struct {
	Connections         int
	Push2SlaveMaxOffset int64
	MasterMaxOffset     int64
	Slaves              []SlaveStat // by address
}

// Stats reads the master side's counters.
func (m *Master) Stats() MasterStats {
	st := MasterStats{Push2SlaveMaxOffset: m.push.Load(), MasterMaxOffset: m.src.MaxPhyOffset()}
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	for c := range m.conns {
		ack := c.ack.Load()
		st.Slaves = append(st.Slaves, SlaveStat{Addr: c.addr, AckOffset: ack,
			InSync: st.MasterMaxOffset-ack < m.cfg.FallBehindMax, TransferFromWhere: c.from.Load(),
			TransferredByteInSecond: c.sent.PerSecond(now)})
	}
	m.mu.Unlock()
	st.Connections = len(st.Slaves)
	slices.SortFunc(st.Slaves, func(a, b SlaveStat) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	return st
}

// Close stops accepting, closes every connection and fails the waiting
// sends.
func (m *Master) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	var err error
	if m.ln != nil {
		err = m.ln.Close()
	}
	m.mu.Lock()
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	m.wg.Wait()
	m.group.Close()
	return err
}
