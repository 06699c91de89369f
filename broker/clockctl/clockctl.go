// Package clockctl moves a broker's message clock (broker
// Options.MessageClock) ahead on request, so that a test skips the wait for
// a 30-minute delay level or a 2-hour timer. Go tests do it in-process
// (rmqtest.FastForward, broker.FastForward); tests in other languages send
// CLOCK_FAST_FORWARD (remoting.ClockFastForward, `rmq admin fastForward`,
// mqadmin fastForward) to a broker started with clockControlEnable=true.
// Both run Control.FastForward's steps, so a jump behaves the same from
// either side.
//
// The message clock is then a clock.Offset: the wall clock plus an offset
// that only grows. A jump does not just add to the offset: what falls due
// inside it (delay levels, timer messages, POP invisible time through the
// timer store, transaction check passes) must be delivered in due order and
// never before its time on that clock, and a jump straight to the end would
// fire all of it at the end's time. So the clock steps from one due time to
// the next (Due.NextDue), and at each it waits until the broker has stored
// and dispatched what is due there before it moves on.
//
// The package knows the broker only as a Target: its message clock, its
// Due (what the delayed-delivery services wait for) and its stop channel.
package clockctl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// Due is where a broker's delayed delivery stands on its message clock.
type Due interface {
	// NextDue is busy while something due at the clock's now is not done
	// yet; else it is the earliest time something falls due (ok false:
	// nothing is waiting).
	NextDue() (next time.Time, ok, busy bool)
	// DueReport says what NextDue waits for, for a jump that gave up.
	DueReport() string
}

// Target is the broker a jump moves.
type Target struct {
	// Clock is the message clock; only a *clock.Offset can move.
	Clock clock.Clock
	Due   Due
	// Stop is closed when the broker shuts down: a wait ends.
	Stop <-chan struct{}
}

// Control is a broker's state of clock control; the zero value is ready.
type Control struct {
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

// FastForward moves t's message clock d ahead, stepping through every due
// time inside the jump as the package comment explains, and returns the
// message clock's time once everything due by now+d is stored on its topic
// and dispatched to its consume queue. settle (> 0) bounds the real-time
// wait at each step, ctx the whole jump; past either it returns a
// *SettleError. It returns ErrClockFixed when the clock cannot move.
// Jumps run one at a time; a second one waits for the first.
func (c *Control) FastForward(ctx context.Context, t Target, d, settle time.Duration) (time.Time, error) {
	off, ok := t.Clock.(*clock.Offset)
	if !ok {
		return time.Time{}, ErrClockFixed
	}
	if d < 0 {
		return off.Now(), fmt.Errorf("broker: fast-forward by %v: the clock only moves ahead", d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return fastForward(ctx, t, off, d, settle)
}

// fastForward is FastForward with mu held.
func fastForward(ctx context.Context, t Target, off *clock.Offset, d, settle time.Duration) (time.Time, error) {
	target := off.Now().Add(d)
	for {
		next, ok, err := WaitSettled(ctx, t, settle)
		if err != nil {
			return off.Now(), err
		}
		if !ok || next.After(target) {
			break
		}
		off.Advance(next.Sub(off.Now()))
	}
	off.Advance(target.Sub(off.Now()))
	_, _, err := WaitSettled(ctx, t, settle)
	return off.Now(), err
}

// WaitSettled waits, without moving the clock, until nothing due at the
// message clock's now is left undelivered (NextDue not busy), and returns
// NextDue's next due time. settle (> 0) and ctx bound the wait in real time
// (a *SettleError past them), and so does the broker's shutdown.
func WaitSettled(ctx context.Context, t Target, settle time.Duration) (time.Time, bool, error) {
	start := time.Now()
	var deadline <-chan time.Time
	if settle > 0 {
		tm := time.NewTimer(settle)
		defer tm.Stop()
		deadline = tm.C
	}
	var poll *time.Timer
	for {
		next, ok, busy := t.Due.NextDue()
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
		case <-t.Stop:
			cause = "shutdown"
		}
		return time.Time{}, false, &SettleError{At: t.Clock.Now(), Waited: time.Since(start), Cause: cause, Report: t.Due.DueReport()}
	}
}

// Serve answers a CLOCK_FAST_FORWARD the broker let through (clock
// control on, the caller an admin where the ACL runs): its header's bounds,
// then the jump, bounded by timeoutMs. A jump already running makes it
// SYSTEM_BUSY rather than a second worker waiting behind it.
func (c *Control) Serve(req *remoting.Command, t Target, log zerolog.Logger) *remoting.Command {
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
	off, ok := t.Clock.(*clock.Offset)
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, ErrClockFixed.Error())
	}
	if !c.mu.TryLock() {
		return remoting.NewResponse(req, remoting.SystemBusy, "another fast-forward of the broker clock is running; retry when it has returned")
	}
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeoutMs)*time.Millisecond)
	defer cancel()
	at, err := fastForward(ctx, t, off, time.Duration(ms)*time.Millisecond, 0)
	if err != nil {
		log.Warn().Err(err).Int64("durationMs", ms).Msg("clock control: fast-forward gave up")
		return remoting.NewResponse(req, remoting.SystemError, "fast-forward of the broker clock: "+err.Error())
	}
	log.Info().Int64("durationMs", ms).Time("brokerTime", at).Dur("offset", off.Offset()).Msg("clock control: fast-forwarded")
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.FastForwardResponseHeader{BrokerTime: at.UnixMilli(), ClockOffsetMs: off.Offset().Milliseconds()}).Encode(resp)
	return resp
}
