package transaction

import "github.com/rmqio/rmq/message"

// HalfBacklog is the number of half messages the check-back walk has not
// passed yet: undecided ones and decided ones whose op record the walk has
// still to meet (stock rocketmq_half_messages counts the same span).
func (s *Service) HalfBacklog() int64 {
	end := s.store.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID)
	return max(end-s.committedOffset(message.TopicTransHalf), 0)
}
