package pop

// ReviveBusy reports whether the revive reader has work it has not done:
// records on the revive queue it has not read (a trigger the timer store
// just delivered among them), or triggers read whose revive is not done.
// A driver of the message clock (broker.FastForward) waits for it, so that
// a message whose invisible time ended within a jump is back on its retry
// topic before the jump goes on. It only reads.
func (s *Service) ReviveBusy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.due) > 0 || s.readPos < s.opts.Store.MaxOffsetInQueue(s.reviveTopic, 0)
}
