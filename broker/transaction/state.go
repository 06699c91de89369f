package transaction

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// txScanBytes bounds the bytes of one store read of the transaction queues
// (always at least one record).
const txScanBytes = 256 << 10

// load rebuilds the decided set from the op entries at or after the
// committed op offset: each entry's chain stays decided until the walk
// releases it again.
func (s *Service) load() error {
	s.opRead = s.committedOffset(message.TopicTransOpHalf)
	if err := s.readOps(); err != nil {
		return fmt.Errorf("%w: %w", ErrTransactionService, err)
	}
	s.loadCopies()
	if n := len(s.ops); n > 0 {
		s.log.Info().Int("opEntries", n).Int("decidedChains", len(s.decided)).Int64("opOffset", s.ops[0].offset).
			Msg("transaction: decisions reloaded from the op queue")
	}
	return nil
}

// committedOffset is the walk's progress on topic (queue 0): the offset of
// CID_RMQ_SYS_TRANS, the queue's minimum when there is none, clamped into
// the queue.
func (s *Service) committedOffset(topic string) int64 {
	st := s.store
	lo, hi := st.MinOffsetInQueue(topic, txHalfQueueID), st.MaxOffsetInQueue(topic, txHalfQueueID)
	off, ok := s.offsets.Query(txSysGroup, topic, txHalfQueueID)
	if !ok || off < lo {
		return lo
	}
	return min(off, hi)
}

// readOps appends the op entries from opRead to the end of the op queue to
// ops; a chain they decide that is not in the decided set yet joins it, dated
// by the op record's store time.
func (s *Service) readOps() error {
	end := s.store.MaxOffsetInQueue(message.TopicTransOpHalf, txHalfQueueID)
	var entries []txOpEntry
	var times []int64
	next := s.scan(message.TopicTransOpHalf, s.opRead, end, func(m *message.MessageExt) bool {
		entries = append(entries, txOpEntry{offset: m.QueueOffset, origin: s.opOrigin(m)})
		times = append(times, m.StoreTimestamp)
		return true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range entries {
		if e.origin >= 0 && s.decided[e.origin] == nil {
			s.decided[e.origin] = &txDecision{atMs: times[i], fence: -1}
			delete(s.copies, e.origin)
		}
	}
	s.ops = append(s.ops, entries...)
	s.opRead = next
	return nil
}

// loadCopies rebuilds the latest copy of each chain from the half records
// the walk has not passed yet; copies it passed tell nothing (see pending).
func (s *Service) loadCopies() {
	from := s.committedOffset(message.TopicTransHalf)
	end := s.store.MaxOffsetInQueue(message.TopicTransHalf, txHalfQueueID)
	found := make(map[int64]int64)
	s.scan(message.TopicTransHalf, from, end, func(m *message.MessageExt) bool {
		if origin := txOrigin(m); origin != m.QueueOffset {
			found[origin] = m.QueueOffset // in queue order: the last one wins
		}
		return true
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for origin, q := range found {
		if s.decided[origin] == nil {
			s.copies[origin] = q
		}
	}
}

// opOrigin is the chain origin of the half message an op record decided, or
// -1 for a record that decides nothing (foreign tag, unparsable body).
func (s *Service) opOrigin(op *message.MessageExt) int64 {
	if op.Properties[message.PropTags] != txOpRemoveTag {
		s.log.Error().Int64("opOffset", op.QueueOffset).Str("tags", op.Properties[message.PropTags]).Msg("transaction: op record with an unknown tag ignored")
		return -1
	}
	q, err := strconv.ParseInt(strings.TrimSpace(string(op.Body)), 10, 64)
	if err != nil || q < 0 {
		s.log.Error().Int64("opOffset", op.QueueOffset).Str("body", string(op.Body)).Msg("transaction: op record without a half offset ignored")
		return -1
	}
	half, err := s.halfAt(q)
	if err != nil {
		return q // the half message is gone: it can only be its own origin
	}
	return txOrigin(half)
}

// halfAt reads the half message at queue offset q.
func (s *Service) halfAt(q int64) (*message.MessageExt, error) {
	phy, ok := s.store.CommitLogOffsetOf(message.TopicTransHalf, txHalfQueueID, q)
	if !ok {
		return nil, fmt.Errorf("half offset %d: %w", q, store.ErrNotFound)
	}
	raw, err := s.store.LookMessageByOffset(phy)
	if err != nil {
		return nil, err
	}
	return message.DecodeRecord(raw)
}

// txOrigin is the chain origin of a half message: the offset its first copy
// had, carried by every later copy.
func txOrigin(m *message.MessageExt) int64 {
	if v, ok := m.Properties[message.PropTranPreparedQueueOffset]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return m.QueueOffset
}

// isDecided reports whether the chain has a decision.
func (s *Service) isDecided(origin int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided[origin] != nil
}

// scan calls fn for the records of topic queue 0 in [from, to) in order,
// skipping units whose record cannot be read. It stops early when fn returns
// false and returns the offset to resume from: that record's, or where the
// scan ended.
func (s *Service) scan(topic string, from, to int64, fn func(m *message.MessageExt) bool) int64 {
	for from < to {
		r := s.store.GetMessage(topic, txHalfQueueID, from, txReadBatch, txScanBytes, nil)
		switch r.Status {
		case store.Found:
		case store.NoMatchedMessage, store.MessageWasRemoving, store.OffsetTooSmall, store.OffsetFoundNull:
			if r.NextBeginOffset <= from {
				return from
			}
			s.log.Warn().Str("topic", topic).Int64("offset", from).Int64("next", r.NextBeginOffset).Str("status", r.Status.String()).
				Msg("transaction: unreadable units skipped")
			from = min(r.NextBeginOffset, to)
			continue
		default:
			return from
		}
		for _, raw := range r.Messages {
			m, err := message.DecodeRecord(raw)
			if err != nil {
				s.log.Error().Err(err).Str("topic", topic).Int64("offset", from).Msg("transaction: undecodable record skipped")
				continue
			}
			if m.QueueOffset >= to {
				return to
			}
			if !fn(m) {
				return m.QueueOffset
			}
		}
		if r.NextBeginOffset <= from {
			return from
		}
		from = r.NextBeginOffset
	}
	return min(from, to)
}
