package autoswitch

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/store/ha"
)

// The slave's side (AutoSwitchHAClient): connect to the master's HA
// address, send the handshake with this broker's id, truncate to the
// consistent point of the master's epoch table, then append what the
// master streams, record each new epoch, take the confirm offset and
// report the new end.

// errOffsetMismatch is stock's "master pushed offset not equal the max
// phy offset in slave": the session is closed and made again.
var errOffsetMismatch = errors.New("autoswitch: master pushed offset not equal the slave's end")

type slaveClient struct {
	s      *Service
	follow *ha.Follower
	wmu    sync.Mutex // serialises reports

	connected atomic.Bool
	reported  atomic.Int64
	sessions  atomic.Int64
	lastRead  atomic.Int64 // clock UnixNano; the housekeeping's
	// readAt and wroteAt are AutoSwitchHAClient's lastReadTimestamp and
	// lastWriteTimestamp (haStatus), clock Unix ms: both set when the
	// client is made (init, :149-171), readAt on connecting (connectMaster)
	// and on every read, 0 once a session ends (closeMaster), wroteAt on
	// every write (the handshake and reports). read is its FlowMonitor:
	// every byte read from the master, headers included.
	readAt  atomic.Int64
	wroteAt atomic.Int64
	read    ha.ByteRate
}

func newSlaveClient(s *Service) *slaveClient {
	c := &slaveClient{s: s}
	c.follow = ha.NewFollower(s.cfg.Clock, s.cfg.ReconnectDelay, s.log, c.session)
	now := s.cfg.Clock.Now().UnixMilli()
	c.readAt.Store(now)
	c.wroteAt.Store(now)
	return c
}

func (c *slaveClient) start() { c.follow.Start() }

// setAddr follows addr ("" for none); a change closes the current session
// and connects at once.
func (c *slaveClient) setAddr(addr string) { c.follow.SetAddr(addr) }

func (c *slaveClient) close() { c.follow.Close() }

// session runs one connection until an error.
func (c *slaveClient) session(addr string) error {
	s := c.s
	nc, err := net.DialTimeout("tcp", addr, s.cfg.DialTimeout)
	if err != nil {
		return err
	}
	if !c.follow.Attach(addr, nc) {
		return nil
	}
	c.sessions.Add(1)
	now := s.cfg.Clock.Now()
	c.lastRead.Store(now.UnixNano())
	c.readAt.Store(now.UnixMilli())
	done := make(chan struct{})
	var hb sync.WaitGroup
	defer func() {
		close(done)
		nc.Close()
		hb.Wait()
		c.connected.Store(false)
		c.readAt.Store(0)
		c.follow.Detach()
	}()

	s.mu.Lock()
	id := s.localID
	s.mu.Unlock()
	if err := c.write(nc, AppendSlaveHandshake(nil, SlaveHandshake{
		SyncFromLastFile: s.cfg.SyncFromLastFile, AsyncLearner: s.cfg.AsyncLearner, BrokerID: id})); err != nil {
		return err
	}
	hb.Add(1)
	go func() {
		defer hb.Done()
		c.heartbeat(nc, done)
	}()

	var d MasterDecoder
	var frames []MasterFrame
	buf := make([]byte, 64<<10)
	st := &slaveSession{c: c, nc: nc, epoch: -1}
	for {
		n, rerr := nc.Read(buf)
		if n > 0 {
			now := s.cfg.Clock.Now()
			c.lastRead.Store(now.UnixNano())
			c.readAt.Store(now.UnixMilli())
			c.read.Add(now, n)
			var ferr error
			frames, ferr = d.Feed(frames[:0], buf[:n])
			for i := range frames {
				if err := st.onFrame(&frames[i]); err != nil {
					return err
				}
			}
			if ferr != nil {
				return ferr
			}
		}
		if rerr != nil {
			return rerr
		}
	}
}

// slaveSession is one connection's progress.
type slaveSession struct {
	c         *slaveClient
	nc        net.Conn
	handshook bool
	epoch     int32      // currentReceivedEpoch
	master    *EpochFile // the master's table from its handshake
}

func (ss *slaveSession) onFrame(f *MasterFrame) error {
	c, s := ss.c, ss.c.s
	st := s.st
	// A frame whose state is not the session's closes it (:499-506).
	if f.State == StateHandshake {
		if ss.handshook {
			return fmt.Errorf("%w: a second master handshake", ErrFrame)
		}
		end := st.ReplicaEnd()
		plan, err := PlanTruncate(s.epochs.Entries(), end, f.Handshake)
		if err != nil {
			return err
		}
		if plan.Truncate {
			if plan.Offset < end {
				if err := st.TruncateTo(plan.Offset); err != nil {
					return fmt.Errorf("autoswitch: truncating to %d: %w", plan.Offset, err)
				}
				s.log.Warn().Int64("from", end).Int64("to", plan.Offset).Msg("autoswitch: truncated the commitlog to the consistent point")
			}
			if err := s.epochs.TruncateSuffixByOffset(plan.Offset); err != nil {
				return err
			}
		}
		// PlanTruncate accepted the table: it is in order.
		ss.master, _ = NewEpochTable(f.Handshake.Entries)
		ss.handshook = true
		s.log.Info().Int64("masterMax", f.Handshake.MaxOffset).Int32("masterEpoch", f.Handshake.LastEpoch).
			Int64("offset", st.ReplicaEnd()).Msg("autoswitch: handshake with the master done")
		// Heartbeats start after this first report: before it, the last
		// report is the previous session's, maybe above the cut.
		if err := c.report(ss.nc, st.ReplicaEnd()); err != nil {
			return err
		}
		c.connected.Store(true)
		return nil
	}
	if !ss.handshook {
		return fmt.Errorf("%w: transfer before the handshake", ErrFrame)
	}
	h := f.Transfer
	if end := st.ReplicaEnd(); end != 0 && end != h.Offset {
		s.log.Error().Int64("slave", end).Int64("master", h.Offset).Msg(errOffsetMismatch.Error())
		return errOffsetMismatch
	}
	if h.Epoch != ss.epoch {
		// A master names the next epoch in the chunk that closes the
		// current one (TransferCursor.Chunk), so a chunk below its
		// epoch's start holds bytes of an earlier epoch: that epoch is
		// taken from the master's handshake table first. A stock slave
		// does not, and a new replica whose first chunk closes an epoch
		// never records it (its table then lacks the epoch its first
		// bytes were written in, and as master it could not serve them).
		if h.Offset < h.EpochStartOffset && ss.master != nil {
			if e, ok := ss.master.FindEpochByOffset(h.Offset); ok && e.Epoch < h.Epoch {
				if err := s.epochs.Append(e.Epoch, e.StartOffset); err != nil && !errors.Is(err, ErrEpochOrder) {
					return err
				}
			}
		}
		// ErrEpochOrder is an entry the table holds already (stock
		// ignores appendEntry's false).
		if err := s.epochs.Append(h.Epoch, h.EpochStartOffset); err != nil && !errors.Is(err, ErrEpochOrder) {
			return err
		}
		ss.epoch = h.Epoch
	}
	end := st.ReplicaEnd()
	if len(f.Body) > 0 {
		var err error
		if end, err = st.AppendReplicated(h.Offset, f.Body); err != nil {
			s.log.Error().Err(err).Int64("offset", h.Offset).Int("bytes", len(f.Body)).Msg("autoswitch: cannot append the master's bytes")
			return err
		}
	}
	// Below zero is no gate in this store (every byte dispatched), where
	// stock's reput bounded by -1 dispatches nothing more: 0 holds it.
	confirm := min(max(h.ConfirmOffset, 0), end)
	s.slaveConfirm.Store(confirm)
	s.pushGate(confirm)
	if end > c.reported.Load() {
		return c.report(ss.nc, end)
	}
	return nil
}

// heartbeat repeats the last report every HeartbeatInterval and closes a
// connection on which nothing was read for HousekeepingInterval.
func (c *slaveClient) heartbeat(nc net.Conn, done <-chan struct{}) {
	cfg := &c.s.cfg
	for {
		t := cfg.Clock.NewTimer(cfg.HeartbeatInterval)
		select {
		case <-t.C():
		case <-done:
			t.Stop()
			return
		}
		if idle := cfg.Clock.Now().Sub(time.Unix(0, c.lastRead.Load())); idle > cfg.HousekeepingInterval {
			c.s.log.Warn().Dur("idle", idle).Msg("autoswitch: housekeeping: nothing read from the master; closing")
			nc.Close()
			return
		}
		if !c.connected.Load() {
			continue // still in HANDSHAKE
		}
		if err := c.report(nc, -1); err != nil {
			nc.Close()
			return
		}
	}
}

// report sends the slave's end (reportSlaveOffset, :322-329); -1 repeats
// the last report (a heartbeat), read under wmu so that it never sends an
// offset older than a report that overtook it.
func (c *slaveClient) report(nc net.Conn, off int64) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if off < 0 {
		off = c.reported.Load()
	}
	var b [SlaveReportSize]byte
	_ = nc.SetWriteDeadline(time.Now().Add(c.s.cfg.HousekeepingInterval))
	if _, err := nc.Write(AppendSlaveReport(b[:0], off)); err != nil {
		return err
	}
	c.reported.Store(off)
	c.wroteAt.Store(c.s.cfg.Clock.Now().UnixMilli())
	return nil
}

// write sends b (the handshake) under wmu.
func (c *slaveClient) write(nc net.Conn, b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = nc.SetWriteDeadline(time.Now().Add(c.s.cfg.HousekeepingInterval))
	if _, err := nc.Write(b); err != nil {
		return err
	}
	c.wroteAt.Store(c.s.cfg.Clock.Now().UnixMilli())
	return nil
}
