package timer

import (
	"reflect"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/store"
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

// TestEnqueueFigures: each timer message read into the wheel records, by
// real topic, how far ahead of its birth it is due (s), and the age of the
// last one read while that read is under 2 s old (TimerMessageStore's
// timerMessageSetLatency and getEnqueueBehindMillis).
func TestEnqueueFigures(t *testing.T) {
	clk := clock.NewManual(epoch) // the store's clock too: store times on the timer's timeline
	e := newEnvStore(t, func(o *store.Options) { o.Clock = clk }, func(o *Options) { o.Clock = clk })
	e.clk = clk
	now := e.nowMs()
	e.sendAt("SL1", now+90_000)    // 90 s ahead of its birth: (60, 600]
	e.sendAt("SL1", now+30_000)    // 30 s: first bucket
	e.sendAt("SL2", now+7_200_000) // 2 h: (3600, 43200]
	e.settle()
	got := map[string][]uint64{}
	sums := map[string]int64{}
	e.ts().SetLatency(func(topic string, h *histo.Histogram) {
		s := h.Snapshot()
		got[topic], sums[topic] = s.Cumulative, s.Sum
	})
	if !reflect.DeepEqual(got["SL1"], []uint64{1, 2, 2, 2, 2, 2}) || sums["SL1"] != 120 ||
		!reflect.DeepEqual(got["SL2"], []uint64{0, 0, 0, 1, 1, 1}) || sums["SL2"] != 7200 || len(got) != 2 {
		t.Fatalf("set latency %v sums %v", got, sums)
	}
	// Stored and read at the same instant: no latency; 1.5 s later the
	// last read is still recent, 2 s later it is not.
	if l := e.ts().Stats().EnqueueLatencyMs; l != 0 {
		t.Fatalf("enqueue latency %d right after the read", l)
	}
	e.advance(1500 * time.Millisecond)
	if l := e.ts().Stats().EnqueueLatencyMs; l != 1500 {
		t.Fatalf("enqueue latency %d 1.5 s after the read, want 1500", l)
	}
	e.advance(500 * time.Millisecond)
	if l := e.ts().Stats().EnqueueLatencyMs; l != 0 {
		t.Fatalf("enqueue latency %d 2 s after the read, want 0", l)
	}
}
