package schedule

import (
	"reflect"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
)

// TestPendingByLevelAndLateness counts what each level still holds and the
// lateness of each delivery.
func TestPendingByLevelAndLateness(t *testing.T) {
	h := newHarness(t, t.TempDir(), clock.NewManual(t0))
	defer h.close()
	h.putDelayed("Orders", 2, "a") // 5 s
	h.putDelayed("Orders", 2, "b")
	h.putDelayed("Orders", 3, "c") // 10 s
	if got := h.svc.PendingByLevel(); len(got) != len(h.levels) || !reflect.DeepEqual(got[:4], []int64{0, 2, 1, 0}) {
		t.Fatalf("pending by level %v", got)
	}
	// Delivered 70 ms late.
	if _, _, err := h.svc.deliverDue(2, t0.Add(5*time.Second+70*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := h.svc.PendingByLevel(); !reflect.DeepEqual(got[:4], []int64{0, 0, 1, 0}) {
		t.Fatalf("after delivery %v", got)
	}
	s := h.svc.Deliveries().Lateness.Snapshot()
	// Buckets 1, 5, 10, 50, 100 ms: both land in (50, 100].
	if s.Count != 2 || s.Sum != 140 || s.Cumulative[3] != 0 || s.Cumulative[4] != 2 {
		t.Errorf("lateness %+v", s)
	}
	r := h.svc.Deliveries().Recent.List()
	if len(r) != 2 || r[0].Kind != "level 2" || r[0].Topic != "Orders" || r[0].MsgID != "Ub" || r[0].AtMs-r[0].DueMs != 70 {
		t.Errorf("recent %+v", r)
	}
}
