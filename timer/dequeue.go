package timer

import (
	"math"
	"runtime"
	"sort"
)

// item is one wheel entry (or a message delivered without entering the wheel)
// waiting to be processed.
type item struct {
	pos      int64 // TimerLog position; -1 for a message that bypassed the wheel
	target   int64 // exact due time (a roll entry: when to roll)
	roll     bool
	writeMs  int64 // TIMER_ENQUEUE_MS to report
	offsetPy int64
	sizePy   int32
}

// keyLE orders entries of a slot by (target, pos).
func keyLE(target, pos, cT, cP int64) bool { return target < cT || (target == cT && pos <= cP) }

// openSlot is the slot being read: readTime. Its entries are processed in
// (target, pos) order, each at its exact target, so the slot is read as soon
// as its time begins but nothing leaves before it is due. Entries linked while
// the slot is open are absorbed from the chain; the slot closes once the clock
// has passed its end and nothing is left.
//
// Durable meaning (checkpointed): every entry at a position <= scanned whose
// key is <= cursor has been delivered. Entries absorbed with a key at or below
// the cursor (late arrivals) go to imm and are delivered before scanned moves
// past them.
type openSlot struct {
	t                int64
	items            []item // sorted by (target, pos), not processed
	imm              []item // absorbed at or below the cursor, not processed
	scanned          int64
	scannedNext      int64 // highest position absorbed
	cursorT, cursorP int64
	processed        int64 // entries of the slot done (for Pending)
	skip             *resumePoint
}

// resumePoint is the checkpointed progress inside slot t.
type resumePoint struct {
	t, cursorT, cursorP, scanned int64
}

func (t *TimerStore) newOpenSlot(st int64) *openSlot {
	o := &openSlot{t: st, scanned: -1, scannedNext: -1, cursorT: math.MinInt64, cursorP: -1}
	if r := t.resume; r != nil && r.t == st {
		o.skip = r
		o.cursorT, o.cursorP, o.scanned = r.cursorT, r.cursorP, r.scanned
	}
	t.resume = nil
	return o
}

// absorb reads the units linked into o since the last call. mu must be held.
func (t *TimerStore) absorb(o *openSlot) {
	if len(o.imm) > 0 {
		return
	}
	s, live := t.wh.get(o.t)
	if !live || s.last <= o.scannedNext {
		return
	}
	var fresh []item
	for pos := s.last; pos > o.scannedNext && pos >= 0; {
		u, ok := t.tl.read(pos)
		if !ok || t.slotOf(u.target()) != o.t || u.prevPos >= pos {
			// The rest of the chain cannot be reached; its entries are lost
			// to this slot, which is counted and logged, never retried.
			t.c.skipped.Add(1)
			t.log.Error().Int64("slot", o.t).Int64("pos", pos).Msg("timer: broken wheel chain, older entries of the slot skipped")
			break
		}
		fresh = append(fresh, item{pos: pos, target: u.target(), roll: u.roll(), writeMs: u.writeMs, offsetPy: u.offsetPy, sizePy: u.sizePy})
		pos = u.prevPos
	}
	o.scannedNext = s.last
	sk := o.skip
	o.skip = nil
	var later []item
	for _, f := range fresh {
		switch {
		case sk != nil && f.pos <= sk.scanned && keyLE(f.target, f.pos, sk.cursorT, sk.cursorP):
			o.processed++ // delivered before the restart
		case keyLE(f.target, f.pos, o.cursorT, o.cursorP):
			o.imm = append(o.imm, f)
		default:
			later = append(later, f)
		}
	}
	sortItems(o.imm)
	if len(later) > 0 {
		sortItems(later)
		o.items = mergeItems(o.items, later)
	}
	if len(o.imm) == 0 {
		o.scanned = o.scannedNext
	}
}

func sortItems(s []item) {
	sort.Slice(s, func(i, j int) bool { return keyLE(s[i].target, s[i].pos, s[j].target, s[j].pos) })
}

// mergeItems merges two sorted lists.
func mergeItems(a, b []item) []item {
	if len(a) == 0 {
		return b
	}
	out := make([]item, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if keyLE(a[0].target, a[0].pos, b[0].target, b[0].pos) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// setReadTime moves the read cursor forward. mu must be held.
func (t *TimerStore) setReadTime(rt int64) {
	if rt <= t.readTime {
		return
	}
	t.readTime = rt
	for k, due := range t.delivered {
		if t.slotOf(due) < rt {
			delete(t.delivered, k)
		}
	}
	if t.resume != nil && t.resume.t < rt {
		t.resume = nil
	}
	if t.enqPaused {
		t.enqPaused = false
		signal(t.enqWake)
	}
}

// SetDequeue resumes (true) or holds (false) the delivery of due timers
// (5.3.3 TimerMessageStore.setShouldRunningDequeue); the enqueue goes on,
// so the wheel keeps up with the timer topic. Holding waits for the batch
// in progress. A TimerStore starts delivering.
func (t *TimerStore) SetDequeue(on bool) {
	if on && t.deqPaused.Load() {
		t.adoptPending() // taking over: the newest copy of the master's progress, if replicated
	}
	t.deqPaused.Store(!on)
	if on {
		signal(t.deqWake)
		return
	}
	t.deqMu.Lock()
	t.deqMu.Unlock() //nolint:staticcheck // a barrier: the batch in progress ends first
}

func (t *TimerStore) runDequeue() {
	defer t.wg.Done()
	for !t.stopping() {
		t.deqMu.Lock()
		if t.deqPaused.Load() {
			t.deqMu.Unlock()
			if !t.waitUntil(math.MaxInt64, t.deqWake) {
				return
			}
			continue
		}
		wakeAt, busy := t.dequeueStep()
		t.deqMu.Unlock()
		if t.dead.Load() {
			return
		}
		if busy {
			runtime.Gosched() // between bounded batches: let sends and the enqueue in
			continue
		}
		// The rounds are paced only here, between rounds: the batches of a
		// round (a flood due at once) follow each other without a pause.
		wakeAt = t.rounds.Next(wakeAt)
		t.idleCommit(wakeAt)
		if !t.waitUntil(wakeAt, t.deqWake) {
			return
		}
	}
}

// dequeueStep does one bounded unit of dequeue work. busy means more may be
// ready at once; otherwise wakeAt is when to look again.
func (t *TimerStore) dequeueStep() (wakeAt int64, busy bool) {
	t.mu.Lock()
	now := t.nowMs()
	o := t.open
	if o == nil {
		next, ok := t.nonEmpty.min(t.readTime)
		if ok && next <= now {
			t.setReadTime(next)
			t.open = t.newOpenSlot(next)
			t.mu.Unlock()
			return 0, true
		}
		// Nothing due: skip the empty slots up to the present.
		if nowSlot := t.slotOf(now); nowSlot > t.readTime && (!ok || nowSlot <= next) {
			t.setReadTime(nowSlot)
		}
		t.deqWakeAt = math.MaxInt64
		if ok {
			t.deqWakeAt = next
		}
		if end, live := t.dels.nextEndSlot(t.readTime, t.slotOf); live && end+t.p < t.deqWakeAt {
			t.deqWakeAt = end + t.p // deleteset.go nextEndSlot
		}
		wakeAt = t.deqWakeAt
		t.mu.Unlock()
		return wakeAt, false
	}
	// Deliveries are committed (flushed) in groups by the flush goroutine:
	// asked for once BatchSize of them are uncommitted, while the dequeue
	// goes on. It waits only when CommitWindow batches are uncommitted,
	// which bounds what a kill -9 redoes.
	pending := int(t.committed - t.durableCommitted)
	if pending >= t.opts.BatchSize {
		t.requestCommitLocked()
	}
	b := min(t.opts.BatchSize, t.opts.BatchSize*t.opts.CommitWindow-pending)
	if b <= 0 {
		if !t.commitFailed {
			// Woken when the commit ends (flush), whatever its outcome.
			t.deqWaitsCommit = true
			t.deqWakeAt = math.MinInt64
			t.mu.Unlock()
			return math.MaxInt64, false
		}
		// A commit that failed (logged) lets one more batch out before the
		// next try, as a commit after every batch would.
		t.commitFailed = false
		b = t.opts.BatchSize
	}
	t.absorb(o)
	nImm := min(len(o.imm), b)
	batch := append(make([]item, 0, b), o.imm[:nImm]...)
	o.imm = o.imm[nImm:]
	nSorted := 0
	for len(batch) < b && nSorted < len(o.items) && o.items[nSorted].target <= now {
		batch = append(batch, o.items[nSorted])
		nSorted++
	}
	o.items = o.items[nSorted:]
	if len(batch) == 0 {
		if len(o.items) == 0 && now >= o.t+t.p {
			if s, live := t.wh.get(o.t); live && s.last > o.scannedNext {
				t.mu.Unlock()
				return 0, true // linked meanwhile: absorb first
			} else if live {
				t.liveNum -= int64(s.num)
			}
			t.open = nil
			t.setReadTime(o.t + t.p)
			t.mu.Unlock()
			return 0, true
		}
		wakeAt = o.t + t.p
		if len(o.items) > 0 {
			wakeAt = min(wakeAt, o.items[0].target)
		}
		t.deqWakeAt = wakeAt
		t.mu.Unlock()
		return wakeAt, false
	}
	t.deqWakeAt = math.MinInt64 // busy: no need to be woken
	t.mu.Unlock()

	done, effects := t.deliverItems(batch)
	if done < len(batch) && t.dead.Load() {
		return 0, false
	}
	if done < len(batch) {
		// The store refused as closed or we are stopping: do not spin.
		wakeAt = t.nowMs() + t.opts.RetryInterval.Milliseconds()
	}
	if done == len(batch) && t.fp("dequeue:after-deliver") {
		return 0, false
	}
	t.mu.Lock()
	if done > 0 {
		t.rounds.Delivered(t.nowMs()) // under mu for readers other than the dequeue (tests)
	}
	o.processed += int64(done)
	if done == len(batch) {
		t.committed += int64(effects)
	}
	if done < len(batch) {
		// Stopping: put back what was not done so the checkpoint stays exact.
		restImm := batch[min(done, nImm):nImm]
		restSorted := batch[max(done, nImm):]
		o.imm = append(append([]item(nil), restImm...), o.imm...)
		o.items = append(append([]item(nil), restSorted...), o.items...)
	}
	if doneSorted := done - nImm; doneSorted > 0 {
		last := batch[nImm+doneSorted-1]
		o.cursorT, o.cursorP = last.target, last.pos
	}
	if len(o.imm) == 0 {
		o.scanned = o.scannedNext
	}
	t.mu.Unlock()
	if done < len(batch) && effects > 0 && !t.commitDeliveries() {
		return 0, false
	}
	return wakeAt, done == len(batch)
}

// commitIdleMs is how long the dequeue may sleep with deliveries not yet
// committed: a longer sleep asks for their commit first. Shorter gaps (timers
// due every millisecond or so) let up to BatchSize deliveries share one flush.
const commitIdleMs = 10

// idleCommit asks for the commit of the deliveries not yet committed when the
// dequeue is about to sleep until wakeAt, more than commitIdleMs away.
func (t *TimerStore) idleCommit(wakeAt int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.committed > t.durableCommitted && (wakeAt == math.MaxInt64 || wakeAt-t.nowMs() > commitIdleMs) {
		t.requestCommitLocked()
	}
}

// requestCommitLocked asks the flush goroutine for a flush now; the flush
// takes its snapshot after this call, so it covers every delivery counted in
// committed so far. mu must be held.
func (t *TimerStore) requestCommitLocked() {
	if !t.commitRequested {
		t.commitRequested = true
		signal(t.commitWake)
	}
}

// commitDeliveries makes the progress of the deliveries done so far durable
// (a flush, which writes the checkpoint), so that a crash redoes at most
// BatchSize of them rather than everything since the last periodic flush. It
// reports false when a failpoint killed the store.
func (t *TimerStore) commitDeliveries() bool {
	if err := t.flush(); err != nil {
		if err == errCrashed {
			return false
		}
		t.log.Error().Err(err).Msg("timer: flush after deliveries failed")
	}
	return !t.dead.Load()
}
