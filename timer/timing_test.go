package timer

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

// TestNeverEarlyRandomTimes sends messages due at random times (many on exact
// slot and second boundaries, some in the past, some beyond the roll window)
// while the clock moves in random steps, and checks after every step that no
// delivered message was due after the clock, and that everything due was
// delivered exactly once.
func TestNeverEarlyRandomTimes(t *testing.T) {
	for _, precision := range []int64{100, 1000} {
		t.Run("precision="+strconv.FormatInt(precision, 10), func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.PrecisionMs = precision
				o.WheelSlots = 120_000 / precision * 2 // 240 s ring
				o.RollWindow = 100 * time.Second
			})
			rng := rand.New(rand.NewSource(precision))
			due := map[string]int64{}
			for step := 0; step < 40; step++ {
				now := e.nowMs()
				for k := 0; k < 8; k++ {
					var at int64
					switch rng.Intn(5) {
					case 0: // exact slot boundary
						at = (now/precision + int64(rng.Intn(30))) * precision
					case 1: // exact second
						at = (now/1000 + int64(rng.Intn(5))) * 1000
					case 2: // past: delivered at once as a normal message
						at = now - int64(rng.Intn(5000))
					case 3: // beyond the roll window
						at = now + 100_000 + int64(rng.Intn(60_000))
					default:
						at = now + int64(rng.Intn(4000))
					}
					m := e.sendAt("Rand", at)
					due[m.Properties[message.PropUniqKey]] = at
				}
				e.settle()
				e.advance(time.Duration(rng.Intn(700)+1) * time.Millisecond)
				e.settle()
				checkDeliveries(t, e, due, false)
			}
			e.advance(200 * time.Second) // past everything, in one jump
			e.settle()
			e.advance(time.Second)
			e.settle()
			checkDeliveries(t, e, due, true)
		})
	}
}

// checkDeliveries asserts that every message on "Rand" was due by its
// dequeue time and by the clock, at most once, and (all) that every message
// due by now is there.
func checkDeliveries(t *testing.T, e *env, due map[string]int64, all bool) {
	t.Helper()
	now := e.nowMs()
	seen := map[string]bool{}
	for _, m := range e.got("Rand") {
		uk := m.Properties[message.PropUniqKey]
		at, ok := due[uk]
		if !ok {
			t.Fatalf("unknown message %s", uk)
		}
		if seen[uk] {
			t.Fatalf("%s delivered twice", uk)
		}
		seen[uk] = true
		if at > now {
			t.Fatalf("%s due at %d delivered at clock %d (%d ms early)", uk, at, now, at-now)
		}
		if v, ok := m.Properties[message.PropTimerDequeueMs]; ok {
			deq, _ := strconv.ParseInt(v, 10, 64)
			if deq < at {
				t.Fatalf("%s due at %d dequeued at %d", uk, at, deq)
			}
		}
	}
	for uk, at := range due {
		if at <= now && !seen[uk] {
			t.Fatalf("%s due at %d (clock %d) not delivered", uk, at, now)
		}
	}
	if all && len(seen) != len(due) {
		t.Fatalf("delivered %d of %d", len(seen), len(due))
	}
}

// TestTimer_RustIssue9154_ExactTickNeverEarly: a deliver time on an exact
// second or slot boundary is not delivered one tick early (stock's
// "target minus one precision" rounding plus reading slot T after T+p let
// rocketmq-rust deliver such messages early), for both precisions.
func TestTimer_RustIssue9154_ExactTickNeverEarly(t *testing.T) {
	for _, precision := range []int64{100, 1000} {
		t.Run("precision="+strconv.FormatInt(precision, 10), func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.PrecisionMs = precision
				o.WheelSlots = 1200
				o.RollWindow = time.Duration(600*precision) * time.Millisecond
			})
			second := (e.nowMs()/1000 + 2) * 1000
			tick := second + precision
			a := e.sendAt("Tick", second)
			b := e.sendAt("Tick", tick)
			for _, at := range []int64{second, tick} {
				e.settle()
				e.clk.Set(time.UnixMilli(at - 1))
				e.settle()
				for _, m := range e.got("Tick") {
					if due, _ := strconv.ParseInt(m.Properties[message.PropTimerOutMs], 10, 64); due >= at {
						t.Fatalf("due %d delivered at %d", due, at-1)
					}
				}
				e.clk.Set(time.UnixMilli(at))
			}
			got := e.waitCount("Tick", 2)
			for i, m := range []*message.Message{a, b} {
				if got[i].Properties[message.PropUniqKey] != m.Properties[message.PropUniqKey] {
					t.Fatal("order")
				}
			}
		})
	}
}

func TestStatsRatesAndLag(t *testing.T) {
	e := newEnv(t, nil)
	for round := 0; round < 3; round++ {
		for i := 0; i < 20; i++ {
			e.sendAt("Orders", e.nowMs()+int64(500+i*10))
		}
		e.settle()
		e.advance(time.Second)
		e.settle()
	}
	e.waitFor("rate samples", func() bool { st := e.ts().Stats(); return st.DequeueRate > 0 && st.EnqueueRate > 0 })
	st := e.ts().Stats()
	if st.Delivered != 60 || st.Enqueued != 60 || st.Pending != 0 || st.ReadLagMs != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Lag: messages due while nothing dequeues (opened, not started).
	for i := 0; i < 5; i++ {
		e.sendAt("Orders", e.nowMs()+100)
	}
	e.settle()
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	ts, err := Open(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.cur.Store(ts)
	e.advance(3 * time.Second)
	st = ts.Stats()
	if st.Pending != 5 || st.ReadLagMs < 2800 || st.ReadLagMs > 3000 {
		t.Fatalf("stats of a stalled wheel %+v", st)
	}
	ts.Start()
	e.waitCount("Orders", 65)
	e.settle()
	if st = ts.Stats(); st.ReadLagMs != 0 || st.Pending != 0 {
		t.Fatalf("after catching up %+v", st)
	}
}

func TestRateWindow(t *testing.T) {
	var r rateWindow
	if e, d := r.rates(1000, 5, 5); e != 0 || d != 0 {
		t.Fatal("rates without samples")
	}
	for i := int64(0); i < 15; i++ {
		r.add(i*1000, i*10, i*20)
	}
	// The oldest kept sample is at 5 s (10 kept): 10 s later 100 more enqueued.
	if e, d := r.rates(15_000, 150, 300); e != 10 || d != 20 {
		t.Fatalf("rates %v %v", e, d)
	}
}

// TestCoalescedRounds: with Coalesce, timers falling due within the window of
// a round that delivered wait for the window's end and go out together; one
// due when the window has passed goes out at its own millisecond; a flood due
// at once (more than a batch) goes out in one round; nothing goes out early.
func TestCoalescedRounds(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Coalesce = 5 * time.Millisecond })
	base := (e.nowMs()/1000+2)*1000 + 37 // inside a slot, not at its start
	for _, d := range []int64{0, 1, 3, 10, 100} {
		e.sendAt("Co", base+d)
	}
	flood := 3*DefaultBatchSize + 1
	for i := 0; i < flood; i++ {
		e.sendAt("Co", base+200)
	}
	e.settle()
	for _, c := range []struct {
		at    int64 // clock, ms after base
		want  int   // delivered by then
		sleep int64 // then the dequeue sleeps until base+sleep (0: not checked)
	}{
		{-1, 0, 0},
		{0, 1, 5},           // a first round: at its due time; +1 waits for the window's end
		{1, 1, 0},           // +1 and +3 are due inside the window of the round at +0
		{4, 1, 0},           //
		{5, 3, 10},          // both at the window's end, together; +10 is due as it ends
		{9, 3, 0},           //
		{10, 4, 0},          // at its own millisecond
		{99, 4, 0},          // quiet since +10
		{100, 5, 0},         // at its own millisecond
		{199, 5, 0},         // the flood is not due yet
		{200, 5 + flood, 0}, // all of it in one round, batch after batch
	} {
		e.advance(time.Duration(base+c.at-e.nowMs()) * time.Millisecond)
		e.settle()
		if n := len(e.got("Co")); n != c.want {
			t.Fatalf("at base%+d ms: %d delivered, want %d", c.at, n, c.want)
		}
		if c.at == 1 { // a driver of the clock (rmqtest) is told the window's end
			if next, ok, busy := e.ts().NextDue(); busy || !ok || next.UnixMilli() != base+5 {
				t.Fatalf("inside the window: NextDue = %v %v %v, want base+5", next, ok, busy)
			}
		}
		if c.sleep != 0 {
			e.waitFor(fmt.Sprintf("the dequeue to sleep until base%+d", c.sleep), func() bool {
				return e.clk.HasTimerAt(time.UnixMilli(base + c.sleep))
			})
		}
	}
	// When each went out (TIMER_DEQUEUE_MS), by due time.
	wantOut := map[int64]int64{0: 0, 1: 5, 3: 5, 10: 10, 100: 100, 200: 200}
	for _, m := range e.got("Co") {
		due, _ := strconv.ParseInt(m.Properties[message.PropTimerDeliverMs], 10, 64)
		deq, err := strconv.ParseInt(m.Properties[message.PropTimerDequeueMs], 10, 64)
		if err != nil || deq != base+wantOut[due-base] {
			t.Fatalf("%s due at base%+d went out at %q, want base%+d", m.Properties[message.PropUniqKey], due-base,
				m.Properties[message.PropTimerDequeueMs], wantOut[due-base])
		}
	}
}
