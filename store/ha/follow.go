package ha

import (
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
)

// Follower is the part of a slave client that follows its master's HA
// address, shared by the classic Client and store/ha/autoswitch's slave:
// it runs one session per connection, pauses ReconnectDelay (on the
// clock) after each, and on an address change closes the current
// session's socket and connects to the new address at once.
type Follower struct {
	clk     clock.Clock
	delay   time.Duration
	log     zerolog.Logger
	session func(addr string) error

	mu      sync.Mutex
	addr    string
	nc      net.Conn // the current session's socket
	started bool
	stopped bool
	changed chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewFollower returns a follower that runs session(addr) for each
// connection attempt; session dials, calls Attach, and returns when the
// connection ends.
func NewFollower(clk clock.Clock, reconnectDelay time.Duration, log zerolog.Logger, session func(addr string) error) *Follower {
	return &Follower{clk: clk, delay: reconnectDelay, log: log, session: session,
		changed: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Start runs the follower until Close; it connects once an address is
// set.
func (f *Follower) Start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.stopped {
		return
	}
	f.started = true
	f.wg.Add(1)
	go f.run()
}

// SetAddr sets the address to follow ("" for none) and returns the old
// one and whether it changed; a change closes the current session.
func (f *Follower) SetAddr(addr string) (string, bool) {
	f.mu.Lock()
	old := f.addr
	if addr == old {
		f.mu.Unlock()
		return old, false
	}
	f.addr = addr
	if f.nc != nil {
		f.nc.Close()
	}
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
	return old, true
}

// Addr is the address followed.
func (f *Follower) Addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addr
}

// Attach makes nc, dialled to addr, the session's socket, which SetAddr
// and Close then close. It is false, with nc closed, when the follower
// stopped or the address moved since the dial.
func (f *Follower) Attach(addr string, nc net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || f.addr != addr {
		nc.Close()
		return false
	}
	f.nc = nc
	return true
}

// Detach forgets the session's socket (the session closes it).
func (f *Follower) Detach() {
	f.mu.Lock()
	f.nc = nil
	f.mu.Unlock()
}

// Close stops the follower, closes the session's socket and waits for
// the session to end.
func (f *Follower) Close() {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.stopped = true
	close(f.stop)
	if f.nc != nil {
		f.nc.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Follower) run() {
	defer f.wg.Done()
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		addr := f.Addr()
		if addr == "" {
			select {
			case <-f.changed:
			case <-f.stop:
				return
			}
			continue
		}
		// Drain a change signal older than this attempt.
		select {
		case <-f.changed:
		default:
		}
		if err := f.session(addr); err != nil {
			f.log.Info().Err(err).Str("master", addr).Dur("retryIn", f.delay).Msg("ha: session with the master ended")
		}
		t := f.clk.NewTimer(f.delay)
		select {
		case <-t.C():
		case <-f.changed:
		case <-f.stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}
