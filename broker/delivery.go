package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/timer"
)

// Delivery: what the broker does for the services that deliver later
// (delay levels, timer messages, transaction checks, POP revive):
//
//	next due       NextDue, DueReport: where delayed delivery stands
//	clock control  FastForward, CLOCK_FAST_FORWARD: the message clock moved
//	               ahead through every due time
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

// Clock control: the message clock (Options.MessageClock) moved ahead on
// request, so that a test skips the wait for a 30-minute delay level or a
// 2-hour timer. Go tests do it in-process (rmqtest.FastForward); tests in
// other languages send CLOCK_FAST_FORWARD (remoting.ClockFastForward,
// `rmq admin fastForward`, mqadmin fastForward) to a broker started with
// clockControlEnable=true. Both run FastForward below, so a jump behaves
// the same from either side.
//
// The message clock is then a clock.Offset: the wall clock plus an offset
// that only grows. A jump does not just add to the offset: what falls due
// inside it (delay levels, timer messages, POP invisible time through the
// timer store, transaction check passes) must be delivered in due order and
// never before its time on that clock, and a jump straight to the end would
// fire all of it at the end's time. So the clock steps from one due time to
// the next (NextDue), and at each it waits until the broker has stored and
// dispatched what is due there before it moves on.

// clockControl is the broker's state of clock control.
type clockControl struct {
	// mu makes jumps one at a time: two interleaved steppers would each
	// move the clock past what the other still waits for.
	mu sync.Mutex
}

// settlePoll is how often a jump looks at NextDue while deliveries are
// due: a jump waits for the broker's goroutines, which signal nothing.
const settlePoll = 200 * time.Microsecond

// Bounds of CLOCK_FAST_FORWARD's header.
const (
	// DefaultFastForwardTimeout bounds, in real time, a jump over the wire
	// whose request names no timeoutMs.
	DefaultFastForwardTimeout = 30 * time.Second
	// MaxFastForwardTimeout is the largest timeoutMs taken: the request
	// holds a worker of the pool that long at most.
	MaxFastForwardTimeout = 5 * time.Minute
	// MaxFastForward is the largest durationMs taken, a year: more is no
	// test's wait, and the offset must stay far from overflowing.
	MaxFastForward = 366 * 24 * time.Hour
)

// ErrClockFixed is FastForward on a broker whose message clock is not a
// clock.Offset: clockControlEnable is false, or the embedder gave a clock
// of its own.
var ErrClockFixed = errors.New("broker: the message clock cannot be moved (start the broker with clockControlEnable=true)")

// SettleError is a jump that gave up waiting for the deliveries due at one
// of its steps. The message clock stays where the jump had moved it.
type SettleError struct {
	At     time.Time     // the message clock when the jump gave up
	Waited time.Duration // real time waited at the step
	Cause  string        // "timeout", "cancelled" or "shutdown"
	Report string        // DueReport at that moment
}

func (e *SettleError) Error() string {
	return fmt.Sprintf("deliveries due at %s not done after %v (%s): %s",
		e.At.Format(time.RFC3339Nano), e.Waited.Round(time.Millisecond), e.Cause, e.Report)
}

// FastForward moves the message clock d ahead, stepping through every due
// time inside the jump as the comment above explains, and returns the
// message clock's time once everything due by now+d is stored on its topic
// and dispatched to its consume queue. settle (> 0) bounds the real-time
// wait at each step, ctx the whole jump; past either it returns a
// *SettleError. It returns ErrClockFixed when the clock cannot move.
// Jumps run one at a time; a second one waits for the first.
func (b *Broker) FastForward(ctx context.Context, d, settle time.Duration) (time.Time, error) {
	off, ok := b.msgClock.(*clock.Offset)
	if !ok {
		return time.Time{}, ErrClockFixed
	}
	if d < 0 {
		return off.Now(), fmt.Errorf("broker: fast-forward by %v: the clock only moves ahead", d)
	}
	b.clockCtl.mu.Lock()
	defer b.clockCtl.mu.Unlock()
	return b.fastForward(ctx, off, d, settle)
}

// fastForward is FastForward with clockCtl.mu held.
func (b *Broker) fastForward(ctx context.Context, off *clock.Offset, d, settle time.Duration) (time.Time, error) {
	target := off.Now().Add(d)
	for {
		next, ok, err := b.WaitSettled(ctx, settle)
		if err != nil {
			return off.Now(), err
		}
		if !ok || next.After(target) {
			break
		}
		off.Advance(next.Sub(off.Now()))
	}
	off.Advance(target.Sub(off.Now()))
	_, _, err := b.WaitSettled(ctx, settle)
	return off.Now(), err
}

// WaitSettled waits, without moving the clock, until nothing due at the
// message clock's now is left undelivered (NextDue not busy), and returns
// NextDue's next due time. settle (> 0) and ctx bound the wait in real time
// (a *SettleError past them), and so does the broker's shutdown.
func (b *Broker) WaitSettled(ctx context.Context, settle time.Duration) (time.Time, bool, error) {
	start := time.Now()
	var deadline <-chan time.Time
	if settle > 0 {
		t := time.NewTimer(settle)
		defer t.Stop()
		deadline = t.C
	}
	var poll *time.Timer
	for {
		next, ok, busy := b.NextDue()
		if !busy {
			return next, ok, nil
		}
		if poll == nil {
			poll = time.NewTimer(settlePoll)
			defer poll.Stop()
		} else {
			poll.Reset(settlePoll)
		}
		cause := ""
		select {
		case <-poll.C:
			continue
		case <-deadline:
			cause = "timeout"
		case <-ctx.Done():
			cause = "cancelled"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cause = "timeout"
			}
		case <-b.stop:
			cause = "shutdown"
		}
		return time.Time{}, false, &SettleError{At: b.msgClock.Now(), Waited: time.Since(start), Cause: cause, Report: b.DueReport()}
	}
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
// on it also needs an admin account. A jump already running makes it
// SYSTEM_BUSY rather than a second worker waiting behind it.
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
	hd, err := remoting.DecodeHeader[remoting.FastForwardRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	ms, timeoutMs := hd.DurationMs, DefaultFastForwardTimeout.Milliseconds()
	if hd.TimeoutMs != nil {
		timeoutMs = *hd.TimeoutMs
	}
	if ms < 0 || ms > MaxFastForward.Milliseconds() {
		return remoting.NewResponse(req, remoting.InvalidParameter,
			fmt.Sprintf("durationMs %d is illegal, it must be in [0, %d]", ms, MaxFastForward.Milliseconds()))
	}
	if timeoutMs <= 0 || timeoutMs > MaxFastForwardTimeout.Milliseconds() {
		return remoting.NewResponse(req, remoting.InvalidParameter,
			fmt.Sprintf("timeoutMs %d is illegal, it must be in [1, %d]", timeoutMs, MaxFastForwardTimeout.Milliseconds()))
	}
	off, ok := b.msgClock.(*clock.Offset)
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, ErrClockFixed.Error())
	}
	if !b.clockCtl.mu.TryLock() {
		return remoting.NewResponse(req, remoting.SystemBusy, "another fast-forward of the broker clock is running; retry when it has returned")
	}
	defer b.clockCtl.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutMs)*time.Millisecond)
	defer cancel()
	at, err := b.fastForward(ctx, off, time.Duration(ms)*time.Millisecond, 0)
	if err != nil {
		b.log.Warn().Err(err).Int64("durationMs", ms).Msg("clock control: fast-forward gave up")
		return remoting.NewResponse(req, remoting.SystemError, "fast-forward of the broker clock: "+err.Error())
	}
	b.log.Info().Int64("durationMs", ms).Time("brokerTime", at).Dur("offset", off.Offset()).Msg("clock control: fast-forwarded")
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.FastForwardResponseHeader{BrokerTime: at.UnixMilli(), ClockOffsetMs: off.Offset().Milliseconds()}).Encode(resp)
	return resp
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
