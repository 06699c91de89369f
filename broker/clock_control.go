package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

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
