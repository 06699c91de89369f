package brokerstats

import (
	"testing"
	"time"
)

var epoch = time.UnixMilli(1_700_000_000_000)

// TestItemWindows follows J4 StatsItem: a seed one period back, then one
// snapshot per period, the newest 7 (minute, hour) or 25 (day) kept.
func TestItemWindows(t *testing.T) {
	m := NewManager("C")
	for i := range 100 {
		now := epoch.Add(time.Duration(i) * time.Second)
		m.RecordPut("T", 2, 100) // 2 msgs, 100 bytes each second
		m.Tick(now)
	}
	put := m.TopicPut.Lookup(Key{Topic: "T"})
	// Samples at 0,10,...,90 s; the 7 newest span 30..90 s: 60 s, 120 msgs.
	if got := put.Minute(); got != (Snapshot{Sum: 120, Tps: 2, Avgpt: 2, Times: 60}) {
		t.Errorf("minute %+v", got)
	}
	if n := len(put.minute); n != minuteKeep {
		t.Errorf("kept %d minute snapshots", n)
	}
	// Hour: the seed at -600 s (zero) and the first sample at 0 s (2 msgs).
	if got := put.Hour(); got.Sum != 2 || got.Tps != 2.0/600 {
		t.Errorf("hour %+v", got)
	}
	if got := m.TopicSize.Lookup(Key{Topic: "T"}).Minute(); got.Sum != 6000 || got.Avgpt != 100 {
		t.Errorf("size minute %+v", got)
	}
	if got := m.BrokerPut.LookupText("C").Minute(); got.Sum != 120 {
		t.Errorf("broker put %+v", got)
	}
	var empty Item
	if got := empty.Minute(); got != (Snapshot{}) {
		t.Errorf("unsampled item %+v", got)
	}
}

func TestKeyText(t *testing.T) {
	m := NewManager("C")
	m.RecordGet("T", "G", 1, 10)
	m.RecordGetLatency("T", "G", 3, 5*time.Millisecond)
	m.RecordSendBack("T", "G")
	for _, c := range []struct {
		set  *Set
		text string
	}{{m.GroupGet, "T@G"}, {m.GroupSize, "T@G"}, {m.SendBack, "T@G"}, {m.GroupLatency, "3@T@G"}} {
		it := c.set.LookupText(c.text)
		if it == nil {
			t.Errorf("%s %q not found", c.set.Name(), c.text)
			continue
		}
		var keys []string
		c.set.Each(func(k Key, _ *Item) { keys = append(keys, c.set.KeyText(k)) })
		if len(keys) != 1 || keys[0] != c.text {
			t.Errorf("%s keys %q", c.set.Name(), keys)
		}
	}
	if it := m.GroupLatency.LookupText("3@T@G"); it.Value() != 5 {
		t.Errorf("latency %d", it.Value())
	}
	for _, bad := range []string{"T", "x@T@G", "3@T"} {
		if m.GroupLatency.LookupText(bad) != nil {
			t.Errorf("latency key %q found", bad)
		}
	}
	if m.Set("NOPE") != nil || m.Set(GroupGetNums) != m.GroupGet {
		t.Error("Set by name")
	}
	m.RemoveTopic("T")
	if m.GroupGet.LookupText("T@G") != nil || m.BrokerGet.LookupText("C") == nil {
		t.Error("RemoveTopic")
	}
}

// TestRecordDoesNotAllocate keeps the send and pull paths allocation-free
// once a key exists.
func TestRecordDoesNotAllocate(t *testing.T) {
	m := NewManager("C")
	topic, group := "TopicA", "GroupA"
	m.RecordPut(topic, 1, 1)
	m.RecordGet(topic, group, 1, 1)
	if n := testing.AllocsPerRun(1000, func() {
		m.RecordPut(topic, 1, 100)
		m.RecordGet(topic, group, 1, 100)
	}); n != 0 {
		t.Errorf("%.1f allocations per record", n)
	}
}

func BenchmarkRecordPut(b *testing.B) {
	m := NewManager("C")
	for i := range 1000 {
		m.RecordPut("Topic"+string(rune('A'+i%26))+string(rune('a'+i/26)), 1, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.RecordPut("TopicAa", 1, 200)
		}
	})
}

// A schedule delivery counts on the stock items as J4 does, and ScheduledPut
// tells that part apart for readers that count sends only.
func TestScheduleDeliveryIsTold(t *testing.T) {
	m := NewManager("C")
	m.RecordPut("T", 2, 200)
	m.RecordScheduleDelivery("T", 1, 150)
	if got := m.TopicPut.Lookup(Key{Topic: "T"}).Value(); got != 3 {
		t.Fatalf("TOPIC_PUT_NUMS %d", got)
	}
	if got := m.TopicSize.Lookup(Key{Topic: "T"}).Value(); got != 350 {
		t.Fatalf("TOPIC_PUT_SIZE %d", got)
	}
	if msgs, bytes := m.ScheduledPut("T"); msgs != 1 || bytes != 150 {
		t.Fatalf("ScheduledPut %d %d", msgs, bytes)
	}
	k := Key{Topic: "SCHEDULE_TOPIC_XXXX", Group: "SCHEDULE_CONSUMER"}
	if !IsScheduleGet(k) || IsScheduleGet(Key{Topic: "T", Group: "SCHEDULE_CONSUMER"}) {
		t.Fatal("IsScheduleGet")
	}
	if got := m.GroupGet.LookupText("SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER"); got == nil || got.Value() != 1 {
		t.Fatalf("GROUP_GET_NUMS of the schedule: %v", got)
	}
	if got := m.BrokerPut.Lookup(Key{Topic: "C"}).Value(); got != 3 {
		t.Fatalf("BROKER_PUT_NUMS %d", got)
	}
	m.RemoveTopic("T")
	if msgs, bytes := m.ScheduledPut("T"); msgs != 0 || bytes != 0 {
		t.Fatalf("after RemoveTopic: %d %d", msgs, bytes)
	}
}
