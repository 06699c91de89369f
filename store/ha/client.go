package ha

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
)

// Sink is the slave's store as the HA client writes it (*store.Store).
type Sink interface {
	// ReplicaEnd is where the next replicated bytes must start.
	ReplicaEnd() int64
	// AppendReplicated writes the master's bytes read at off and returns
	// the new ReplicaEnd.
	AppendReplicated(off int64, b []byte) (int64, error)
}

// ClientConfig is the slave side's settings.
type ClientConfig struct {
	// HeartbeatInterval (haSendHeartbeatInterval, 5 s): the slave reports
	// its offset at least this often.
	HeartbeatInterval time.Duration
	// HousekeepingInterval (haHousekeepingInterval, 20 s): a connection on
	// which nothing was read for this long is closed (5.x DefaultHAClient;
	// 4.9.8 timed its own writes, which never stop).
	HousekeepingInterval time.Duration
	// ReconnectDelay is the pause after a failed connection or a closed
	// session before the next attempt (stock: 5 s).
	ReconnectDelay time.Duration
	// DialTimeout bounds a connection attempt (stock: 3 s).
	DialTimeout time.Duration
	// Clock times the reports, housekeeping and ReconnectDelay (nil: real).
	Clock  clock.Clock
	Logger zerolog.Logger // the caller names the component
}

func (c *ClientConfig) normalize() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = 20 * time.Second
	}
	if c.ReconnectDelay <= 0 {
		c.ReconnectDelay = 5 * time.Second
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 3 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
}

// Client is the slave side (HAClient): it connects to the master's HA
// address, reports its commitlog end and appends what the master streams.
type Client struct {
	sink Sink
	cfg  ClientConfig
	log  zerolog.Logger

	follow   *Follower
	wmu      sync.Mutex // serialises reports
	sessions atomic.Int64

	connected atomic.Bool
	reported  atomic.Int64
	// lastRead and lastWrite are 5.x DefaultHAClient's lastReadTimestamp
	// and lastWriteTimestamp (clock Unix ms): set when the client is made,
	// lastRead on connecting and on every read and 0 once a session ends,
	// lastWrite on every report.
	lastRead  atomic.Int64
	lastWrite atomic.Int64
	received  ByteRate
}

// NewClient returns a slave client writing to sink; Start runs it.
func NewClient(sink Sink, cfg ClientConfig) *Client {
	cfg.normalize()
	c := &Client{sink: sink, cfg: cfg, log: cfg.Logger}
	c.follow = NewFollower(cfg.Clock, cfg.ReconnectDelay, cfg.Logger, c.session)
	now := cfg.Clock.Now().UnixMilli()
	c.lastRead.Store(now)
	c.lastWrite.Store(now)
	return c
}

// Start runs the client until Close; it connects once a master address is
// set.
func (c *Client) Start() { c.follow.Start() }

// SetMasterAddr sets the master's HA address (host:port; "" for none).
// A change closes the session with the old master at once; the client
// then connects to the new one without waiting for ReconnectDelay.
func (c *Client) SetMasterAddr(addr string) {
	if old, changed := c.follow.SetAddr(addr); changed {
		c.log.Info().Str("old", old).Str("new", addr).Msg("ha: master address updated")
	}
}

// MasterAddr is the master's HA address the client follows.
func (c *Client) MasterAddr() string { return c.follow.Addr() }

// ClientStats is what tooling shows of the slave side.
type ClientStats struct {
	MasterAddr     string
	Connected      bool
	ReportedOffset int64 // the last offset reported to the master
	Sessions       int64 // connections made since Start
	// LastReadTimestamp, LastWriteTimestamp (Unix ms) and
	// TransferredByteInSecond are 5.x HAClientRuntimeInfo's figures.
	LastReadTimestamp       int64
	LastWriteTimestamp      int64
	TransferredByteInSecond int64
}

// Stats reads the slave side's state.
func (c *Client) Stats() ClientStats {
	return ClientStats{MasterAddr: c.MasterAddr(), Connected: c.connected.Load(),
		ReportedOffset: c.reported.Load(), Sessions: c.sessions.Load(),
		LastReadTimestamp: c.lastRead.Load(), LastWriteTimestamp: c.lastWrite.Load(),
		TransferredByteInSecond: c.received.PerSecond(c.cfg.Clock.Now())}
}

// Close stops the client and closes its connection.
func (c *Client) Close() { c.follow.Close() }

// errOffsetMismatch is the stock slave's "master pushed offset not equal
// the max phy offset in slave": the session is closed and made again, from
// the slave's own end.
var errOffsetMismatch = errors.New("ha: master pushed offset not equal the max phy offset in slave")

// session runs one connection: report, then read and append until an
// error.
func (c *Client) session(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, c.cfg.DialTimeout)
	if err != nil {
		return err
	}
	if !c.follow.Attach(addr, nc) {
		return nil
	}
	c.sessions.Add(1)
	c.connected.Store(true)
	c.lastRead.Store(c.cfg.Clock.Now().UnixMilli())
	defer func() {
		c.connected.Store(false)
		c.lastRead.Store(0)
		c.follow.Detach()
		nc.Close()
	}()
	var lastRead atomic.Int64
	lastRead.Store(c.cfg.Clock.Now().UnixNano())
	reported := c.sink.ReplicaEnd()
	// The first report goes at once (4.9.8 waited a heartbeat interval
	// first; the master streams nothing before it).
	if err := c.report(nc, reported); err != nil {
		return err
	}
	c.log.Info().Str("master", addr).Int64("offset", reported).Msg("ha: connected to the master")

	done := make(chan struct{})
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		c.heartbeat(nc, done, &lastRead)
	}()
	defer func() {
		close(done)
		nc.Close()
		hb.Wait()
	}()

	fr := frameReader{r: bufio.NewReaderSize(nc, 64<<10)}
	for {
		off, size, err := fr.header()
		if err != nil {
			return err
		}
		now := c.cfg.Clock.Now()
		lastRead.Store(now.UnixNano())
		c.lastRead.Store(now.UnixMilli())
		local := c.sink.ReplicaEnd()
		if local != 0 && local != off {
			c.log.Error().Int64("slave", local).Int64("master", off).Msg(errOffsetMismatch.Error())
			return errOffsetMismatch
		}
		if size == 0 {
			continue // a heartbeat
		}
		body, err := fr.readBody(size)
		if err != nil {
			return err
		}
		now = c.cfg.Clock.Now()
		lastRead.Store(now.UnixNano())
		c.lastRead.Store(now.UnixMilli())
		c.received.Add(now, int(size))
		end, err := c.sink.AppendReplicated(off, body)
		if err != nil {
			c.log.Error().Err(err).Int64("offset", off).Int("bytes", len(body)).Msg("ha: cannot append the master's bytes")
			return err
		}
		if end > reported {
			reported = end
			if err := c.report(nc, end); err != nil {
				return err
			}
		}
	}
}

// heartbeat reports the last reported offset every HeartbeatInterval and
// closes a connection on which nothing was read for HousekeepingInterval.
func (c *Client) heartbeat(nc net.Conn, done <-chan struct{}, lastRead *atomic.Int64) {
	for {
		t := c.cfg.Clock.NewTimer(c.cfg.HeartbeatInterval)
		select {
		case <-t.C():
		case <-done:
			t.Stop()
			return
		}
		now := c.cfg.Clock.Now()
		if idle := now.Sub(time.Unix(0, lastRead.Load())); idle > c.cfg.HousekeepingInterval {
			c.log.Warn().Dur("idle", idle).Msg("ha: housekeeping: nothing read from the master; closing")
			nc.Close()
			return
		}
		if err := c.report(nc, -1); err != nil {
			nc.Close()
			return
		}
	}
}

// report sends off to the master; -1 repeats the last report (a
// heartbeat). The last report is read under wmu: read before it, a
// heartbeat could send an offset older than a report that overtook it,
// and the master's ack for this slave went backwards (it made
// TestReplicateFromStartBytesAndQueuesIdentical fail once in 96 runs).
func (c *Client) report(nc net.Conn, off int64) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if off < 0 {
		off = c.reported.Load()
	}
	var b [reportSize]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	_ = nc.SetWriteDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
	if _, err := nc.Write(b[:]); err != nil {
		return err
	}
	c.reported.Store(off)
	c.lastWrite.Store(c.cfg.Clock.Now().UnixMilli())
	return nil
}
