package schedule

import (
	"fmt"

	"github.com/rmqio/rmq/message"
)

// ReplaceOffsets takes a master's delay offsets, the GET_ALL_DELAY_OFFSET
// body (delayOffset.json's text, {"offsetTable":{1:23,...}}), and makes them
// this service's: a SLAVE broker calls it every SlaveSynchronize round
// (4.9.8 SlaveSynchronize.syncDelayOffset writes the text to its
// delayOffset.json). The levels the text names replace the service's, the
// others are kept, and the result is written at once (synced) through the
// service's own writer: stock writes the file behind its stopped service,
// which it loads again only at the next start, but rmq's writer keeps the
// file open between writes, so a file replaced underneath it would be
// overwritten by the next persist (Stop persists too). A level outside the
// table is ignored, as at load. The service must not be delivering: on a
// slave it is never started.
func (s *Service) ReplaceOffsets(text []byte) error {
	_, err := s.takeOffsets(text, "the master", func(int, int64, int64) bool { return true })
	return err
}

// AdvanceOffsets takes the delay offsets of the slave that acted as master
// while this broker was gone (the GET_ALL_DELAY_OFFSET body; broker
// acting_master.go takeBackFromActingSlave) and moves each level forward to
// the slave's offset: the slave delivered every message below it (its
// offset moves only past a message the escape bridge stored, deliverDue),
// so delivering them again here would be a duplicate. A level moves only
// forward, and only when this store's queue of the level holds every entry
// below the slave's offset: an offset past the queue's end would skip
// messages this store has not dispatched yet or never had (a master that
// lost its tail writes new ones at those offsets), a loss. The caller
// checks that the slave's store is a copy of this one's prefix. The
// service must not be delivering (held, or not started). moved counts the
// levels taken.
func (s *Service) AdvanceOffsets(text []byte) (moved int, err error) {
	return s.takeOffsets(text, "the acting slave", func(level int, cur, off int64) bool {
		return off > cur && off <= s.opts.Store.MaxOffsetInQueue(message.TopicSchedule, int32(level-1))
	})
}

// takeOffsets sets the levels of text (from whom) that take accepts, and
// writes the offsets synced.
func (s *Service) takeOffsets(text []byte, from string, take func(level int, cur, off int64) bool) (int, error) {
	m, err := decodeOffsets(text)
	if err != nil {
		return 0, fmt.Errorf("schedule: delay offsets from %s: %w", from, err)
	}
	n := 0
	s.mu.Lock()
	for level, off := range m {
		if level >= 1 && level <= len(s.opts.Levels) && s.offsets[level] != off && take(level, s.offsets[level], off) {
			s.offsets[level] = off
			s.dirty = true
			n++
		}
	}
	s.mu.Unlock()
	return n, s.persist(true)
}
