package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// settledNextDue waits until the broker's NextDue is not busy and returns
// its answer.
func settledNextDue(t *testing.T, tb *testBroker) (time.Time, bool) {
	t.Helper()
	var next time.Time
	var ok bool
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool {
		var busy bool
		next, ok, busy = tb.NextDue()
		return !busy
	}, "the broker to settle")
	return next, ok
}

// With a MessageClock, store timestamps and delayed delivery follow it while
// the broker's Clock (here the wall clock) keeps the rest; NextDue names
// each due time in turn and nothing once all is delivered.
func TestMessageClockAndNextDue(t *testing.T) {
	clk := clock.NewManual(coreEpoch)
	tb := startBroker(t, func(o *Options) { o.MessageClock = clk })
	tb.mustSend(sendArgs{topic: "MC", body: []byte("plain")})
	tb.mustSend(sendArgs{topic: "MC", body: []byte("d5"), props: coreProps("DELAY", "2")}) // 5 s
	deliverAt := coreEpoch.Add(time.Hour).UnixMilli()
	tb.mustSend(sendArgs{topic: "MC", body: []byte("t1h"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(deliverAt, 10))})

	plain := tb.messagesOn("MC", 0)
	if len(plain) != 1 || plain[0].StoreTimestamp != coreEpoch.UnixMilli() {
		t.Fatalf("stored %d messages, first at %d, want the message clock's %d", len(plain), plain[0].StoreTimestamp, coreEpoch.UnixMilli())
	}
	if d := time.Since(tb.stats.BootTime); d < 0 || d > time.Hour {
		t.Errorf("boot time %v is not on the wall clock", tb.stats.BootTime)
	}

	settled := func() (time.Time, bool) { t.Helper(); return settledNextDue(t, tb) }
	for _, want := range []time.Time{coreEpoch.Add(5 * time.Second), coreEpoch.Add(time.Hour)} {
		next, ok := settled()
		// The timer wheel names its slot first: the same time here.
		if !ok || !next.Equal(want) {
			t.Fatalf("NextDue = %v %v, want %v", next, ok, want)
		}
		// What a driver that gave up would print says the same.
		if r := tb.DueReport(); !strings.Contains(r, "next due "+want.Format(time.RFC3339Nano)) || !strings.Contains(r, "timers {") {
			t.Errorf("DueReport = %q, want the next due time %v and the timer figures", r, want)
		}
		clk.Set(next)
	}
	// The timer wheel's open slot closes at its end: one more wake.
	if next, ok := settled(); ok {
		if next.After(coreEpoch.Add(time.Hour + time.Second)) {
			t.Fatalf("NextDue = %v after every delivery", next)
		}
		clk.Set(next)
	}
	if next, ok := settled(); ok {
		t.Fatalf("NextDue = %v after every delivery and the slot's end", next)
	}
	if r := tb.DueReport(); !strings.Contains(r, "nothing waiting") {
		t.Errorf("DueReport = %q after every delivery, want \"nothing waiting\"", r)
	}
	got := tb.messagesOn("MC", 0)
	if len(got) != 3 || string(got[1].Body) != "d5" || string(got[2].Body) != "t1h" {
		t.Fatalf("topic holds %d messages", len(got))
	}
	if got[1].StoreTimestamp != coreEpoch.Add(5*time.Second).UnixMilli() || got[2].StoreTimestamp != deliverAt {
		t.Fatalf("delivered at %d and %d", got[1].StoreTimestamp, got[2].StoreTimestamp)
	}
}

// With the default deliverCoalesceMs (5), a delay-level message and a timer
// falling due 1 ms after one of their kind that was just delivered go out
// at the end of that round's 5 ms window, and NextDue names that time.
func TestDeliverCoalesceDefault(t *testing.T) {
	clk := clock.NewManual(coreEpoch)
	tb := startBroker(t, func(o *Options) { o.MessageClock = clk })
	timerAt := coreEpoch.Add(time.Hour)
	for i, body := range []string{"a", "b"} {
		clk.Set(coreEpoch.Add(time.Duration(i) * time.Millisecond))
		tb.mustSend(sendArgs{topic: "CO", body: []byte("d" + body), props: coreProps("DELAY", "2")}) // 5 s
		at := timerAt.Add(time.Duration(i) * time.Millisecond).UnixMilli()
		tb.mustSend(sendArgs{topic: "CO", body: []byte("t" + body), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(at, 10))})
	}
	var steps []time.Time
	for {
		next, ok := settledNextDue(t, tb)
		if !ok {
			break
		}
		if len(steps) > 10 {
			t.Fatalf("NextDue still names times after %v", steps)
		}
		steps = append(steps, next)
		clk.Set(next)
	}
	want := map[string]time.Time{
		"da": coreEpoch.Add(5 * time.Second), "db": coreEpoch.Add(5*time.Second + 5*time.Millisecond),
		"ta": timerAt, "tb": timerAt.Add(5 * time.Millisecond),
	}
	got := tb.messagesOn("CO", 0)
	if len(got) != len(want) {
		t.Fatalf("topic holds %d messages, want %d (steps %v)", len(got), len(want), steps)
	}
	for _, m := range got {
		if w := want[string(m.Body)]; m.StoreTimestamp != w.UnixMilli() {
			t.Errorf("%s delivered at %v, want %v (steps %v)", m.Body, time.UnixMilli(m.StoreTimestamp), w, steps)
		}
	}
}
