package timer

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
)

// recentDeliveries is how many deliveries Deliveries keeps for display.
const recentDeliveries = 50

// observe records one delivery (not a roll) of p stored at nowMs.
func (t *TimerStore) observe(p *prepared, nowMs int64) {
	t.obs.Add(histo.Delivery{Kind: "timer", Topic: p.realTopic, MsgID: p.props.Get(message.PropUniqKey), DueMs: p.due, AtMs: nowMs})
}

// SetLatencyBoundsS are the buckets of rocketmq_delay_message_latency
// (DefaultStoreMetricsManager.getMetricsView): seconds, 1 min to 3 days.
var SetLatencyBoundsS = []int64{60, 10 * 60, 60 * 60, 12 * 60 * 60, 24 * 60 * 60, 3 * 24 * 60 * 60}

// lastRead is when the enqueue last read a timer-queue message and that
// message's store time (TimerMessageStore lastEnqueueButExpiredTime and
// lastEnqueueButExpiredStoreTime).
type lastRead struct{ atMs, storeMs atomic.Int64 }

// observeRead records a timer-queue message read into the wheel at nowMs,
// as 5.x's enqueue does for each one it reads: its store time (for
// EnqueueLatencyMs) and, by real topic, how far ahead of its birth it was
// set to be delivered (timerMessageSetLatency, in seconds).
func (t *TimerStore) observeRead(r *record, nowMs int64) {
	t.lastRead.storeMs.Store(r.ext.StoreTimestamp)
	t.lastRead.atMs.Store(nowMs)
	topic := r.props.Get(message.PropRealTopic)
	if topic == "" {
		return
	}
	h, ok := t.setLatency.Lookup(topic)
	if !ok {
		h = t.setLatency.Get(strings.Clone(topic)) // topic may point into the read buffer
	}
	h.Observe((r.due - r.ext.BornTimestamp) / 1000)
}

// SetLatency calls f with each real topic's histogram of how far ahead of
// their birth its timer messages were set (s).
func (t *TimerStore) SetLatency(f func(topic string, h *histo.Histogram)) { t.setLatency.Each(f) }

// Deliveries is the lateness of delivered timer messages (ms past due) and
// the last ones delivered.
func (t *TimerStore) Deliveries() *histo.Deliveries { return t.obs }

// PendingByDue counts the wheel entries not yet processed by how far ahead
// of now their slot is due: counts[i] holds those due within bounds[i] (and
// after bounds[i-1]); counts[len(bounds)] the rest. An entry already due
// counts in the first bucket. A message due beyond the roll window counts
// where its roll entry sits. The scan takes the store lock for the span of
// the slots in memory.
func (t *TimerStore) PendingByDue(bounds []time.Duration) []int64 {
	counts := make([]int64, len(bounds)+1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wh == nil || t.closed {
		return counts
	}
	now := t.nowMs()
	t.wh.forEachLive(func(slotTime int64) {
		if slotTime < t.readTime && (t.open == nil || t.open.t != slotTime) {
			return
		}
		s, live := t.wh.get(slotTime)
		if !live {
			return
		}
		n := int64(s.num)
		if t.open != nil && t.open.t == slotTime {
			n -= t.open.processed
		}
		if n <= 0 {
			return
		}
		ahead := time.Duration(slotTime-now) * time.Millisecond
		i := 0
		for i < len(bounds) && ahead > bounds[i] {
			i++
		}
		counts[i] += n
	})
	return counts
}
