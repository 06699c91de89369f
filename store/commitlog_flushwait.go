package store

import (
	"sync"
	"time"
)

// Callbacks for SYNC_FLUSH puts that do not block their goroutine.
//
// A put with SkipFlushWait returns as soon as its bytes are in the commitlog;
// OnFlushed then registers what to do once they are durable. The
// group-commit flusher runs every callback its flush covers, in one pass,
// so a flush that acknowledges a hundred sends wakes no goroutine for them.
// Callbacks still waiting after SyncFlushTimeout get ok=false (the stock
// FLUSH_DISK_TIMEOUT); Close runs the rest after its final flush.
type flushWaiters struct {
	mu   sync.Mutex
	list []flushWaiter
}

type flushWaiter struct {
	end      int64
	deadline time.Time
	fn       func(ok bool)
}

// flushWaitTick is how often expired callbacks are looked for.
const flushWaitTick = 50 * time.Millisecond

// OnFlushed calls fn(true) once every commitlog byte below end is durable,
// or fn(false) if that takes longer than SyncFlushTimeout. Under SYNC_FLUSH
// fn runs on the flusher goroutine (or the expiry one) and must not block;
// under ASYNC_FLUSH, or when the bytes are already durable, it runs at once
// on the caller's.
func (s *Store) OnFlushed(end int64, fn func(ok bool)) {
	if s.opts.FlushDiskType != SyncFlush || s.cl.flushedOffset.Load() >= end {
		fn(true)
		return
	}
	s.waiters.mu.Lock()
	s.waiters.list = append(s.waiters.list, flushWaiter{end: end, deadline: s.opts.Clock.Now().Add(s.opts.SyncFlushTimeout), fn: fn})
	s.waiters.mu.Unlock()
	select {
	case s.flushWake <- struct{}{}:
	default: // a wake-up is already pending; it runs after the append above
	}
}

// completeWaiters runs the callbacks whose bytes are durable with true and,
// when expire is set, those past their deadline with false.
func (s *Store) completeWaiters(expire bool) {
	done, late := s.takeWaiters(expire)
	for _, w := range done {
		w.fn(true)
	}
	if len(late) > 0 {
		s.stats.flushTimeouts.Add(int64(len(late)))
		for _, w := range late {
			w.fn(false)
		}
	}
}

// takeWaiters takes off the list the callbacks whose bytes are durable
// (done) and, when expire is set, those past their deadline (late), for
// the caller to run: TruncateTo runs them once it holds no lock.
func (s *Store) takeWaiters(expire bool) (done, late []flushWaiter) {
	flushed := s.cl.flushedOffset.Load()
	now := s.opts.Clock.Now()
	s.waiters.mu.Lock()
	keep := s.waiters.list[:0]
	for _, w := range s.waiters.list {
		switch {
		case w.end <= flushed:
			done = append(done, w)
		case expire && now.After(w.deadline):
			late = append(late, w)
		default:
			keep = append(keep, w)
		}
	}
	clear(s.waiters.list[len(keep):])
	s.waiters.list = keep
	s.waiters.mu.Unlock()
	return done, late
}

// pendingWaiters reports whether callbacks are registered.
func (s *Store) pendingWaiters() bool {
	s.waiters.mu.Lock()
	defer s.waiters.mu.Unlock()
	return len(s.waiters.list) > 0
}

// failWaiters runs every remaining callback with false (Close, when its
// final flush did not cover them).
func (s *Store) failWaiters() {
	s.waiters.mu.Lock()
	rest := s.waiters.list
	s.waiters.list = nil
	s.waiters.mu.Unlock()
	for _, w := range rest {
		w.fn(false)
	}
}
