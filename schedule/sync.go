package schedule

import "fmt"

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
	m, err := decodeOffsets(text)
	if err != nil {
		return fmt.Errorf("schedule: delay offsets from the master: %w", err)
	}
	s.mu.Lock()
	for level, off := range m {
		if level >= 1 && level <= len(s.opts.Levels) && s.offsets[level] != off {
			s.offsets[level] = off
			s.dirty = true
		}
	}
	s.mu.Unlock()
	return s.persist(true)
}
