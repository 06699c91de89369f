package store

import (
	"time"
)

// asyncFlushLoop fsyncs the commitlog every FlushInterval (ASYNC_FLUSH).
func (s *Store) asyncFlushLoop() {
	defer s.flushWG.Done()
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.flushCommitLog()
		case <-s.stopFlush:
			return
		}
	}
}

// groupCommitLoop is the SYNC_FLUSH flusher: each wake-up fsyncs everything
// published so far, which acknowledges every put waiting at that moment with
// a single fsync, and runs the OnFlushed callbacks that flush covers.
func (s *Store) groupCommitLoop() {
	defer s.flushWG.Done()
	for {
		select {
		case <-s.flushWake:
			s.flushCommitLog()
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
	tick := time.NewTicker(flushWaitTick)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if s.pendingWaiters() {
				s.completeWaiters(true)
			}
		case <-s.stopFlush:
			return
		}
	}
}

func (s *Store) flushCommitLog() {
	if err := s.cl.flush(); err != nil {
		s.stats.flushErrors.Add(1)
		s.log.Error().Err(err).Msg("commitlog flush failed")
	}
	s.broadcastFlushed()
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
			t := time.NewTimer(s.opts.SyncFlushTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-epoch:
		case <-timeout:
			return s.cl.flushedOffset.Load() >= end
		}
	}
}

// queueFlushLoop fsyncs the consume queues and rewrites the checkpoint every
// FlushConsumeQueueInterval.
func (s *Store) queueFlushLoop() {
	defer s.flushWG.Done()
	t := time.NewTicker(s.opts.FlushConsumeQueueInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.checkpointNow(); err != nil {
				s.stats.flushErrors.Add(1)
				s.log.Error().Err(err).Msg("consume queue flush / checkpoint failed")
			}
		case <-s.stopFlush:
			return
		}
	}
}
