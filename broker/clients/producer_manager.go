package clients

import (
	"github.com/rmqio/rmq/internal/clock"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rmqio/rmq/remoting"
)

// ProducerManager tracks producer groups from heartbeats (J4 ProducerManager):
// the connections of each group, for transaction checks and admin listings,
// and the latest connection of each client id, for reply messages.
type ProducerManager struct {
	clock clock.Clock
	rr    atomic.Uint64

	mu       sync.Mutex
	groups   map[string]map[*remoting.Conn]*ClientChannel
	byClient map[string]*remoting.Conn
}

// NewProducerManager returns an empty manager on clk (nil: the wall clock).
func NewProducerManager(clk clock.Clock) *ProducerManager {
	return &ProducerManager{
		clock:    orReal(clk),
		groups:   make(map[string]map[*remoting.Conn]*ClientChannel),
		byClient: make(map[string]*remoting.Conn),
	}
}

// Register records ch as a member of group and refreshes its heartbeat time.
func (m *ProducerManager) Register(group string, ch ClientChannel) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	chans := m.groups[group]
	if chans == nil {
		chans = make(map[*remoting.Conn]*ClientChannel)
		m.groups[group] = chans
	}
	if old := chans[ch.Conn]; old != nil {
		old.LastUpdate = now
		old.ClientID, old.Language, old.Version = ch.ClientID, ch.Language, ch.Version
	} else {
		ch.LastUpdate = now
		chans[ch.Conn] = &ch
	}
	m.byClient[ch.ClientID] = ch.Conn
}

// Unregister removes conn from group (UNREGISTER_CLIENT); an emptied group is
// dropped.
func (m *ProducerManager) Unregister(group string, conn *remoting.Conn, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	chans := m.groups[group]
	if chans == nil {
		return
	}
	delete(chans, conn)
	if m.byClient[clientID] == conn {
		delete(m.byClient, clientID)
	}
	if len(chans) == 0 {
		delete(m.groups, group)
	}
}

// ConnClosed drops conn from every group.
func (m *ProducerManager) ConnClosed(conn *remoting.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(func(c *remoting.Conn, _ *ClientChannel) bool { return c == conn })
}

// ScanExpired drops every channel whose last heartbeat is older than the
// channel expiry and returns the dropped connections, each once.
func (m *ProducerManager) ScanExpired() []*remoting.Conn {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropLocked(func(_ *remoting.Conn, ch *ClientChannel) bool {
		return now.Sub(ch.LastUpdate) > channelExpiredTimeout
	})
}

// dropLocked removes the channels matching drop from every group. m.mu must be held.
func (m *ProducerManager) dropLocked(drop func(*remoting.Conn, *ClientChannel) bool) []*remoting.Conn {
	var out []*remoting.Conn
	seen := make(map[*remoting.Conn]struct{})
	for group, chans := range m.groups {
		for c, ch := range chans {
			if !drop(c, ch) {
				continue
			}
			delete(chans, c)
			if m.byClient[ch.ClientID] == c {
				delete(m.byClient, ch.ClientID)
			}
			if _, dup := seen[c]; !dup {
				seen[c] = struct{}{}
				out = append(out, c)
			}
		}
		if len(chans) == 0 {
			delete(m.groups, group)
		}
	}
	return out
}

// Connection builds the GET_PRODUCER_CONNECTION_LIST body of group; false if
// the group has no connection.
func (m *ProducerManager) Connection(group string) (*remoting.ProducerConnection, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	chans := m.groups[group]
	if chans == nil {
		return nil, false
	}
	pc := &remoting.ProducerConnection{ConnectionSet: make([]*remoting.Connection, 0, len(chans))}
	for _, ch := range chans {
		pc.ConnectionSet = append(pc.ConnectionSet, ch.connection())
	}
	sort.Slice(pc.ConnectionSet, func(i, j int) bool { return pc.ConnectionSet[i].ClientID < pc.ConnectionSet[j].ClientID })
	return pc, true
}

// AvailableConn picks an open connection of group round robin (transaction
// state checks go to any producer of the group); nil if none.
func (m *ProducerManager) AvailableConn(group string) *remoting.Conn {
	m.mu.Lock()
	conns := make([]*remoting.Conn, 0, len(m.groups[group]))
	for c := range m.groups[group] {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	if len(conns) == 0 {
		return nil
	}
	// Map order is random; sort so round robin visits each member in turn.
	sort.Slice(conns, func(i, j int) bool { return conns[i].ID() < conns[j].ID() })
	start := int(m.rr.Add(1) % uint64(len(conns)))
	for i := range conns {
		if c := conns[(start+i)%len(conns)]; !c.Closed() {
			return c
		}
	}
	return nil
}

// FindConn returns the connection of the latest heartbeat of clientID, or nil.
func (m *ProducerManager) FindConn(clientID string) *remoting.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byClient[clientID]
}

// Groups lists the producer groups with a connection, sorted.
func (m *ProducerManager) Groups() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.groups))
	for g := range m.groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}
