package timer

import (
	"errors"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

var errInjectedCrash = errors.New("injected crash")

// crashPoints are the durability steps a crash is injected at.
var crashPoints = []string{
	"enqueue:after-append",   // TimerLog unit written, wheel not linked, queue offset not moved
	"enqueue:after-link",     // batch linked, before bypass deliveries
	"dequeue:after-deliver",  // deliveries stored, read cursor not moved
	"flush:begin",            // before the snapshot
	"flush:after-timerlog",   // TimerLog synced, wheel not written
	"flush:after-wheel",      // wheel written, delete set and checkpoint not
	"flush:after-deletes",    // delete set written, checkpoint not
	"flush:after-checkpoint", // checkpoint written
}

// TestCrashAtEachDurabilityStep kills the timer store at each durability step
// (the failpoint fires at its n-th hit), optionally losing everything not
// synced, restarts it, and checks that every message not recalled is
// delivered, none early, recalled ones never, and that duplicates are limited
// to the work done since the last completed checkpoint.
func TestCrashAtEachDurabilityStep(t *testing.T) {
	for _, point := range crashPoints {
		for _, powerLoss := range []bool{false, true} {
			name := point
			if powerLoss {
				name += "/power-loss"
			}
			t.Run(name, func(t *testing.T) { runCrash(t, point, powerLoss) })
		}
	}
}

func runCrash(t *testing.T, point string, powerLoss bool) {
	var (
		mu    sync.Mutex
		armed bool
		hits  int
		fired bool
	)
	e := newEnv(t, func(o *Options) {
		o.RollWindow = 3 * time.Second
		o.BatchSize = 4
		o.MappedFileSizeTimerLog = 20 * unitSize
		o.failpoint = func(name string) error {
			mu.Lock()
			defer mu.Unlock()
			if name == point && armed && !fired {
				hits++
				if hits == 2 {
					fired = true
					return errInjectedCrash
				}
			}
			return nil
		}
	})
	rng := rand.New(rand.NewSource(int64(len(point))))
	start := e.nowMs()
	due := map[string]int64{}
	recalled := map[string]bool{}
	var toRecall []*message.Message
	for i := 0; i < 80; i++ {
		var at int64
		switch i % 8 {
		case 0:
			at = start + 5000 + int64(rng.Intn(3000)) // rolled
		case 1:
			at = start - 1 // due at once, never enters the wheel
		default:
			at = start + int64(rng.Intn(4000))
		}
		m := e.sendAt("Crash", at)
		due[m.Properties[message.PropUniqKey]] = at
		if i%10 == 3 && at > start+500 {
			toRecall = append(toRecall, m)
		}
	}
	for _, m := range toRecall {
		if _, err := e.ts().Recall("Crash", handleOf(t, m), ""); err != nil {
			t.Fatal(err)
		}
		recalled[m.Properties[message.PropUniqKey]] = true
	}
	crashed := false
	var allowedDup int64
	for step := 0; step < 40; step++ {
		if step == 3 {
			mu.Lock()
			armed = true
			mu.Unlock()
		}
		if step < 30 {
			// Steady traffic racing with the flushes below, so every crash
			// point has unflushed work around it; some sends land in slots
			// already open, some are due at once.
			for i := 0; i < 3; i++ {
				now := e.nowMs()
				m := e.sendAt("Crash", now+int64(rng.Intn(4500))-300)
				at, err := strconv.ParseInt(m.Properties[message.PropTimerOutMs], 10, 64)
				if err != nil {
					at = now // stored on its topic at once
				}
				due[m.Properties[message.PropUniqKey]] = at
			}
		}
		if step%2 == 0 {
			if err := e.ts().Flush(); err != nil && !errors.Is(err, errCrashed) && !errors.Is(err, ErrClosed) {
				t.Fatal(err)
			}
		}
		if !crashed && settleOrDead(e) {
			crashed = true
			ts := e.ts()
			ts.kill()
			if powerLoss {
				loseUnsynced(ts.tl)
			}
			ts.closeFiles()
			// What the crash may redo: everything done since the progress
			// the last durable checkpoint covers.
			st := ts.Stats()
			allowedDup = st.Delivered + st.Rolled + st.Deleted - ts.durableCommitted
			e.openTimer()
		}
		e.settle()
		e.advance(time.Duration(200+rng.Intn(300)) * time.Millisecond)
	}
	if !crashed && point != "" {
		t.Fatalf("failpoint %s never fired (%d hits)", point, hits)
	}
	e.advance(20 * time.Second)
	e.settle()
	counts := uniqCounts(e.got("Crash"))
	dups := int64(0)
	for uk, at := range due {
		n := counts[uk]
		switch {
		case recalled[uk] && n != 0:
			t.Errorf("recalled %s delivered %d times", uk, n)
		case !recalled[uk] && n == 0:
			t.Errorf("%s due at %+d ms lost", uk, at-start)
		case n > 1:
			dups += int64(n - 1)
		}
	}
	for _, m := range e.got("Crash") {
		deq, err := strconv.ParseInt(m.Properties[message.PropTimerDequeueMs], 10, 64)
		if at := due[m.Properties[message.PropUniqKey]]; err == nil && deq < at {
			t.Errorf("%s delivered %d ms early", m.Properties[message.PropUniqKey], at-deq)
		}
	}
	if dups > allowedDup {
		t.Errorf("%d duplicates, but only %d deliveries happened after the last checkpoint's progress", dups, allowedDup)
	}
	t.Logf("delivered %d distinct, %d duplicates (bound %d)", len(counts), dups, allowedDup)
}

// settleOrDead waits for the timer store to settle; true means a failpoint
// killed it.
func settleOrDead(e *env) bool {
	e.t.Helper()
	e.waitFor("the timer store to settle or die", func() bool { return e.ts().dead.Load() || settled(e) })
	return e.ts().dead.Load()
}

// loseUnsynced zeroes every TimerLog byte not yet synced, as a power failure
// could.
func loseUnsynced(l *timerLog) {
	for _, s := range l.segs {
		if s.endPos() <= l.synced {
			continue
		}
		from := max(l.synced, s.start) - s.start
		clear(s.data[from:])
	}
}
