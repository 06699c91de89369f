package timer

import (
	"fmt"
	"math"

	"github.com/rmqio/rmq/message"
)

// recover rebuilds the in-memory state from the checkpoint (ok: one was read),
// the TimerLog, the wheel file (wheelFresh: unusable, rebuild it) and the
// consume queue. See Open.
func (t *TimerStore) recover(ck checkpoint, ok, wheelFresh bool) error {
	now := t.nowMs()
	rebuild := wheelFresh
	wheelCreated := wheelFresh && !t.wh.allDirty
	if ok && (ck.precisionMs != t.p || ck.wheelSlots != t.opts.WheelSlots) {
		t.log.Warn().Int64("oldPrecisionMs", ck.precisionMs).Int64("precisionMs", t.p).Int64("oldWheelSlots", ck.wheelSlots).
			Int64("wheelSlots", t.opts.WheelSlots).Msg("timer: wheel geometry changed, rebuilding the wheel from the timer log")
		rebuild = true
		ck.readTimeMs = t.slotOf(ck.readTimeMs)
		ck.scannedPos = -1
	}

	// The TimerLog is trusted up to the checkpoint's flushPos: later units are
	// dropped and their messages read again from the consume queue.
	var tlEnd int64
	if ok {
		flushPos := ck.flushPos
		if flushPos < t.tl.first() {
			t.log.Error().Int64("flushPos", flushPos).Int64("timerLogStart", t.tl.first()).Msg("timer: checkpoint points below the timer log")
			flushPos = t.tl.first()
			rebuild = true
		}
		tlEnd = t.tl.scan(verifyFrom(t.tl, flushPos, t.opts.verifyTailBytes), func(pos int64, _ unit) bool { return pos < flushPos })
		if tlEnd < flushPos {
			t.log.Error().Int64("flushPos", flushPos).Int64("intactEnd", tlEnd).Msg("timer: timer log lost units the checkpoint covers, rebuilding the wheel")
			rebuild = true
		} else {
			tlEnd = flushPos
		}
	} else {
		tlEnd = t.tl.scan(t.tl.first(), nil)
	}
	t.tl.end = t.tl.scan(tlEnd, nil) // units beyond tlEnd stay readable until truncated below

	if ok {
		t.readTime, t.queueOffset = ck.readTimeMs, ck.queueOffset
		if ck.scannedPos >= 0 {
			t.resume = &resumePoint{t: ck.readTimeMs, cursorT: ck.cursorTarget, cursorP: ck.cursorPos, scanned: min(ck.scannedPos, tlEnd)}
		}
		if t.readTime > now+t.p {
			t.log.Warn().Int64("readTime", t.readTime).Int64("now", now).Msg("timer: checkpoint read time is ahead of the clock; waiting for it")
		}
	} else {
		t.recoverWithoutCheckpoint(now, tlEnd)
		rebuild = true
	}

	if !rebuild && !t.repairWheel(tlEnd) {
		t.log.Error().Msg("timer: wheel inconsistent with the timer log, rebuilding it")
		rebuild = true
	}
	synced := tlEnd
	if rebuild {
		rewritten, err := t.rebuildWheel(tlEnd, wheelCreated)
		if err != nil {
			return err
		}
		synced = min(synced, rewritten)
	}
	if err := t.tl.truncate(tlEnd); err != nil {
		return fmt.Errorf("timer: truncate timer log: %w", err)
	}
	t.tl.synced = synced

	t.wh.forEachLive(func(st int64) {
		s, _ := t.wh.get(st)
		switch {
		case st >= t.readTime+t.span:
			t.c.skipped.Add(int64(s.num))
			t.log.Error().Int64("slot", st).Int32("entries", s.num).Msg("timer: wheel slot beyond the ring window dropped")
			t.wh.clear(st)
		case st >= t.readTime:
			t.nonEmpty.push(st)
			t.liveNum += int64(s.num)
		}
	})

	lo, hi := t.opts.Store.MinOffsetInQueue(message.TopicWheelTimer, 0), t.opts.Store.MaxOffsetInQueue(message.TopicWheelTimer, 0)
	if q := t.queueOffset; q < lo || q > hi {
		t.queueOffset = min(max(q, lo), hi)
		t.log.Warn().Int64("checkpoint", q).Int64("min", lo).Int64("max", hi).Int64("corrected", t.queueOffset).
			Msg("timer: timer queue offset outside the consume queue, clamped")
	}
	t.dels.prune(t.readTime, t.queueOffset, t.slotOf)
	t.tlOpenEnd = tlEnd
	t.clMaxAtOpen = t.opts.Store.MaxPhyOffset()
	t.lastClean = now
	if ok {
		t.lastCkpt = ck
	}
	t.log.Info().Int64("readTime", t.readTime).Int64("queueOffset", t.queueOffset).Int64("timerLogEnd", tlEnd).
		Int64("pending", t.liveNum).Bool("rebuilt", rebuild).Msg("timer: recovered")
	return nil
}

// defaultVerifyTailBytes bounds the TimerLog checked unit by unit at open
// (the timer store's Options.verifyTailBytes, lowered by tests), below the
// checkpoint's flushPos. Everything below flushPos was synced before the
// checkpoint was written, so a crash cannot tear it; the check finds a file
// cut short or damaged near the durable end. Checking all of it would cost
// time in proportion to the pending timers (1 000 000 units: ~50 ms) on every
// start, and a unit damaged further back is still caught when it is read:
// repairWheel checks each live slot's first and last units, and the dequeue
// skips and counts a unit that fails its CRC.
const defaultVerifyTailBytes = 4 << 20

// verifyFrom is the unit boundary where the open-time check of the units
// below flushPos starts: tail bytes before it, within its segment
// (units never span segments and fillers only end them, so unit boundaries
// are the segment start plus multiples of unitSize).
func verifyFrom(tl *timerLog, flushPos, tail int64) int64 {
	s := tl.segFor(flushPos - 1)
	if s == nil {
		return tl.first()
	}
	from := flushPos - tail
	if from <= s.start {
		return s.start
	}
	return s.start + (from-s.start)/unitSize*unitSize
}

// recoverWithoutCheckpoint picks a read time and queue offset when no
// checkpoint survived. With units in the TimerLog it replays them all
// (duplicates rather than loss) and continues the consume queue after the
// message of the last unit.
func (t *TimerStore) recoverWithoutCheckpoint(now, tlEnd int64) {
	t.readTime = t.slotOf(now)
	t.queueOffset = t.opts.Store.MinOffsetInQueue(message.TopicWheelTimer, 0)
	if tlEnd <= t.tl.first() {
		return
	}
	minSlot := int64(math.MaxInt64)
	var last unit
	t.tl.scan(t.tl.first(), func(pos int64, u unit) bool {
		if pos >= tlEnd {
			return false
		}
		minSlot = min(minSlot, t.slotOf(u.target()))
		last = u
		return true
	})
	// The ring must hold every slot from the read time to now+roll.
	floor := t.slotOf(now) + t.roll + (blankSlots+1)*t.p - t.span
	t.readTime = max(min(minSlot, t.readTime), floor)
	if raw, err := t.opts.Store.LookMessageByOffset(last.offsetPy); err == nil {
		if ext, err := message.DecodeRecord(raw); err == nil && ext.Topic == message.TopicWheelTimer {
			t.queueOffset = ext.QueueOffset + 1
		}
	}
	t.log.Error().Int64("readTime", t.readTime).Int64("queueOffset", t.queueOffset).
		Msg("timer: no valid checkpoint; replaying the timer log, deliveries may be duplicated")
}

// repairWheel cuts every chain back to the units below tlEnd and checks the
// live slots. It reports false when the wheel cannot be trusted.
func (t *TimerStore) repairWheel(tlEnd int64) bool {
	ok := true
	t.wh.forEachLive(func(st int64) {
		if ok {
			ok = t.repairSlot(st, tlEnd)
		}
	})
	return ok
}

// repairSlot cuts the chain of slot st back below tlEnd and checks it.
func (t *TimerStore) repairSlot(st, tlEnd int64) bool {
	s, _ := t.wh.get(st)
	if s.last >= tlEnd {
		pos, removed := s.last, int32(0)
		for pos >= tlEnd {
			u, ok := t.tl.read(pos)
			if !ok || u.prevPos >= pos || t.slotOf(u.target()) != st {
				return false
			}
			pos, removed = u.prevPos, removed+1
		}
		if pos < 0 || pos < s.first {
			t.wh.clear(st)
			return true
		}
		s.last, s.num = pos, s.num-removed
		t.wh.put(st, s)
	}
	if st < t.readTime || st >= t.readTime+t.span {
		return true
	}
	if s.num <= 0 || s.first < t.tl.first() || s.first > s.last {
		return false
	}
	for _, pos := range [2]int64{s.first, s.last} {
		if u, ok := t.tl.read(pos); !ok || t.slotOf(u.target()) != st {
			return false
		}
	}
	return true
}

// rebuildWheel relinks every TimerLog unit below tlEnd due at or after the
// read time. Units are rewritten where their prevPos does not match the
// rebuilt chain, so every chain is exactly the slot's units in log order. It
// returns the lowest rewritten position (MaxInt64 if none), from which the
// TimerLog must be synced again. A rewrite goes into a page that holds the
// unit already, so it needs no disk space; it can fault only on a file cut
// short behind the mapping, which fails the recovery.
func (t *TimerStore) rebuildWheel(tlEnd int64, wheelCreated bool) (int64, error) {
	t.wh.reset()
	rewritten := int64(math.MaxInt64)
	linked := 0
	var werr error
	link := func(pos int64, u unit) bool {
		if pos >= tlEnd {
			return false
		}
		st := t.slotOf(u.target())
		if st < t.readTime || st >= t.readTime+t.span {
			return true
		}
		s, live := t.wh.get(st)
		if !live {
			s = slot{first: pos, last: -1}
		}
		if u.prevPos != s.last {
			u.prevPos = s.last
			if werr = t.tl.segFor(pos).encodeAt(pos, &u); werr != nil {
				return false
			}
			rewritten = min(rewritten, pos)
		}
		s.last = pos
		s.num++
		t.wh.put(st, s)
		linked++
		return true
	}
	// Units below tlEnd are checked at open only near tlEnd (verifyFrom): one
	// that fails its CRC further back is skipped and counted, not a reason to
	// drop every unit after it.
	for pos := t.tl.first(); ; pos += unitSize {
		if pos = t.tl.scan(pos, link); werr != nil {
			return 0, werr
		}
		if pos >= tlEnd || t.tl.segFor(pos) == nil {
			break
		}
		t.c.skipped.Add(1)
		t.log.Error().Int64("pos", pos).Msg("timer: corrupt timer log unit skipped while rebuilding the wheel")
	}
	if wheelCreated && linked == 0 {
		t.wh.allDirty = false // a new file is already all zero
	}
	t.log.Info().Int("entries", linked).Msg("timer: wheel rebuilt from the timer log")
	return rewritten, nil
}
