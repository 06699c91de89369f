package timer

// RetainFrom returns the lowest commitlog offset the timer store may still
// need, and false when it needs none: the message of the oldest TimerLog
// unit a live slot references (from the durable checkpoint's read time,
// the span TimerStore.clean keeps), and the first timer-queue message the
// durable checkpoint has not enqueued (recovery reads the queue from
// there). The enqueue stage appends units in commitlog order (it reads the
// timer consume queue in order; a rolled message is re-stored and enqueued
// afresh), so every pending timer and roll entry points at or after the
// unit found. A message is re-stored at least every RollWindow, so the
// offset is about RollWindow old at most.
func (t *TimerStore) RetainFrom(queueUnitOffset func(queueOffset int64) (int64, bool)) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tl == nil || t.closed {
		return 0, false
	}
	ck := t.lastCkpt
	limit := min(ck.flushPos, t.tl.end)
	from := ck.readTimeMs
	t.wh.forEachLive(func(st int64) {
		if st < from || st >= from+t.span {
			return
		}
		if s, live := t.wh.get(st); live && s.first >= 0 && s.first < limit {
			limit = s.first
		}
	})
	low, found := int64(0), false
	t.tl.scan(max(limit, t.tl.first()), func(pos int64, u unit) bool {
		if pos < t.tl.end {
			low, found = u.offsetPy, true
		}
		return false
	})
	if phy, ok := queueUnitOffset(ck.queueOffset); ok && (!found || phy < low) {
		low, found = phy, true
	}
	return low, found
}
