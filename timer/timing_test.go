package timer

import (
	"math/rand"
	"strconv"
	"testing"
	"time"
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
					due[m.Properties[PropUniqKey]] = at
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
		uk := m.Properties[PropUniqKey]
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
		if v, ok := m.Properties[PropDequeueMs]; ok {
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
