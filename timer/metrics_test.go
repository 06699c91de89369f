package timer

import (
	"reflect"
	"testing"
	"time"
)

// TestPendingByDueAndLateness buckets pending timers by due time and
// records each delivery's lateness.
func TestPendingByDueAndLateness(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	e.sendAt("PBD", now+500)       // within 1 s
	e.sendAt("PBD", now+5_000)     // within 10 s
	e.sendAt("PBD", now+6_000)     // within 10 s
	e.sendAt("PBD", now+3_600_000) // beyond 10 s
	e.settle()
	bounds := []time.Duration{time.Second, 10 * time.Second}
	if got := e.ts().PendingByDue(bounds); !reflect.DeepEqual(got, []int64{1, 2, 1}) {
		t.Fatalf("pending by due %v, want [1 2 1]", got)
	}
	e.advance(500 * time.Millisecond)
	e.waitCount("PBD", 1)
	e.settle()
	if got := e.ts().PendingByDue(bounds); !reflect.DeepEqual(got, []int64{0, 2, 1}) {
		t.Fatalf("after one delivery %v, want [0 2 1]", got)
	}
	d := e.ts().Deliveries()
	s := d.Lateness.Snapshot()
	if s.Count != 1 || s.Cumulative[0] != 1 {
		t.Errorf("lateness %+v, want one delivery on time", s)
	}
	if r := d.Recent.List(); len(r) != 1 || r[0].Topic != "PBD" || r[0].DueMs != now+500 || r[0].Kind != "timer" || r[0].MsgID == "" {
		t.Errorf("recent %+v", r)
	}
}
