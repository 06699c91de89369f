package controller

import (
	"math"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
)

// The broker live table: 5.3.3 DefaultBrokerHeartbeatManager. It is each
// controller node's own view (brokers heartbeat every controller they
// know), never replicated, and it only steers the leader's decisions:
// which replicas may join a sync state set, who may be elected, when a
// master counts as gone.

// DefaultBrokerHeartbeatTimeout is BrokerHeartbeatManager
// DEFAULT_BROKER_CHANNEL_EXPIRED_TIME, the timeout of a heartbeat that
// names none.
const DefaultBrokerHeartbeatTimeout = 10 * time.Second

type brokerIdentity struct {
	Cluster, BrokerName string
	BrokerID            int64
}

// brokerLive is BrokerLiveInfo.
type brokerLive struct {
	Addr             string
	BrokerID         int64
	LastUpdate       time.Time
	Timeout          time.Duration
	ConnID           uint64
	Epoch            int32
	MaxOffset        int64
	ConfirmOffset    int64
	ElectionPriority int32
}

type heartbeats struct {
	clock clock.Clock
	mu    sync.Mutex
	live  map[brokerIdentity]*brokerLive
}

func newHeartbeats(c clock.Clock) *heartbeats {
	return &heartbeats{clock: c, live: map[brokerIdentity]*brokerLive{}}
}

// heartbeat records one BROKER_HEARTBEAT (onBrokerHeartbeat): absent
// numbers take the stock defaults (-1, 10 s, Integer.MAX_VALUE), and the
// epoch and offsets only move forward.
func (h *heartbeats) heartbeat(cluster, brokerName, addr string, id int64, timeoutMs *int64, connID uint64,
	epoch *int32, maxOffset, confirmOffset *int64, priority *int32) {
	realEpoch, realMax, realConfirm := int32(-1), int64(-1), int64(-1)
	timeout, prio := DefaultBrokerHeartbeatTimeout, int32(math.MaxInt32)
	if epoch != nil {
		realEpoch = *epoch
	}
	if maxOffset != nil {
		realMax = *maxOffset
	}
	if confirmOffset != nil {
		realConfirm = *confirmOffset
	}
	if timeoutMs != nil {
		timeout = time.Duration(*timeoutMs) * time.Millisecond
	}
	if priority != nil {
		prio = *priority
	}
	now := h.clock.Now()
	k := brokerIdentity{cluster, brokerName, id}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.live[k]
	if prev == nil {
		h.live[k] = &brokerLive{Addr: addr, BrokerID: id, LastUpdate: now, Timeout: timeout, ConnID: connID,
			Epoch: realEpoch, MaxOffset: realMax, ConfirmOffset: realConfirm, ElectionPriority: prio}
		return
	}
	prev.LastUpdate, prev.Timeout, prev.ElectionPriority = now, timeout, prio
	prev.ConnID = connID
	if realEpoch > prev.Epoch || realEpoch == prev.Epoch && realMax > prev.MaxOffset {
		prev.Epoch, prev.MaxOffset, prev.ConfirmOffset = realEpoch, realMax, realConfirm
	}
}

// alive is isBrokerActive: heard from within its timeout.
func (h *heartbeats) alive(cluster, brokerName string, id int64) bool {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.live[brokerIdentity{cluster, brokerName, id}]
	return l != nil && !l.LastUpdate.Add(l.Timeout).Before(now)
}

// info returns a copy of a broker's live info (nil when unknown).
func (h *heartbeats) info(cluster, brokerName string, id int64) *brokerLive {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.live[brokerIdentity{cluster, brokerName, id}]; l != nil {
		c := *l
		return &c
	}
	return nil
}

// expire is scanNotActiveBroker: it drops every broker silent past its
// timeout and returns them, with the connections they used, for the
// inactive-broker handling.
func (h *heartbeats) expire() []expired {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []expired
	for k, l := range h.live {
		if now.Sub(l.LastUpdate) > l.Timeout {
			delete(h.live, k)
			out = append(out, expired{brokerIdentity: k, ConnID: l.ConnID})
		}
	}
	return out
}

// connClosed is onBrokerChannelClose: the broker whose heartbeats came
// over the connection is dropped at once.
func (h *heartbeats) connClosed(connID uint64) []expired {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []expired
	for k, l := range h.live {
		if l.ConnID == connID {
			delete(h.live, k)
			out = append(out, expired{brokerIdentity: k, ConnID: connID})
		}
	}
	return out
}

type expired struct {
	brokerIdentity
	ConnID uint64
}
