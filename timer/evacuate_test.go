package timer

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

// queueUnitAt is the broker's RetainFrom and Evacuate argument over e's store.
func (e *env) queueUnitAt(off int64) (int64, bool) {
	off = max(off, e.st.MinOffsetInQueue(message.TopicWheelTimer, 0))
	if off >= e.st.MaxOffsetInQueue(message.TopicWheelTimer, 0) {
		return 0, false
	}
	return e.st.CommitLogOffsetOf(message.TopicWheelTimer, 0, off)
}

// TestEvacuate rolls the pending timers stored below a commitlog offset at
// once (issue 42), one due within the roll window and one beyond it among
// them, and kills the store after the k-th copy, as kill -9 would. Without a
// kill, RetainFrom no longer needs anything below the offset and every
// timer is delivered once, at its time; after a kill each is delivered at
// least once, never before its time, and the duplicates are the copies
// made before the kill (the old entries still find their records).
func TestEvacuate(t *testing.T) {
	for _, kill := range []int{0, 1, 3} {
		t.Run("kill-after-"+strconv.Itoa(kill), func(t *testing.T) {
			var mu sync.Mutex
			hits := 0
			e := newEnv(t, func(o *Options) {
				o.failpoint = func(name string) error {
					mu.Lock()
					defer mu.Unlock()
					if name == "evacuate:after-put" {
						if hits++; hits == kill {
							return errors.New("killed")
						}
					}
					return nil
				}
			})
			start := e.nowMs()
			dues := []int64{start + 5_000, start + 12_000, start + 30_000, start + 90_000} // the last beyond the 60 s roll window
			for _, d := range dues {
				e.sendAt("EvT", d)
			}
			e.advance(200 * time.Millisecond)
			e.settle()
			below := e.st.MaxPhyOffset()
			n, err := e.ts().Evacuate(below, e.queueUnitAt)
			if kill == 0 {
				if err != nil || n != len(dues) {
					t.Fatalf("Evacuate: %d %v, want %d", n, err, len(dues))
				}
				e.advance(time.Second) // a checkpoint covers the copies' enqueue
				e.settle()
				e.waitFor("nothing below the evacuated offset retained", func() bool {
					low, ok := e.ts().RetainFrom(e.queueUnitAt)
					return !ok || low >= below
				})
			} else {
				if !errors.Is(err, errCrashed) || n != kill {
					t.Fatalf("Evacuate killed at copy %d: %d %v", kill, n, err)
				}
				e.crashRestart()
			}
			for now := e.nowMs(); now <= start+95_000; now += 1000 {
				e.clk.Set(time.UnixMilli(now))
				e.settle()
				for _, m := range e.got("EvT") {
					due, _ := strconv.ParseInt(m.Properties[message.PropTimerDeliverMs], 10, 64)
					deq, _ := strconv.ParseInt(m.Properties[message.PropTimerDequeueMs], 10, 64)
					if deq < due || deq > now {
						t.Fatalf("timer due %d delivered at %d (clock %d)", due, deq, now)
					}
				}
			}
			counts := uniqCounts(e.got("EvT"))
			dups := 0
			for i := range dues {
				c := counts["UK"+leftPad(i+1)]
				if c == 0 {
					t.Fatalf("timer %d lost: %v", i, counts)
				}
				dups += c - 1
			}
			if dups != kill {
				t.Fatalf("%d duplicates with %d copies made before the kill: %v", dups, kill, counts)
			}
		})
	}
}

func leftPad(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 8 {
		s = "0" + s
	}
	return s
}
