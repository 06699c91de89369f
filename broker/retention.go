package broker

import (
	"math"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/timer"
)

// What commitlog retention must not delete (store.RetentionOptions.
// ProtectedOffset), and what it re-stores ahead under disk pressure
// (store.RetentionOptions.Evacuate: a forced round, or an expired file on a
// disk over diskMaxUsedSpaceRatio). The choice per kind of pending message:
//
//   - delay levels (SCHEDULE_TOPIC_XXXX): the file is kept. Each level's
//     undelivered messages start at its delivery offset; the longest stock
//     level is 2 h, far inside any reserved time. Under disk pressure the
//     ones in the file that must go are re-stored as timer messages due at
//     their level's time and the level moves past them
//     (schedule.Service.Evacuate, timer.FromDelayLevel): a level put back
//     at its own tail would deliver them up to a level delay late. Without
//     a timer wheel they keep the file.
//   - timers (rmq_sys_wheel_timer): re-stored ahead of deletion. The roll
//     window is at most half of fileReservedTime (timerRollWindow), so a
//     pending timer's commitlog copy is never older than that; and the
//     files from the oldest message a live wheel slot references (or the
//     first timer message not enqueued, per the durable timer checkpoint)
//     are kept. Under disk pressure the pending timers in the file that must
//     go are rolled at once (timer.TimerStore.Evacuate).
//   - undecided half messages (RMQ_SYS_TRANS_HALF_TOPIC) and the op queue
//     the decided set is rebuilt from: the file is kept from the check
//     walk's progress on (CID_RMQ_SYS_TRANS offsets). The check gives up on
//     a half message after transactionCheckMax checks, and the walk moves on.
//     Under disk pressure the undecided ones in the file that must go are
//     put back at the half queue's end, as the check does, and the walk
//     moves past them (transaction.Service.Evacuate). The op entries of
//     decided chains are released transactionTimeOut plus one check
//     interval after the decision, so the op queue pins briefly.
//   - consumer groups: files go whatever the groups' offsets, as in stock,
//     forced rounds included (a consumer that falls behind retention gets
//     OFFSET_TOO_SMALL or OFFSET_MOVED and resumes at the new minimum). With
//     retainUnconsumedOnForcedClean (rmq, off) a forced round deletes files
//     inside the reserved time only below every group's committed offset:
//     what a group has not consumed within its retention is kept, and the
//     broker refuses sends (disk full) rather than lose it, which one
//     abandoned group turns into a full disk until fileReservedTime.
//
// Every re-store is acknowledged by the store before the holder's progress
// moves past the original, and the file goes only after that: a kill -9 at
// any step leaves the original readable (a duplicate delivery or check) or
// a copy, never neither.
func (b *Broker) protectedOffset(forced bool) int64 {
	st := b.store
	low := int64(math.MaxInt64)
	keep := func(topic string, qid int32, off int64) {
		if off < st.MinOffsetInQueue(topic, qid) {
			off = st.MinOffsetInQueue(topic, qid)
		}
		if off >= st.MaxOffsetInQueue(topic, qid) {
			return
		}
		if phy, ok := st.CommitLogOffsetOf(topic, qid, off); ok && phy < low {
			low = phy
		}
	}
	// The delay levels and timers are protected once they deliver (Start,
	// on a master).
	delivering := b.deliveryStarted.Load()
	if delivering {
		offs := b.sched.Offsets()
		for _, qid := range st.QueueIDs(message.TopicSchedule) {
			keep(message.TopicSchedule, qid, offs[int(qid)+1])
		}
	}
	if t := b.timers; delivering && t != nil {
		if phy, ok := t.RetainFrom(b.timerUnitAt); ok && phy < low {
			low = phy
		}
	}
	retainUnconsumed := b.runtime().RetainUnconsumedOnForcedClean
	txWalked := map[string]bool{}
	b.clients.Offsets.Each(func(group, topic string, qid int32, off int64) {
		switch {
		case topic == message.TopicTransHalf || topic == message.TopicTransOpHalf:
			txWalked[topic] = true
			keep(topic, qid, off)
		case forced && group != txSysGroup && retainUnconsumed:
			keep(topic, qid, off)
		}
	})
	for _, topic := range []string{message.TopicTransHalf, message.TopicTransOpHalf} {
		if !txWalked[topic] {
			for _, qid := range st.QueueIDs(topic) {
				keep(topic, qid, 0) // no walk yet: everything is pending
			}
		}
	}
	return low
}

// timerUnitAt is the commitlog offset of the timer queue's message at off
// (or its first one still stored), false past its end.
func (b *Broker) timerUnitAt(off int64) (int64, bool) {
	st := b.store
	off = max(off, st.MinOffsetInQueue(message.TopicWheelTimer, 0))
	if off >= st.MaxOffsetInQueue(message.TopicWheelTimer, 0) {
		return 0, false
	}
	return st.CommitLogOffsetOf(message.TopicWheelTimer, 0, off)
}

// evacuate re-stores the pending timer, delay-level and half messages
// stored below the commitlog offset below ahead (store.RetentionOptions.
// Evacuate; the reasoning is above). Timers go first: the delay-level
// copies are timer messages, stored at the commitlog's end. A holder whose
// put fails (the disk past its reserve) keeps the file for this round.
func (b *Broker) evacuate(below int64) {
	if !b.deliveryStarted.Load() {
		return // not started (or a SLAVE): nothing delivers
	}
	log := b.log.With().Int64("below", below).Logger()
	if t := b.timers; t != nil {
		if n, err := t.Evacuate(below, b.timerUnitAt); err != nil {
			log.Warn().Err(err).Int("restored", n).Msg("retention: pending timers not all re-stored; their file is kept")
		} else if n > 0 {
			log.Info().Int("restored", n).Msg("retention: pending timers re-stored ahead of a file deleted for space")
		}
		restore := func(ext *message.MessageExt, props message.Props, dueMs int64) error {
			_, err := b.store.PutMessage(timer.FromDelayLevel(ext, props, dueMs))
			return err
		}
		if n, err := b.sched.Evacuate(below, restore); err != nil {
			log.Warn().Err(err).Int("restored", n).Msg("retention: pending delay-level messages not all re-stored; their file is kept")
		} else if n > 0 {
			log.Info().Int("restored", n).Msg("retention: pending delay-level messages re-stored as timers ahead of a file deleted for space")
		}
	}
	b.tx.Evacuate(below)
}

// txSysGroup is the system group whose offsets are the transaction check
// walk's progress (transaction.txSysGroup).
const txSysGroup = message.GroupTransCheck

// timerRollWindow is the timer store's roll window: the configured one (0:
// half the wheel, as the timer store defaults), at most half of the
// reserved time, so that a pending timer is re-stored before retention
// could reach its commitlog copy.
func timerRollWindow(opts *Options) time.Duration {
	p := time.Duration(opts.TimerPrecisionMs) * time.Millisecond
	rw := time.Duration(opts.TimerRollWindowSlot) * p
	if rw == 0 {
		rw = time.Duration(timer.DefaultWheelSlots/2) * p
	}
	if limit := opts.retentionOptions().FileReservedTime / 2; rw > limit {
		rw = max(limit/p*p, p)
	}
	return rw
}
