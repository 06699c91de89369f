package schedule

import (
	"strconv"

	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
)

// recentDeliveries is how many deliveries Deliveries keeps for display.
const recentDeliveries = 50

func newDeliveries() *histo.Deliveries { return histo.NewDeliveries(recentDeliveries) }

// observe records one delivery of level due at dueMs, stored at nowMs.
// props is the record's properties text.
func (s *Service) observe(level int, props message.Props, dueMs, nowMs int64) {
	s.obs.Add(histo.Delivery{
		Kind: "level " + strconv.Itoa(level), Topic: props.Get(message.PropRealTopic),
		MsgID: props.Get(message.PropUniqKey), DueMs: dueMs, AtMs: nowMs,
	})
}

// Deliveries is the lateness of delivered messages (ms past due) and the
// last ones delivered.
func (s *Service) Deliveries() *histo.Deliveries { return s.obs }

// PendingByLevel is, per level (1-based), the messages stored on the
// schedule topic not yet delivered.
func (s *Service) PendingByLevel() []int64 {
	out := make([]int64, len(s.opts.Levels)+1)
	for level := 1; level <= len(s.opts.Levels); level++ {
		hi := s.opts.Store.MaxOffsetInQueue(message.TopicSchedule, int32(level-1))
		out[level] = max(hi-s.offset(level), 0)
	}
	return out[1:]
}

// Levels are the service's delay levels.
func (s *Service) Levels() Levels { return s.opts.Levels }
