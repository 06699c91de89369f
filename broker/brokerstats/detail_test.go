package brokerstats

import (
	"testing"
	"time"
)

// TestDetailRecords: message sizes, request latencies, pull positions and
// DLQ sends once EnableDetail is on, none before.
func TestDetailRecords(t *testing.T) {
	m := NewManager("C")
	m.RecordPut("T", 2, 3000) // no detail yet
	if m.Detail() != nil {
		t.Fatal("detail before EnableDetail")
	}
	m.EnableDetail()
	d := m.Detail()
	m.EnableDetail()
	if m.Detail() != d {
		t.Fatal("a second EnableDetail replaced the first")
	}
	m.RecordPut("T", 2, 3000) // two messages of 1500 bytes
	m.RecordPut("U", 1, 100)
	if s := d.MessageSize.Get("U").Snapshot(); s.Count != 1 || s.Cumulative[0] != 1 {
		t.Errorf("message size of U %+v", s)
	}
	if s := d.MessageSize.Get("T").Snapshot(); s.Count != 2 || s.Sum != 3000 || s.Cumulative[0] != 0 || s.Cumulative[1] != 2 {
		t.Errorf("message size %+v", s)
	}
	d.RecordRPC(310, 0, 2*time.Millisecond)
	d.RecordRPC(310, 0, 50*time.Millisecond)
	d.RecordRPC(11, 19, time.Millisecond)
	got := map[[2]int32]uint64{}
	for _, r := range d.RPC() {
		got[[2]int32{r.Code, r.Response}] = r.Hist.Snapshot().Count
	}
	if got[[2]int32{310, 0}] != 2 || got[[2]int32{11, 19}] != 1 || len(got) != 2 {
		t.Errorf("rpc %v", got)
	}
	d.RecordPulled("T", "G", 1, 7)
	d.RecordPulled("T", "G", 1, 9)
	if it := d.Pulled.LookupText("1@T@G"); it == nil || it.Value() != 9 {
		t.Errorf("pulled %v", it)
	}
	d.RecordPop("T", "G", true, 2, 300)
	d.RecordPop("T", "G", true, 1, 100)
	d.RecordPop("T", "G", false, 1, 50)
	if c := d.PopOut.Get(PopKey{"T", "G", true}); c.Msgs.Load() != 3 || c.Bytes.Load() != 400 {
		t.Errorf("retry pops %d %d", c.Msgs.Load(), c.Bytes.Load())
	}
	if c := d.PopOut.Get(PopKey{"T", "G", false}); c.Msgs.Load() != 1 || c.Bytes.Load() != 50 {
		t.Errorf("pops %d %d", c.Msgs.Load(), c.Bytes.Load())
	}
	if n := testing.AllocsPerRun(100, func() {
		d.RecordPop("T", "G", true, 1, 10)
		m.RecordPut("T", 1, 100)
		d.RecordRPC(310, 0, time.Millisecond)
		d.RecordPulled("T", "G", 1, 10)
	}); n != 0 {
		t.Errorf("recording with detail allocates %.1f per call", n)
	}
}

// BenchmarkRecordWithDetail is the per-send and per-pull recording with
// metrics on: no allocation once the keys exist.
func BenchmarkRecordWithDetail(b *testing.B) {
	m := NewManager("C")
	m.EnableDetail()
	d := m.Detail()
	m.RecordPut("TopicA", 1, 200)
	m.RecordGet("TopicA", "GroupA", 1, 200)
	d.RecordRPC(310, 0, time.Millisecond)
	d.RecordPulled("TopicA", "GroupA", 0, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.RecordPut("TopicA", 1, 200)
		d.RecordRPC(310, 0, time.Millisecond)
		m.RecordGet("TopicA", "GroupA", 1, 200)
		d.RecordPulled("TopicA", "GroupA", 0, int64(i))
	}
}
