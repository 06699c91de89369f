package store

import (
	"time"
)

// asyncFlushLoop fsyncs the commitlog every FlushInterval (ASYNC_FLUSH).
func (s *Store) asyncFlushLoop() {
	defer s.flushWG.Done()
	s.every(s.opts.FlushInterval, s.flushCommitLog)
}

// every runs fn each period of the store's clock until stopFlush is closed.
func (s *Store) every(period time.Duration, fn func()) {
	for {
		t := s.opts.Clock.NewTimer(period)
		select {
		case <-t.C():
			fn()
		case <-s.stopFlush:
			t.Stop()
			return
		}
	}
}

// Pacing of the group commit under load. Each sync costs the broker CPU
// beyond its messages (the syscall and block I/O, the flusher's thread handed
// its P back and forth, the runtime's monitor polling while it blocks), so
// while puts keep coming the flusher starts syncs at most one
// groupCommitPeriod apart and each covers more of them. It paces only after
// a sync that covered at least groupCommitPaceBytes: a light load (or a
// lone put after a pause) is synced as soon as it asks, as before. No put is
// acknowledged earlier than its sync in either case.
const (
	groupCommitPeriod    = time.Millisecond
	groupCommitPaceBytes = 16 << 10
)

// groupCommitLoop is the SYNC_FLUSH flusher: each wake-up fsyncs everything
// published so far, which acknowledges every put waiting at that moment with
// a single fsync, and runs the OnFlushed callbacks that flush covers. Its
// pacing reads the wall clock, not Options.Clock: it measures what syncs
// cost, and a test clock that stands still must not hold puts back.
func (s *Store) groupCommitLoop() {
	defer s.flushWG.Done()
	var lastStart time.Time
	var lastBytes int64
	for {
		select {
		case <-s.flushWake:
			if lastBytes >= groupCommitPaceBytes {
				if d := groupCommitPeriod - time.Since(lastStart); d > 0 {
					time.Sleep(d)
				}
			}
			lastStart = time.Now()
			from := s.cl.flushedOffset.Load()
			s.flushCommitLog()
			lastBytes = s.cl.flushedOffset.Load() - from
			s.completeWaiters(false)
		case <-s.stopFlush:
			return
		}
	}
}

// expireWaitersLoop fails the OnFlushed callbacks that waited longer than
// SyncFlushTimeout; it is not the flusher, which a hung disk holds.
func (s *Store) expireWaitersLoop() {
	defer s.flushWG.Done()
	s.every(flushWaitTick, func() {
		if s.pendingWaiters() {
			s.completeWaiters(true)
		}
	})
}

func (s *Store) flushCommitLog() {
	if err := s.cl.flush(); err != nil {
		s.stats.flushErrors.Add(1)
		s.log.Error().Err(err).Msg("commitlog flush failed")
	}
	s.broadcastFlushed()
	// After the waiters are woken: a pass walks megabytes of page cache.
	s.cl.dropBehind(s.opts.PageCacheKeep)
}

// broadcastFlushed wakes waitFlushed callers after flushedOffset moved.
func (s *Store) broadcastFlushed() {
	s.flushEpochMu.Lock()
	close(s.flushEpoch)
	s.flushEpoch = make(chan struct{})
	s.flushEpochMu.Unlock()
}

// waitFlushed asks the group-commit flusher for a flush and waits until every
// byte below end is durable, at most SyncFlushTimeout.
func (s *Store) waitFlushed(end int64) bool {
	var timeout <-chan time.Time
	for {
		// Take the epoch before checking, so a flush that completes between the
		// check and the wait still wakes this caller.
		s.flushEpochMu.Lock()
		epoch := s.flushEpoch
		s.flushEpochMu.Unlock()
		if s.cl.flushedOffset.Load() >= end {
			return true
		}
		select {
		case s.flushWake <- struct{}{}:
		default: // a wake-up is already pending
		}
		if timeout == nil {
			t := s.opts.Clock.NewTimer(s.opts.SyncFlushTimeout)
			defer t.Stop()
			timeout = t.C()
		}
		select {
		case <-epoch:
		case <-timeout:
			return s.cl.flushedOffset.Load() >= end
		}
	}
}

// queueFlushLoop fsyncs the consume queues and rewrites the checkpoint every
// FlushConsumeQueueInterval: the queues with cqFlushLeastPages pages to sync,
// and every queue once cqFlushThoroughInterval has passed since the last time
// it did so.
func (s *Store) queueFlushLoop() {
	defer s.flushWG.Done()
	last := s.opts.Clock.Now()
	s.every(s.opts.FlushConsumeQueueInterval, func() {
		now := s.opts.Clock.Now()
		thorough := now.Sub(last) >= cqFlushThoroughInterval
		err := s.checkpoint(thorough)
		if err == nil && thorough {
			last = now
		}
		if err != nil {
			s.stats.flushErrors.Add(1)
			s.log.Error().Err(err).Msg("consume queue flush / checkpoint failed")
		}
	})
}
