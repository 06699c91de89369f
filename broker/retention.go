package broker

import (
	"math"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/timer"
)

// What commitlog retention must not delete (store.RetentionOptions.
// ProtectedOffset). The choice per kind of pending message:
//
//   - delay levels (SCHEDULE_TOPIC_XXXX): the file is kept. Each level's
//     undelivered messages start at its delivery offset; the longest stock
//     level is 2 h, far inside any reserved time.
//   - timers (rmq_sys_wheel_timer): re-stored ahead of deletion. The roll
//     window is at most half of fileReservedTime (timerRollWindow), so a
//     pending timer's commitlog copy is never older than that; and the
//     files from the oldest message a live wheel slot references (or the
//     first timer message not enqueued, per the durable timer checkpoint)
//     are kept, which also covers forced rounds inside the reserved time.
//   - undecided half messages (RMQ_SYS_TRANS_HALF_TOPIC) and the op queue
//     the decided set is rebuilt from: the file is kept from the check
//     walk's progress on (CID_RMQ_SYS_TRANS offsets). The check gives up on
//     a half message after transactionCheckMax checks, and the walk moves on.
//   - consumer groups: expired files go whatever the groups' offsets, as in
//     stock (a consumer that falls behind retention gets OFFSET_TOO_SMALL
//     and resumes at the new minimum). A forced round (disk over
//     diskSpaceCleanForciblyRatio) deletes files inside the reserved time
//     only below every group's committed offset: what a group has not
//     consumed within its retention is kept, and the broker refuses sends
//     (disk full) rather than lose it.
func (b *Broker) protectedOffset(forced bool) int64 {
	if !b.retentionReady.Load() {
		return 0
	}
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
	if s := b.schedLive.Load(); s != nil {
		offs := s.Offsets()
		for _, qid := range st.QueueIDs(message.TopicSchedule) {
			keep(message.TopicSchedule, qid, offs[int(qid)+1])
		}
	}
	if t := b.timersLive.Load(); t != nil {
		unitAt := func(off int64) (int64, bool) {
			off = max(off, st.MinOffsetInQueue(message.TopicWheelTimer, 0))
			if off >= st.MaxOffsetInQueue(message.TopicWheelTimer, 0) {
				return 0, false
			}
			return st.CommitLogOffsetOf(message.TopicWheelTimer, 0, off)
		}
		if phy, ok := t.RetainFrom(unitAt); ok && phy < low {
			low = phy
		}
	}
	txWalked := map[string]bool{}
	b.clients.Offsets.Each(func(group, topic string, qid int32, off int64) {
		switch {
		case topic == message.TopicTransHalf || topic == message.TopicTransOpHalf:
			txWalked[topic] = true
			keep(topic, qid, off)
		case forced && group != txSysGroup:
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

// txSysGroup is the system group whose offsets are the transaction check
// walk's progress (transaction.txSysGroup).
const txSysGroup = "CID_RMQ_SYS_TRANS"

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
