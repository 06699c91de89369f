package clockctl

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
)

// fakeDue holds deliveries due at fixed times on clk. A delivery whose time
// came is busy once (as a broker's is until it stored and dispatched the
// message), then done: delivered records the clock at that moment.
type fakeDue struct {
	mu        sync.Mutex
	clk       clock.Clock
	due       []time.Time // ascending
	seenBusy  bool
	delivered []time.Time
	stuck     bool // always busy
}

func (f *fakeDue) NextDue() (time.Time, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stuck {
		return time.Time{}, false, true
	}
	now := f.clk.Now()
	for len(f.due) > 0 && !f.due[0].After(now) {
		if !f.seenBusy {
			f.seenBusy = true
			return time.Time{}, false, true
		}
		f.seenBusy = false
		f.delivered = append(f.delivered, now)
		f.due = f.due[1:]
	}
	if len(f.due) == 0 {
		return time.Time{}, false, false
	}
	return f.due[0], true, false
}

func (f *fakeDue) DueReport() string { return "fake" }

// TestFastForwardStepsThroughDueTimes: a jump over two due times stops at
// each (the clock there, give or take the real time a step takes) and ends
// d after its start.
func TestFastForwardStepsThroughDueTimes(t *testing.T) {
	off := clock.NewOffset(0)
	start := off.Now()
	due := []time.Time{start.Add(10 * time.Minute), start.Add(20 * time.Minute)}
	f := &fakeDue{clk: off, due: append([]time.Time(nil), due...)}
	var c Control
	at, err := c.FastForward(context.Background(), Target{Clock: off, Due: f, Stop: make(chan struct{})}, time.Hour, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.delivered) != 2 {
		t.Fatalf("delivered %v, want 2", f.delivered)
	}
	for i, d := range f.delivered {
		if late := d.Sub(due[i]); late < 0 || late > time.Second {
			t.Errorf("delivery %d at %v, due %v: %v late", i, d, due[i], late)
		}
	}
	if end := at.Sub(start); end < time.Hour || end > time.Hour+time.Second {
		t.Errorf("the jump ended %v after its start, want 1h", end)
	}
}

// TestFastForwardRefusals: a fixed clock is ErrClockFixed, a backward jump
// an error, a step whose deliveries never finish a SettleError (timeout),
// or (shutdown) when the broker stops.
func TestFastForwardRefusals(t *testing.T) {
	var c Control
	if _, err := c.FastForward(context.Background(), Target{Clock: clock.Real{}, Due: &fakeDue{}}, time.Hour, time.Second); !errors.Is(err, ErrClockFixed) {
		t.Fatalf("fixed clock: %v, want ErrClockFixed", err)
	}
	off := clock.NewOffset(0)
	if _, err := c.FastForward(context.Background(), Target{Clock: off, Due: &fakeDue{clk: off}}, -time.Second, time.Second); err == nil {
		t.Fatal("a backward jump was taken")
	}
	stuck := &fakeDue{clk: off, stuck: true}
	_, err := c.FastForward(context.Background(), Target{Clock: off, Due: stuck, Stop: make(chan struct{})}, time.Hour, 5*time.Millisecond)
	var se *SettleError
	if !errors.As(err, &se) || se.Cause != "timeout" || se.Report != "fake" {
		t.Fatalf("stuck deliveries: %v, want a timeout SettleError", err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, _, err := WaitSettled(context.Background(), Target{Clock: off, Due: stuck, Stop: stop}, 0); !errors.As(err, &se) || se.Cause != "shutdown" {
		t.Fatalf("stopped broker: %v, want a shutdown SettleError", err)
	}
}

// TestServeBounds: CLOCK_FAST_FORWARD's durationMs and timeoutMs outside
// their bounds are INVALID_PARAMETER; a jump already running is
// SYSTEM_BUSY; a good one answers the broker time and the clock offset.
func TestServeBounds(t *testing.T) {
	off := clock.NewOffset(0)
	tg := Target{Clock: off, Due: &fakeDue{clk: off}, Stop: make(chan struct{})}
	var c Control
	serve := func(f map[string]string) *remoting.Command {
		return c.Serve(remoting.NewRequest(remoting.ClockFastForward, f, nil), tg, zerolog.Nop())
	}
	for _, f := range []map[string]string{
		{"durationMs": "-1"},
		{"durationMs": strconv.FormatInt(MaxFastForward.Milliseconds()+1, 10)},
		{"durationMs": "1000", "timeoutMs": "0"},
		{"durationMs": "1000", "timeoutMs": strconv.FormatInt(MaxFastForwardTimeout.Milliseconds()+1, 10)},
	} {
		if r := serve(f); r.Code != remoting.InvalidParameter {
			t.Errorf("%v: code %d, want INVALID_PARAMETER", f, r.Code)
		}
	}
	c.mu.Lock()
	if r := serve(map[string]string{"durationMs": "1000"}); r.Code != remoting.SystemBusy {
		t.Errorf("during a jump: code %d, want SYSTEM_BUSY", r.Code)
	}
	c.mu.Unlock()
	// The offset is the jump less the real time it took (the wall clock
	// moved on meanwhile).
	r := serve(map[string]string{"durationMs": "60000"})
	offMs, _ := strconv.ParseInt(r.Ext()["clockOffsetMs"], 10, 64)
	if r.Code != remoting.Success || offMs < 59_000 || offMs > 60_000 || r.Ext()["brokerTime"] == "" {
		t.Fatalf("jump of 1 min: %v", r)
	}
}
