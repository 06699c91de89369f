package transaction

import (
	"sync/atomic"

	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
)

// HalfBacklog is the number of half messages the check-back walk has not
// passed yet: undecided ones and decided ones whose op record the walk has
// still to meet (stock rocketmq_half_messages counts the same span).
func (s *Service) HalfBacklog() int64 {
	end := s.store.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID)
	return max(end-s.committedOffset(message.TopicTransHalf), 0)
}

// FinishLatencyBounds are the buckets of rocketmq_finish_message_latency
// (BrokerMetricsManager commitLatencyBuckets): seconds from 5 s to a day.
// 5.3.3 records the latency in seconds though the instrument's unit is
// "ms"; so does rmq.
var FinishLatencyBounds = []int64{5, 60, 10 * 60, 60 * 60, 12 * 60 * 60, 24 * 60 * 60}

// EndCounts are the transactions of one real topic ended by END_TRANSACTION
// (EndTransactionProcessor: commitMessagesTotal, rollBackMessagesTotal,
// transactionFinishLatency).
type EndCounts struct {
	Commits, Rollbacks atomic.Int64
	// Latency is the age of each committed half message (s since born).
	Latency *histo.Histogram
}

// ends counts END_TRANSACTION outcomes by real topic.
type ends struct {
	f *histo.Family[string, *EndCounts]
}

func newEnds() ends {
	return ends{histo.NewFamily[string](func() *EndCounts { return &EndCounts{Latency: histo.New(FinishLatencyBounds...)} })}
}

// record counts one decision applied to a half message of topic born
// ageMs ago: as stock, a commit also records its latency, a rollback not.
func (e ends) record(topic string, commit bool, ageMs int64) {
	c := e.f.Get(topic)
	if !commit {
		c.Rollbacks.Add(1)
		return
	}
	c.Commits.Add(1)
	c.Latency.Observe(ageMs / 1000)
}

// Ends calls f with the END_TRANSACTION counts of every real topic.
func (s *Service) Ends(f func(topic string, c *EndCounts)) { s.ends.f.Each(f) }
