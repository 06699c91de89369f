package clients

import (
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// RebalanceLockManager holds the queue locks of orderly consumers (J4
// RebalanceLockManager). A lock belongs to one client id per (group, queue);
// it lapses when not renewed within lockMaxLiveTime, after which any client of
// the group may take it. Orderly clients renew every 20 s.
type RebalanceLockManager struct {
	clock clock.Clock

	mu    sync.Mutex
	table map[string]map[mqKey]*lockEntry
}

type mqKey struct {
	topic      string
	brokerName string
	queueID    int32
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

func (e *lockEntry) expired(now time.Time) bool { return now.Sub(e.lastUpdate) > lockMaxLiveTime }

// NewRebalanceLockManager returns an empty manager on clk (nil: the wall clock).
func NewRebalanceLockManager(clk clock.Clock) *RebalanceLockManager {
	return &RebalanceLockManager{clock: orReal(clk), table: make(map[string]map[mqKey]*lockEntry)}
}

// TryLockBatch locks or renews each queue for clientID and returns those it
// now holds, in request order without duplicates. A queue held by another
// client is granted only once that lock has lapsed.
func (m *RebalanceLockManager) TryLockBatch(group string, mqs []*remoting.MessageQueue, clientID string) []*remoting.MessageQueue {
	now := m.clock.Now()
	locked := make([]*remoting.MessageQueue, 0, len(mqs))
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := m.table[group]
	if entries == nil {
		entries = make(map[mqKey]*lockEntry, len(mqs))
		m.table[group] = entries
	}
	seen := make(map[mqKey]struct{}, len(mqs))
	for _, mq := range mqs {
		if mq == nil {
			continue
		}
		k := mqKey{topic: mq.Topic, brokerName: mq.BrokerName, queueID: mq.QueueID}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		e := entries[k]
		switch {
		case e == nil:
			entries[k] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID || e.expired(now):
			e.clientID, e.lastUpdate = clientID, now
		default:
			continue
		}
		locked = append(locked, mq)
	}
	return locked
}

// UnlockBatch releases the queues clientID holds; locks of other clients stay.
func (m *RebalanceLockManager) UnlockBatch(group string, mqs []*remoting.MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := m.table[group]
	for _, mq := range mqs {
		if mq == nil {
			continue
		}
		k := mqKey{topic: mq.Topic, brokerName: mq.BrokerName, queueID: mq.QueueID}
		if e := entries[k]; e != nil && e.clientID == clientID {
			delete(entries, k)
		}
	}
	if entries != nil && len(entries) == 0 {
		delete(m.table, group)
	}
}

// Holder returns the client id holding a live lock on mq in group.
func (m *RebalanceLockManager) Holder(group string, mq *remoting.MessageQueue) (string, bool) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.table[group][mqKey{topic: mq.Topic, brokerName: mq.BrokerName, queueID: mq.QueueID}]
	if e == nil || e.expired(now) {
		return "", false
	}
	return e.clientID, true
}
