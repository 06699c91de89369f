package autoswitch

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/store/ha"
)

// The master's side of a slave connection (AutoSwitchHAConnection): a
// reader decodes the slave's handshake and reports, a writer answers the
// handshake with the epoch table and then streams the commitlog in chunks
// that never cross an epoch boundary, each with the confirm offset. The
// writer copies one batch out of the store and then writes it: no lock is
// held across the socket.

// take registers a slave connection accepted on the HA port (ha.Listen)
// and starts its loops. Connections are taken in every role, as stock
// does; one that handshakes while the service is not a master is closed.
func (s *Service) take(nc net.Conn) bool {
	c := newMasterConn(s, nc)
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		nc.Close()
		return false
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.log.Info().Str("slave", c.addr).Msg("autoswitch: slave connected")
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return true
}

type masterConn struct {
	s    *Service
	nc   net.Conn
	addr string

	// Set by the handshake, under s.mu.
	handshook    bool
	slaveID      int64
	asyncLearner bool
	syncFromLast bool

	ack            atomic.Int64 // slaveAckOffset, -1 before the first report
	req            atomic.Int64 // slaveRequestOffset, -1 before it
	from           atomic.Int64 // nextTransferFromWhere, -1 before the start
	lastRead       atomic.Int64 // clock UnixNano
	lastMasterMax  atomic.Int64 // the master's end at the last chunk sent
	lastTransferAt atomic.Int64 // clock UnixNano of the last chunk sent
	sent           ha.ByteRate  // bytes written (haStatus)

	hs        chan struct{} // a handshake to answer
	reqSet    chan struct{} // closed at the first report
	reqOnce   sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

func newMasterConn(s *Service, nc net.Conn) *masterConn {
	c := &masterConn{s: s, nc: nc, addr: nc.RemoteAddr().String(),
		hs: make(chan struct{}, 1), reqSet: make(chan struct{})}
	c.ack.Store(-1)
	c.req.Store(-1)
	c.from.Store(-1)
	c.lastMasterMax.Store(-1)
	c.lastRead.Store(s.cfg.Clock.Now().UnixNano())
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// close ends both loops and forgets the connection; a member of the sync
// state set is proposed for removal (removeConnection, :100-112).
func (c *masterConn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.nc.Close()
		s := c.s
		s.mu.Lock()
		_, mine := s.conns[c]
		delete(s.conns, c)
		if mine && c.handshook && s.role == RoleMaster && c.slaveID != s.localID {
			if eff := s.effectiveSetLocked(); slices.Contains(eff, c.slaveID) && s.ackOfLocked(c.slaveID) < 0 {
				s.proposeLocked(removeID(eff, c.slaveID))
			}
		}
		note := s.refreshLocked()
		s.mu.Unlock()
		note()
		s.log.Info().Str("slave", c.addr).Int64("ack", c.ack.Load()).Msg("autoswitch: slave connection closed")
	})
}

func (c *masterConn) readLoop() {
	defer c.s.wg.Done()
	defer c.close()
	var d SlaveDecoder
	var frames []SlaveFrame
	buf := make([]byte, 4096)
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			c.lastRead.Store(c.s.cfg.Clock.Now().UnixNano())
			var ferr error
			frames, ferr = d.Feed(frames[:0], buf[:n])
			for _, f := range frames {
				if !c.onFrame(f) {
					return
				}
			}
			if ferr != nil {
				c.s.log.Warn().Err(ferr).Str("slave", c.addr).Msg("autoswitch: bad frame from the slave; closing")
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// onFrame takes one frame; false closes the connection.
func (c *masterConn) onFrame(f SlaveFrame) bool {
	s := c.s
	if f.State == StateHandshake {
		s.mu.Lock()
		if s.role != RoleMaster {
			s.mu.Unlock()
			s.log.Info().Str("slave", c.addr).Msg("autoswitch: slave handshake while not master; closing")
			return false
		}
		c.handshook = true
		c.slaveID = f.Handshake.BrokerID
		c.asyncLearner = f.Handshake.AsyncLearner
		c.syncFromLast = f.Handshake.SyncFromLastFile
		s.mu.Unlock()
		s.log.Info().Str("slave", c.addr).Int64("brokerId", f.Handshake.BrokerID).
			Bool("syncFromLastFile", f.Handshake.SyncFromLastFile).Bool("asyncLearner", f.Handshake.AsyncLearner).
			Msg("autoswitch: slave handshake")
		select {
		case c.hs <- struct{}{}:
		default:
		}
		return true
	}
	s.mu.Lock()
	ok := c.handshook
	s.mu.Unlock()
	if !ok {
		s.log.Warn().Str("slave", c.addr).Msg("autoswitch: slave report before its handshake; closing")
		return false
	}
	if c.req.Load() < 0 {
		c.req.Store(f.MaxOffset)
		c.reqOnce.Do(func() { close(c.reqSet) })
	}
	s.onAck(c, f.MaxOffset)
	return true
}

// writeWait paces a writer that found nothing to send: it looks at the
// heartbeat and housekeeping deadlines (which read the clock) at least
// this often (stock allWaitForRunning(100)).
const writeWait = 100 * time.Millisecond

func (c *masterConn) writeLoop() {
	s := c.s
	defer s.wg.Done()
	defer c.close()
	buf := make([]byte, TransferHeaderSize+s.cfg.TransferBatchSize)
	// HANDSHAKE: answer each slave handshake with the epoch table, until
	// the first report starts the transfer.
	for started := false; !started; {
		select {
		case <-c.hs:
			entries := s.epochs.Entries()
			last := int32(-1)
			if len(entries) > 0 {
				last = entries[len(entries)-1].Epoch
			}
			b, err := AppendMasterHandshake(buf[:0], MasterHandshake{MaxOffset: s.st.MaxPhyOffset(), LastEpoch: last, Entries: entries})
			if err != nil {
				s.log.Error().Err(err).Str("slave", c.addr).Msg("autoswitch: cannot build the handshake; closing")
				return
			}
			if !c.write(b) {
				return
			}
		case <-c.reqSet:
			started = true
		case <-c.ctx.Done():
			return
		}
	}
	s.mu.Lock()
	fromLast := c.syncFromLast
	s.mu.Unlock()
	start := TransferStart(c.req.Load(), fromLast, s.st.MinPhyOffset(), s.st.MaxPhyOffset(), s.st.CommitLogFileSize())
	c.from.Store(start)
	s.log.Info().Str("slave", c.addr).Int64("from", start).Int64("requestOffset", c.req.Load()).Msg("autoswitch: transfer starts")

	lastWrite := s.cfg.Clock.Now()
	var cur TransferCursor
	placed := false
	for c.ctx.Err() == nil {
		now := s.cfg.Clock.Now()
		if idle := now.Sub(time.Unix(0, c.lastRead.Load())); idle > s.cfg.HousekeepingInterval {
			s.log.Warn().Str("slave", c.addr).Dur("idle", idle).Msg("autoswitch: housekeeping: nothing read from the slave; closing")
			return
		}
		if !placed {
			// The epoch that holds the start (:687-694); none yet: only
			// heartbeats until one does.
			cur, placed = NewTransferCursor(s.epochs, start)
		}
		confirm := s.ConfirmOffset()
		if confirm < 0 {
			// The service left the master role (it closes the connections
			// once its lock is released): nothing more goes out, least of
			// all a confirm offset of -1, which no slave may take as one.
			return
		}
		sent := false
		if placed {
			n, _ := s.st.ReadCommitLog(cur.Next, buf[TransferHeaderSize:])
			if n > 0 {
				max := s.st.MaxPhyOffset()
				h, ok := cur.Chunk(s.epochs, int32(n), confirm)
				if !ok {
					s.log.Error().Int32("epoch", cur.Epoch).Msg("autoswitch: no epoch after the current one")
				} else {
					c.lastMasterMax.Store(max)
					c.lastTransferAt.Store(now.UnixNano())
					b, _ := AppendTransferHeader(buf[:0], h)
					// Moved before the write, as stock moves
					// nextTransferFromWhere: the slave may ack the chunk
					// before this goroutine runs again.
					c.from.Store(cur.Next)
					if !c.write(buf[:len(b)+int(h.BodySize)]) {
						return
					}
					lastWrite = s.cfg.Clock.Now()
					sent = true
				}
			} else if cur.Next >= s.st.MaxPhyOffset() {
				// Nothing left to send (not an offset the commitlog no
				// longer holds, which this slave never gets past).
				s.markCaughtUp(c)
			}
		}
		if sent {
			continue
		}
		if now.Sub(lastWrite) > s.cfg.HeartbeatInterval {
			// Unplaced, the cursor is at the start with epoch -1: the
			// heartbeat names the first epoch, as stock's does.
			if h, ok := cur.Heartbeat(s.epochs, confirm); ok {
				b, _ := AppendTransferHeader(buf[:0], h)
				if !c.write(b) {
					return
				}
				lastWrite = s.cfg.Clock.Now()
			}
		}
		c.waitData(cur.Next)
	}
}

// waitData waits up to writeWait for bytes at next: the dispatch is the
// wake-up, unless the store's gate holds it back (allAckInSyncStateSet),
// where a SYNC send wakes the writers instead.
func (c *masterConn) waitData(next int64) {
	s := c.s
	if s.gated.Load() {
		ch := s.wakeChan()
		t := time.NewTimer(writeWait)
		select {
		case <-ch:
		case <-t.C:
		case <-c.ctx.Done():
		}
		t.Stop()
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, writeWait)
	if err := s.st.WaitDispatched(ctx, next+1); err != nil && ctx.Err() == nil {
		<-ctx.Done() // the store is closing: pace the loop
	}
	cancel()
}

// write sends b whole; a slave that takes none of it for a housekeeping
// interval is given up.
func (c *masterConn) write(b []byte) bool {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.HousekeepingInterval))
	n, err := c.nc.Write(b)
	c.sent.Add(c.s.cfg.Clock.Now(), n)
	if err != nil {
		if c.ctx.Err() == nil {
			c.s.log.Info().Err(err).Str("slave", c.addr).Msg("autoswitch: write to the slave failed")
		}
		return false
	}
	return true
}

func removeID(ids []int64, id int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, v := range ids {
		if v != id {
			out = append(out, v)
		}
	}
	return out
}
