package timer

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

func handleOf(t *testing.T, m *message.Message) string {
	t.Helper()
	h, ok := IssueRecallHandle(m, "broker-a")
	if !ok {
		t.Fatalf("no recall handle for %v", m.Properties)
	}
	return h
}

func TestRecallBeforeDelivery(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	keep := e.sendAt("Orders", now+2000)
	gone := e.sendAt("Orders", now+2000)
	uk, err := e.ts().Recall("Orders", handleOf(t, gone), "pg")
	if err != nil || uk != gone.Properties[message.PropUniqKey] {
		t.Fatalf("Recall = %q, %v", uk, err)
	}
	e.settle()
	e.advance(3 * time.Second)
	e.settle()
	got := e.waitCount("Orders", 1)
	if len(got) != 1 || got[0].Properties[message.PropUniqKey] != keep.Properties[message.PropUniqKey] {
		t.Fatalf("delivered %v", uniqCounts(got))
	}
	st := e.ts().Stats()
	if st.Deleted != 1 || st.Markers != 1 || st.Delivered != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The marker is on the timer topic only, with the stock properties.
	markers := 0
	for _, m := range e.got(message.TopicWheelTimer) {
		if m.Properties[message.PropTimerDelUniqKey] != "" {
			markers++
			if m.Properties[message.PropTimerDelUniqKey] != "Orders+"+uk || m.Properties[message.PropTags] != RecallTag || m.Properties[message.PropProducerGroup] != "pg" ||
				m.Properties[message.PropRealTopic] != "Orders" || string(m.Body) != "0" {
				t.Fatalf("marker %v", m.Properties)
			}
		}
	}
	if markers != 1 {
		t.Fatalf("%d markers", markers)
	}
}

func TestRecallAfterDelivery(t *testing.T) {
	e := newEnv(t, nil)
	m := e.sendAt("Orders", e.nowMs()+1000)
	e.settle()
	e.advance(time.Second)
	e.waitCount("Orders", 1)
	e.settle()
	// Still inside the delivered message's slot: known from the delivered set.
	if _, err := e.ts().Recall("Orders", handleOf(t, m), ""); !errors.Is(err, ErrAlreadyDelivered) || !errors.Is(err, ErrRecallRefused) {
		t.Fatalf("recall in the slot: %v", err)
	}
	e.advance(5 * time.Second)
	e.settle()
	// Past the slot: known from the read time.
	if _, err := e.ts().Recall("Orders", handleOf(t, m), ""); !errors.Is(err, ErrAlreadyDelivered) {
		t.Fatalf("recall after the slot: %v", err)
	}
	if n := len(e.got("Orders")); n != 1 {
		t.Fatalf("%d deliveries", n)
	}
}

func TestRecallBadHandles(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	m := e.sendAt("Orders", now+5000)
	uk := m.Properties[message.PropUniqKey]
	tests := []struct {
		name    string
		topic   string
		handle  string
		wantBad bool // ErrBadRecallHandle as well as ErrRecallRefused
	}{
		{name: "garbage", topic: "Orders", handle: "%%%", wantBad: true},
		{name: "empty", topic: "Orders", handle: "", wantBad: true},
		{name: "other topic", topic: "Other", handle: EncodeRecallHandle("Orders", "broker-a", now+5001, uk)},
		{name: "other broker", topic: "Orders", handle: EncodeRecallHandle("Orders", "broker-b", now+5001, uk)},
		{name: "beyond the max delay", topic: "Orders", handle: EncodeRecallHandle("Orders", "broker-a", now+DefaultMaxDelaySec*1000+1, uk)},
		{name: "zero timestamp", topic: "Orders", handle: EncodeRecallHandle("Orders", "broker-a", 0, uk)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.ts().Recall(tc.topic, tc.handle, "")
			if !errors.Is(err, ErrRecallRefused) || errors.Is(err, ErrBadRecallHandle) != tc.wantBad {
				t.Fatalf("err = %v", err)
			}
		})
	}
	e.settle()
	e.advance(6 * time.Second)
	e.waitCount("Orders", 1)
	if st := e.ts().Stats(); st.Markers != 0 || st.DeleteMarkers != 0 {
		t.Fatalf("a refused recall stored a marker: %+v", st)
	}
}

func TestRecallAfterStop(t *testing.T) {
	e := newEnv(t, nil)
	m := e.sendAt("Orders", e.nowMs()+5000)
	ts := e.ts()
	if err := ts.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Recall("Orders", handleOf(t, m), ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	e.openTimer()
}

// TestRecallRolledMessage recalls a message due beyond the roll window: the
// marker and the target are in different slots, and the target is re-put
// (rolled) before it comes due.
func TestRecallRolledMessage(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.RollWindow = 10 * time.Second })
	now := e.nowMs()
	gone := e.sendAt("Orders", now+25_000)
	keep := e.sendAt("Orders", now+25_000)
	if _, err := e.ts().Recall("Orders", handleOf(t, gone), ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		e.settle()
		e.advance(time.Second)
		if i == 12 {
			e.restart() // the delete set survives in its file
		}
	}
	e.settle()
	got := e.got("Orders")
	if len(got) != 1 || got[0].Properties[message.PropUniqKey] != keep.Properties[message.PropUniqKey] {
		t.Fatalf("delivered %v", uniqCounts(got))
	}
	if got[0].Properties[message.PropTimerRollTimes] == "" {
		t.Fatal("the message was not rolled")
	}
}

// TestRecall_RustIssue9154_MarkerAfterLargeSameSlotBatch: a recall whose
// marker lands after a large batch due in the same slot still cancels its
// target (rocketmq-rust #9154 missed tombstones beyond the current batch).
func TestRecall_RustIssue9154_MarkerAfterLargeSameSlotBatch(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BatchSize = 64 })
	at := e.nowMs() + 3000
	target := e.sendAt("Flood", at)
	for i := 0; i < 1500; i++ {
		e.sendAt("Flood", at)
	}
	if _, err := e.ts().Recall("Flood", handleOf(t, target), ""); err != nil {
		t.Fatal(err)
	}
	e.settle()
	e.advance(3 * time.Second)
	got := e.waitCount("Flood", 1500)
	e.settle()
	got = e.got("Flood")
	if len(got) != 1500 || uniqCounts(got)[target.Properties[message.PropUniqKey]] != 0 {
		t.Fatalf("delivered %d, target %d times", len(got), uniqCounts(got)[target.Properties[message.PropUniqKey]])
	}
}

// TestRecallSurvivesCrash: a recall acknowledged just before a crash (no
// checkpoint since) still cancels: the marker is re-read from the consume
// queue.
func TestRecallSurvivesCrash(t *testing.T) {
	e := newEnv(t, nil)
	m := e.sendAt("Orders", e.nowMs()+2000)
	e.settle()
	if err := e.ts().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ts().Recall("Orders", handleOf(t, m), ""); err != nil {
		t.Fatal(err)
	}
	e.crashRestart()
	e.settle()
	e.advance(3 * time.Second)
	e.settle()
	if n := len(e.got("Orders")); n != 0 {
		t.Fatalf("recalled message delivered %d times", n)
	}
}

// TestRecallRaceWithDelivery recalls messages concurrently with their
// delivery: each message ends up either delivered or recalled, never both
// and never neither.
func TestRecallRaceWithDelivery(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BatchSize = 8 })
	now := e.nowMs()
	var msgs []*message.Message
	for i := 0; i < 300; i++ {
		msgs = append(msgs, e.sendAt("Race", now+1000+int64(i%7)))
	}
	e.settle()
	recalled := make([]bool, len(msgs))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, m := range msgs {
			_, err := e.ts().Recall("Race", handleOf(t, m), "")
			switch {
			case err == nil:
				recalled[i] = true
			case !errors.Is(err, ErrAlreadyDelivered):
				t.Errorf("recall %d: %v", i, err)
			}
		}
	}()
	e.advance(1003 * time.Millisecond)
	e.advance(10 * time.Millisecond)
	wg.Wait()
	e.settle()
	e.advance(time.Second)
	e.settle()
	counts := uniqCounts(e.got("Race"))
	for i, m := range msgs {
		n := counts[m.Properties[message.PropUniqKey]]
		if recalled[i] && n != 0 || !recalled[i] && n != 1 {
			t.Fatalf("message %d: recalled=%v delivered %d times", i, recalled[i], n)
		}
	}
	t.Logf("%d recalled, %d delivered", e.ts().Stats().Deleted, e.ts().Stats().Delivered)
}

func TestClientDeleteMarker(t *testing.T) {
	// A producer may send a delete marker itself (TIMER_DEL_UNIQKEY with a
	// future TIMER_DELIVER_MS), as stock allows.
	e := newEnv(t, nil)
	at := e.nowMs() + 2000
	m := e.sendAt("Orders", at)
	e.send("Orders", map[string]string{message.PropTimerDeliverMs: strconv.FormatInt(at+1, 10), message.PropTimerDelUniqKey: "Orders+" + m.Properties[message.PropUniqKey]})
	e.settle()
	e.advance(3 * time.Second)
	e.settle()
	if n := len(e.got("Orders")); n != 0 {
		t.Fatalf("%d delivered", n)
	}
	if _, err := e.trySend("Orders", map[string]string{message.PropTimerDeliverMs: "1", message.PropTimerDelUniqKey: "Orders+x"}); !errors.Is(err, ErrIllegal) {
		t.Fatalf("past marker: %v", err)
	}
}

// TestRecallMarkerGoesWhileIdle: a marker is kept a Java precision past its
// time (markerEnd) and dropped by the checkpoint after the read time passes
// that; with the next due message a minute away the dequeue is idle, and
// must still wake to move the read time past the marker's end, or the
// marker stays live (timerStatus's delete markers) until that message.
func TestRecallMarkerGoesWhileIdle(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	e.sendAt("Orders", now+60_000)
	gone := e.sendAt("Orders", now+2000)
	if _, err := e.ts().Recall("Orders", handleOf(t, gone), "pg"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	for range 10 { // past the marker's end (+1 s) and a few flush intervals, in steps
		e.advance(time.Second)
		e.settle()
	}
	// The checkpoint that prunes is written by the flush goroutine, which
	// the clock's last steps woke: poll for it.
	e.waitFor("the marker pruned", func() bool { return e.ts().Stats().DeleteMarkers == 0 })
	st := e.ts().Stats()
	if st.DeleteMarkers != 0 || st.Pending != 1 || st.Delivered != 0 || st.Deleted != 1 {
		t.Fatalf("stats %+v, want the recalled message deleted, its marker gone, the later one pending", st)
	}
}
