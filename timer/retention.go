package timer

// OldestReferencedOffset returns the commitlog offset of the message of the
// oldest unit the TimerLog still stores, and false when it stores none.
// The enqueue stage appends units in commitlog order (it reads the timer
// consume queue in order, and a rolled message is re-stored and enqueued
// afresh), so every pending timer and roll entry points at or after it:
// commitlog retention keeps the files from there on. TimerLog segments no
// slot references any more are deleted every CleanInterval, and a message
// is re-stored at least every RollWindow, so the offset is at most about
// RollWindow old.
func (t *TimerStore) OldestReferencedOffset() (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tl == nil || t.closed {
		return 0, false
	}
	var phy int64
	found := false
	t.tl.scan(t.tl.first(), func(pos int64, u unit) bool {
		if pos < t.tl.end {
			phy, found = u.offsetPy, true
		}
		return false
	})
	return phy, found
}

// QueueOffset is the next offset of the timer consume queue the enqueue
// stage reads: messages from there on are not in the TimerLog yet.
func (t *TimerStore) QueueOffset() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.queueOffset
}
