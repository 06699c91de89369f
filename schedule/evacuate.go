package schedule

import (
	"errors"
	"fmt"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Evacuation: a disk that holds less than the longest pending delay's worth
// of traffic must still take writes (issue 42). Under disk pressure the
// broker asks every holder of pending messages to re-store the ones in the
// commitlog file that must go (store.RetentionOptions.Evacuate).
//
// A level cannot simply put its head messages back at its own tail: a level
// is read in order and stops at the first message not due, so a re-put head
// would wait behind every message sent since, up to a whole level delay
// late. Never early, but wrong. The broker instead hands them to restore,
// which stores them as timer messages due at their original deliver time
// (timer.FromDelayLevel): the wheel keeps each one's own time, whatever
// order they arrive in, and delivers them as the level would have (the same
// properties; see there). Without a timer wheel nothing is re-stored and the
// file stays.
//
// The order survives kill -9 at every step: every re-store is acknowledged
// first, then the level's offset moves past the messages and delayOffset.json
// is synced. A crash in between leaves the old offset: the level delivers
// those messages at their time and the copies do too, a duplicate each,
// never a loss. The level's delivery round and an evacuation exclude each
// other (levelMu), so the offset only moves forward.

// Evacuate re-stores, level by level, the undelivered messages stored below
// the commitlog offset below through restore (their decoded record and the
// time they are due) and moves the level past them. It returns how many it
// re-stored; an error stops at the level and message it failed on (what was
// re-stored before is committed).
func (s *Service) Evacuate(below int64, restore func(ext *message.MessageExt, props message.Props, dueMs int64) error) (int, error) {
	n := 0
	for level := 1; level <= len(s.opts.Levels); level++ {
		k, err := s.evacuateLevel(level, below, restore)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Service) evacuateLevel(level int, below int64, restore func(*message.MessageExt, message.Props, int64) error) (int, error) {
	s.levelMu[level].Lock()
	defer s.levelMu[level].Unlock()
	if s.dead.Load() {
		return 0, errCrashed
	}
	qid := int32(level - 1)
	start := s.offset(level)
	off := start
	var failed error
	n := 0
scan:
	for {
		res := s.opts.Store.ReadQueue(message.TopicSchedule, qid, off, deliverBatch, 4<<20)
		if res == nil || res.Status != store.Found {
			break // empty, or a hole: what was read so far is moved past
		}
		for _, raw := range res.Messages {
			ext, props, err := message.DecodeRecordText(raw)
			if err != nil {
				break scan // the level skips it when it comes to it
			}
			if ext.PhysicalOffset >= below {
				break scan
			}
			due := s.opts.Levels.DeliverAt(level, ext.StoreTimestamp)
			if err := restore(ext, props, due); err != nil {
				failed = fmt.Errorf("schedule: evacuate level %d offset %d: %w", level, ext.QueueOffset, err)
				break scan
			}
			n++
			if s.fp("evacuate:after-put") {
				return n, errCrashed
			}
			off = ext.QueueOffset + 1
		}
	}
	if off == start {
		return 0, failed
	}
	s.setOffset(level, off)
	if s.fp("evacuate:before-commit") {
		return n, errCrashed
	}
	if err := s.persist(true); err != nil {
		return n, errors.Join(failed, err)
	}
	// "delayLevel": a "level" field would replace the log level.
	s.log.Info().Int("delayLevel", level).Int64("from", start).Int64("to", off).Int("restored", n).
		Msg("schedule: pending messages re-stored ahead of a commitlog file deleted for space")
	return n, failed
}
