package timer

import (
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
