package store

// Puts dispatch their own records.
//
// The dispatcher goroutine dispatches whatever the put path publishes. At a
// steady send rate each put stores one message and finds that goroutine
// asleep, so every message cost a wake-up of another thread, and another
// sleep, on top of the event loop's own (workload 4 of bench/compare, 100 000
// delay-level messages sent at 10 000/s: 1.5 context switches per message,
// and a third of the broker's CPU in the scheduler).
//
// So a put whose records are the next ones to dispatch dispatches them
// itself when nothing else holds dispatchMu, exactly as the dispatcher would
// (dispatchRead): consume-queue units, keys, the OnDispatch hooks, reput and
// the progress signal. Records then reach long-polling consumers without the
// hop (workload 4: 1.0 context switch per message). Its writes are memory
// writes into mapped queue and index files, as the put's own append is. It
// leaves to the dispatcher goroutine, which it wakes as before, everything
// that may wait or that is not its own:
//
//   - records before its own (the dispatcher is behind: a burst, a restart);
//   - a put of more records than one pass reads (dispatchBatch);
//   - a consume-queue file to create (already handed to the file creator by
//     any dispatch but Open's) and records waiting for one (deferred);
//   - an index file to roll over to: creating it is a file-system operation
//     the event loop must not wait for; and the index while a lookup holds
//     its lock, which it may hold while it reads the disk (holdFor: the
//     pass then holds that lock, so no lookup starts under it);
//   - a stalled dispatch (full disk, I/O error), with its retries;
//   - mapped pages due for release (releaseBehind takes releaseMu, which a
//     page-cache drop pass holds for a while).
//
// A put that finds dispatchMu taken (the dispatcher is in a pass, or another
// put dispatches) wakes the dispatcher, whose next pass takes the records.
// After the dispatcher's last pass (Close) a put dispatches nothing: its
// records are dispatched by the next Open's recovery, as before.

// dispatchOwn dispatches the records [from, to) one put has just published,
// or wakes the dispatcher to do it.
func (s *Store) dispatchOwn(from, to int64) {
	if s.opts.noOwnDispatch || !s.dispatchMu.TryLock() {
		s.wakeDispatcher()
		return
	}
	done := s.dispatchOwnLocked(from, to)
	s.dispatchMu.Unlock()
	if !done {
		s.wakeDispatcher()
	}
}

// dispatchOwnLocked dispatches [from, to) when the rules above allow it, and
// reports whether nothing is left for the dispatcher goroutine.
func (s *Store) dispatchOwnLocked(from, to int64) bool {
	if s.dispatchStopped.Load() {
		return true
	}
	if s.creator == nil || s.dispatchStalled.Load() || len(s.deferred) > 0 {
		return false
	}
	if _, due := s.cl.releaseTarget(); due {
		return false
	}
	if max(s.cursor, s.reput.Load()) != from {
		return false
	}
	if g := s.confirm.Load(); g >= 0 && to > g {
		return false // behind the confirm offset gate (confirm.go)
	}
	s.cursor = from
	batch, next, err := s.readRecords(from, to, s.pending[:0], true)
	ok := err == nil && next == to
	if ok && s.index != nil {
		ok, s.indexHeld = s.index.holdFor(batch)
	}
	if !ok {
		s.pending = batch[:0]
		return false
	}
	stalled := s.dispatchRead(batch, next)
	if s.indexHeld {
		s.indexHeld = false
		s.index.mu.Unlock()
	}
	s.stats.putDispatches.Add(1)
	s.signalProgress()
	return !stalled && len(s.deferred) == 0
}
