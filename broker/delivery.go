package broker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rmqio/rmq/broker/clockctl"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/timer"
)

// Delivery: what the broker does for the services that deliver later
// (delay levels, timer messages, transaction checks, POP revive):
//
//	next due       NextDue, DueReport: where delayed delivery stands
//	clock control  FastForward, CLOCK_FAST_FORWARD: the message clock moved
//	               ahead through every due time (package clockctl)
//	retention      what commitlog retention keeps for them, and re-stores
//	               ahead under disk pressure (protectedOffset, evacuate)

// ----- Next due -----

// NextDue tells a driver of Options.MessageClock (package rmqtest) where
// delayed delivery stands on that clock: busy while a delay level, timer
// message or transaction check pass due at its now is not done yet, or a
// stored message is not yet in its consume queue; else the earliest time
// one of them falls due (ok false: nothing is waiting). It only reads.
func (b *Broker) NextDue() (next time.Time, ok, busy bool) {
	next, ok, by := b.nextDue()
	return next, ok, by != ""
}

// DueReport says what NextDue waits for, with the figures of the delayed
// delivery services: for a driver that gave up waiting to explain why.
func (b *Broker) DueReport() string {
	next, ok, by := b.nextDue()
	s := fmt.Sprintf("message clock %s; ", b.msgClock.Now().Format(time.RFC3339Nano))
	switch {
	case by != "":
		s += "busy: " + by
	case ok:
		s += "next due " + next.Format(time.RFC3339Nano)
	default:
		s += "nothing waiting"
	}
	s += fmt.Sprintf("; dispatch behind %d", b.store.DispatchBehind())
	s += fmt.Sprintf("; schedule %+v, pending %d", b.sched.Stats(), b.sched.Pending())
	if b.timers != nil {
		s += fmt.Sprintf("; timers %+v", b.timers.Stats())
	}
	return s
}

// nextDue is NextDue with the name of what it is busy with ("": not busy).
func (b *Broker) nextDue() (next time.Time, ok bool, busyBy string) {
	// First: a message stored before this call is in its consume queue, where
	// the services below look for it.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (before)"
	}
	earliest := func(at time.Time) {
		if !ok || at.Before(next) {
			next, ok = at, true
		}
	}
	if at, has, busy := b.sched.NextDue(); busy {
		return time.Time{}, false, "delay levels"
	} else if has {
		earliest(at)
	}
	if b.timers != nil {
		if at, has, busy := b.timers.NextDue(); busy {
			return time.Time{}, false, "timer messages"
		} else if has {
			earliest(at)
		}
	}
	if at, has := b.tx.NextCheck(); has {
		if !at.After(b.msgClock.Now()) {
			return time.Time{}, false, "transaction check"
		}
		earliest(at)
	}
	// Then: a delivery finished after the checks above is dispatched too.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (after)"
	}
	// A POP message whose invisible time ended goes back to its retry topic
	// through the revive reader, which reads the trigger the timer store
	// delivered: stored before the timer check, so in the revive queue
	// once the dispatch check above passed. Last, the message it re-put is
	// dispatched too.
	if b.pop != nil && b.pop.ReviveBusy() {
		return time.Time{}, false, "pop revive"
	}
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (after pop)"
	}
	return next, ok, ""
}

// ----- Clock control -----

// Clock control (package clockctl): the message clock moved ahead on
// request, through every due time inside the jump, so that a test skips
// the wait for a delay level or a timer. The broker is the jump's Target:
// its message clock, its NextDue and its stop channel.

// clockTarget is the broker as a jump moves it.
func (b *Broker) clockTarget() clockctl.Target {
	return clockctl.Target{Clock: b.msgClock, Due: b, Stop: b.stop}
}

// FastForward moves the message clock d ahead, stepping through every due
// time inside the jump, and returns the message clock's time once
// everything due by now+d is stored on its topic and dispatched to its
// consume queue. settle (> 0) bounds the real-time wait at each step, ctx
// the whole jump; past either it returns a *clockctl.SettleError. It
// returns clockctl.ErrClockFixed when the clock cannot move. Jumps run one
// at a time; a second one waits for the first.
func (b *Broker) FastForward(ctx context.Context, d, settle time.Duration) (time.Time, error) {
	return b.clockCtl.FastForward(ctx, b.clockTarget(), d, settle)
}

// WaitSettled waits, without moving the clock, until nothing due at the
// message clock's now is left undelivered (NextDue not busy), and returns
// NextDue's next due time. settle (> 0) and ctx bound the wait in real time
// (a *clockctl.SettleError past them), and so does the broker's shutdown.
func (b *Broker) WaitSettled(ctx context.Context, settle time.Duration) (time.Time, bool, error) {
	return clockctl.WaitSettled(ctx, b.clockTarget(), settle)
}

// clockProcessors are the rmq-only clock requests.
func (b *Broker) clockProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{remoting.ClockFastForward: b.processClockFastForward}
}

// processClockFastForward serves CLOCK_FAST_FORWARD (remoting.ClockFastForward).
// Like every request but sends and pulls it runs on the worker pool
// (ServeRemoting), never on an event loop, and its wait is bounded by
// timeoutMs. With clockControlEnable off it is NO_PERMISSION, as the stock
// broker answers a request its configuration does not allow; with the ACL
// on it also needs an admin account. The jump is clockctl's (Serve).
func (b *Broker) processClockFastForward(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.opts.ClockControlEnable {
		return remoting.NewResponse(req, remoting.NoPermission,
			"clock control is off on this broker: start it with clockControlEnable=true to fast-forward its message clock")
	}
	if b.acl != nil {
		if ak, ok := b.acl.AdminCaller(c.RemoteAddr(), req); !ok {
			return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf(
				"fast-forward of the broker clock needs an admin account, but accessKey=%q is not one or is not signed", ak))
		}
	}
	return b.clockCtl.Serve(req, b.clockTarget(), b.log)
}

// ----- Retention -----

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
