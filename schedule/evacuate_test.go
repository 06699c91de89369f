package schedule

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
)

// TestEvacuateCrashYieldsDuplicatesNeverLoss re-stores the first messages of
// a level (those below a commitlog offset) and kills the service at each
// step of the evacuation, as kill -9 would. The re-stores made before the
// kill are durable (the broker's are acknowledged store puts, here a list);
// delayOffset.json holds what was written. After reopening, the level
// delivers from its offset: every message reaches its topic or a copy,
// none is lost, copies are due at the level's time, and the duplicates are
// exactly the copies the offset did not cover yet. Without a kill there is
// no duplicate.
func TestEvacuateCrashYieldsDuplicatesNeverLoss(t *testing.T) {
	const n, moved = 10, 6
	for _, tc := range []struct {
		point string
		hit   int
	}{
		{"none", 0},
		{"evacuate:after-put", 1},
		{"evacuate:after-put", 3},
		{"evacuate:after-put", moved},
		{"evacuate:before-commit", 1},
	} {
		t.Run(tc.point+"/"+strconv.Itoa(tc.hit), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			hits := 0
			h := newHarnessWith(t, dir, clk, func(o *Options) {
				o.failpoint = func(name string) error {
					if name == tc.point {
						if hits++; hits == tc.hit {
							return errInjectedCrash
						}
					}
					return nil
				}
			})
			for i := range n {
				h.putDelayed("C", 5, strconv.Itoa(i)) // 1 min
			}
			below, ok := h.st.CommitLogOffsetOf(message.TopicSchedule, 4, moved)
			if !ok {
				t.Fatal("no unit at the level's offset", moved)
			}
			copies := map[string]int{}
			restore := func(ext *message.MessageExt, props message.Props, dueMs int64) error {
				if want := h.levels.DeliverAt(5, ext.StoreTimestamp); dueMs != want || props.Get(message.PropRealTopic) != "C" {
					t.Errorf("copy of %s due %d (want %d), REAL_TOPIC %q", ext.Body, dueMs, want, props.Get(message.PropRealTopic))
				}
				copies[string(ext.Body)]++
				return nil
			}
			got, err := h.svc.Evacuate(below, restore)
			if tc.point == "none" {
				if err != nil || got != moved {
					t.Fatalf("Evacuate: %d %v, want %d", got, err, moved)
				}
			} else if !errors.Is(err, errCrashed) {
				t.Fatalf("Evacuate at a failpoint: %d %v", got, err)
			}
			if err := h.svc.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := h.st.Close(); err != nil {
				t.Fatal(err)
			}

			h = newHarness(t, dir, clk)
			defer h.close()
			clk.Advance(time.Minute + time.Second)
			if _, idle, err := h.svc.deliverDue(5, clk.Now()); !idle || err != nil {
				t.Fatalf("deliverDue after reopening: idle %v err %v", idle, err)
			}
			counts := map[string]int{}
			for _, m := range h.deliveredAll("C") {
				counts[string(m.Body)]++
			}
			dups := 0
			for i := range n {
				b := strconv.Itoa(i)
				c := counts[b] + copies[b]
				if c == 0 {
					t.Fatalf("message %d lost", i)
				}
				if i >= moved && copies[b] != 0 {
					t.Fatalf("message %d, stored at or after the offset, was re-stored", i)
				}
				dups += c - 1
			}
			if tc.point == "none" && dups != 0 {
				t.Fatalf("%d duplicates without a crash", dups)
			}
			if tc.point != "none" && dups != len(copies) {
				t.Fatalf("%d duplicates after a crash with %d copies stored and none committed", dups, len(copies))
			}
		})
	}
}
