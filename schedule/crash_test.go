package schedule

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

var errInjectedCrash = errors.New("injected crash")

// TestCrashDuplicatesAreBoundedByTheBatchInFlight kills the service at each
// durability step of a delivery (the failpoint fires at its n-th hit), as
// kill -9 would: the commitlog keeps what was stored, delayOffset.json only
// what was written. After reopening, every message is delivered, and the
// copies delivered twice are at most the batch in flight at the kill
// (deliverBatch), not everything since the last periodic persist.
func TestCrashDuplicatesAreBoundedByTheBatchInFlight(t *testing.T) {
	const n = 150
	for _, tc := range []struct {
		point string
		hit   int
	}{
		{"deliver:after-put", 1},
		{"deliver:after-put", deliverBatch},
		{"deliver:after-put", deliverBatch + 1},
		{"deliver:after-put", 100},
		{"deliver:after-put", n},
		{"deliver:before-commit", 1},
		{"deliver:before-commit", 3},
	} {
		t.Run(tc.point+"/"+strconv.Itoa(tc.hit), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			// puts counts deliveries stored, committed those covered by a
			// commit that went ahead.
			hits, puts, committed := 0, 0, 0
			h := newHarnessWith(t, dir, clk, func(o *Options) {
				o.failpoint = func(name string) error {
					if name == "deliver:after-put" {
						puts++
					}
					if name == tc.point {
						if hits++; hits == tc.hit {
							return errInjectedCrash
						}
					}
					if name == "deliver:before-commit" {
						committed = puts
					}
					return nil
				}
			})
			for i := range n {
				h.putDelayed("C", 1, strconv.Itoa(i))
			}
			clk.Advance(time.Second)
			if _, _, err := h.svc.deliverDue(1, clk.Now()); !errors.Is(err, errCrashed) {
				t.Fatalf("deliverDue before the crash: %v", err)
			}
			deliveredBefore := puts
			// The killed service writes nothing more; the store keeps its bytes.
			if err := h.svc.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := h.st.Close(); err != nil {
				t.Fatal(err)
			}

			h = newHarness(t, dir, clk)
			defer h.close()
			if _, idle, err := h.svc.deliverDue(1, clk.Now()); !idle || err != nil {
				t.Fatalf("deliverDue after the crash: idle %v err %v", idle, err)
			}
			counts := map[string]int{}
			for _, m := range h.deliveredAll("C") {
				counts[string(m.Body)]++
			}
			dups := 0
			for i := range n {
				c := counts[strconv.Itoa(i)]
				if c == 0 {
					t.Fatalf("message %d lost", i)
				}
				dups += c - 1
			}
			if dups != deliveredBefore-committed || dups > deliverBatch {
				t.Fatalf("%d duplicates after a crash with %d delivered and %d committed, want %d, at most %d (one batch)",
					dups, deliveredBefore, committed, deliveredBefore-committed, deliverBatch)
			}
			t.Logf("delivered before the crash %d, duplicated %d", deliveredBefore, dups)
		})
	}
}

// deliveredAll returns every message stored on topic queue 1, across
// consume-queue files.
func (h *harness) deliveredAll(topic string) []*message.MessageExt {
	h.t.Helper()
	h.delivered(topic) // waits for the dispatch
	var out []*message.MessageExt
	for off := int64(0); ; {
		res := h.st.GetMessage(topic, 1, off, 1000, 64<<20, nil)
		if res.Status != store.Found {
			return out
		}
		for _, raw := range res.Messages {
			ext, err := message.DecodeRecord(raw)
			if err != nil {
				h.t.Fatal(err)
			}
			out = append(out, ext)
		}
		off = res.NextBeginOffset
	}
}
