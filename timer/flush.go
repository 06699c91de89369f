package timer

import (
	"fmt"
	"math"

	"github.com/rmqio/rmq/store"
)

// flush makes progress durable in the order the recovery relies on:
//
//  1. under mu, snapshot the progress (read cursor, consume-queue offset,
//     TimerLog end) together with the changed wheel slots and the delete set;
//  2. sync the TimerLog up to the snapshot's end;
//  3. write and sync the changed wheel slots (they only point below that end);
//  4. write the delete set;
//  5. write the checkpoint.
//
// A crash between any two steps leaves a checkpoint whose every claim is
// backed by durable data: the newer TimerLog units and wheel slots are
// discarded or repaired by recover, and work done after the snapshot is
// redone (at most the deliveries since the snapshot are duplicated).
func (t *TimerStore) flush() error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	if t.fp("flush:begin") {
		return errCrashed
	}
	t.mu.Lock()
	c := checkpoint{
		readTimeMs: t.readTime, cursorTarget: math.MinInt64, cursorPos: -1, scannedPos: -1,
		flushPos: t.tl.end, queueOffset: t.queueOffset, precisionMs: t.p, wheelSlots: t.opts.WheelSlots,
		writtenAtMs: t.nowMs(),
	}
	switch {
	case t.open != nil:
		c.cursorTarget, c.cursorPos, c.scannedPos = t.open.cursorT, t.open.cursorP, t.open.scanned
	case t.resume != nil && t.resume.t == t.readTime:
		c.cursorTarget, c.cursorPos, c.scannedPos = t.resume.cursorT, t.resume.cursorP, t.resume.scanned
	}
	committed := t.committed
	t.commitRequested = false
	ww := t.wh.snapshot()
	delBytes, delChanged := t.dels.snapshot()
	syncs := t.tl.pendingSyncs(c.flushPos)
	t.mu.Unlock()
	var failed bool
	defer t.flushEnded(&failed)

	fail := func(err error) error {
		failed = true
		t.mu.Lock()
		t.wh.restore(ww)
		if delChanged {
			t.dels.dirty = true
		}
		t.mu.Unlock()
		return err
	}
	for _, s := range syncs {
		if err := s.seg.msync(s.from, s.to); err != nil {
			return fail(err)
		}
	}
	t.mu.Lock()
	if err := t.tl.markSynced(c.flushPos); err != nil {
		// Only memory: the units are durable, and the pages stay mapped.
		t.log.Warn().Err(err).Msg("timer: releasing synced timer log pages failed")
	}
	t.mu.Unlock()
	if t.fp("flush:after-timerlog") {
		return errCrashed
	}
	if err := t.wh.write(ww); err != nil {
		return fail(err)
	}
	if t.fp("flush:after-wheel") {
		return errCrashed
	}
	if delChanged {
		if err := store.WriteFileAtomic(t.opts.FS, t.delPath, delBytes); err != nil {
			return fail(fmt.Errorf("timer: write %s: %w", t.delPath, err))
		}
	}
	if t.fp("flush:after-deletes") {
		return errCrashed
	}
	if err := t.flushTiming(); err != nil {
		// Only figures: the progress is checkpointed all the same.
		t.log.Warn().Err(err).Msg("timer: writing the timer metrics failed")
	}
	if c.sameProgress(t.ckf.last) && !delChanged && ww.empty() {
		// The durable checkpoint already holds this progress, so the
		// markers it has passed can go (an idle dequeue moves the read time
		// past a marker's end and then nothing else changes).
		t.mu.Lock()
		t.durableCommitted = committed
		t.dels.prune(c.readTimeMs, c.queueOffset, t.slotOf)
		t.mu.Unlock()
		return nil
	}
	if err := t.ckf.write(c); err != nil {
		return fail(err)
	}
	if t.fp("flush:after-checkpoint") {
		return errCrashed
	}
	t.mu.Lock()
	t.lastCkpt = t.ckf.last
	t.durableCommitted = committed
	// Delete markers are needed until the durable read time passes them.
	t.dels.prune(c.readTimeMs, c.queueOffset, t.slotOf)
	t.mu.Unlock()
	return nil
}

// flushEnded records the outcome of a flush that took its snapshot and wakes
// a dequeue waiting for it. A flush the failpoint killed changes nothing: the
// dequeue sees dead.
func (t *TimerStore) flushEnded(failed *bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.commitFailed = *failed
	if t.deqWaitsCommit {
		t.deqWaitsCommit = false
		signal(t.deqWake)
	}
}

func (c checkpoint) sameProgress(o checkpoint) bool {
	return o.seq != 0 && c.readTimeMs == o.readTimeMs && c.cursorTarget == o.cursorTarget && c.cursorPos == o.cursorPos &&
		c.scannedPos == o.scannedPos && c.flushPos == o.flushPos && c.queueOffset == o.queueOffset &&
		c.precisionMs == o.precisionMs && c.wheelSlots == o.wheelSlots
}

// clean deletes TimerLog segments no durable state can still need: below the
// first unit of every slot at or after the durable read time, and below the
// durable TimerLog end.
func (t *TimerStore) clean() error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := min(t.lastCkpt.flushPos, t.tl.end)
	from := t.lastCkpt.readTimeMs
	t.wh.forEachLive(func(st int64) {
		if st < from || st >= from+t.span {
			return
		}
		if s, live := t.wh.get(st); live && s.first >= 0 && s.first < limit {
			limit = s.first
		}
	})
	n, err := t.tl.removeBelow(limit)
	if n > 0 {
		t.log.Debug().Int("segments", n).Int64("below", limit).Msg("timer: removed old timer log segments")
	}
	return err
}

// runFlush flushes every FlushInterval, and at once when the dequeue asks for
// a commit (requestCommitLocked).
func (t *TimerStore) runFlush() {
	defer t.wg.Done()
	tick := t.nowMs() + t.opts.FlushInterval.Milliseconds()
	for {
		if !t.waitUntil(tick, t.commitWake) || t.dead.Load() {
			return
		}
		if err := t.flush(); err != nil {
			if err == errCrashed {
				return
			}
			t.log.Error().Err(err).Msg("timer: flush failed")
		}
		now := t.nowMs()
		if now < tick {
			continue // a commit between two ticks
		}
		tick = now + t.opts.FlushInterval.Milliseconds()
		t.mu.Lock()
		t.rates.add(now, t.c.enqueued.Load(), t.c.delivered.Load())
		due := now-t.lastClean >= t.opts.CleanInterval.Milliseconds()
		if due {
			t.lastClean = now
		}
		t.mu.Unlock()
		if due {
			if err := t.clean(); err != nil {
				t.log.Error().Err(err).Msg("timer: timer log cleanup failed")
			}
		}
	}
}
