package timer

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

// phyOf returns the commitlog offset of the timer-topic record of m.
func (e *env) phyOf(m *message.Message) int64 {
	e.t.Helper()
	for _, r := range e.got(message.TopicWheelTimer) {
		if r.Properties[message.PropUniqKey] == m.Properties[message.PropUniqKey] {
			return r.PhysicalOffset
		}
	}
	e.t.Fatalf("%s not on the timer topic", m.Properties[message.PropUniqKey])
	return 0
}

// truncateCommitLog closes the store, zeroes the commitlog from phy on and
// reopens it with a forced verifying recovery, as after losing the tail.
func (e *env) truncateCommitLog(phy int64) {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "commitlog")
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		start, err := strconv.ParseInt(ent.Name(), 10, 64)
		if err != nil {
			continue
		}
		path := filepath.Join(dir, ent.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			e.t.Fatal(err)
		}
		if end := start + int64(len(b)); end > phy {
			clear(b[max(phy-start, 0):])
			os.WriteFile(path, b, 0o644)
		}
	}
	os.Remove(filepath.Join(e.dir, "checkpoint"))
	os.WriteFile(filepath.Join(e.dir, "abort"), nil, 0o644)
	e.openStore()
}

// TestTimer_Issue10668_StaleTimerLogAfterCommitLogTruncate: the commitlog loses
// its tail below records the TimerLog points at, and new messages reuse those
// offsets. The stale entries must be skipped (not delivered as the unrelated
// new messages, not retried forever), the checkpoint's queue offset clamped
// into the shrunken consume queue (upstream #7480), and both the surviving and
// the new timers must fire.
func TestTimer_Issue10668_StaleTimerLogAfterCommitLogTruncate(t *testing.T) {
	e := newEnv(t, nil)
	at := e.nowMs() + 10_000
	var a []*message.Message
	for i := 0; i < 5; i++ {
		a = append(a, e.sendAt("Orders", at))
	}
	e.settle()
	cut := e.phyOf(a[2])
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	e.cur.Store(nil)
	e.truncateCommitLog(cut)
	if got := e.st.MaxOffsetInQueue(message.TopicWheelTimer, 0); got != 2 {
		t.Fatalf("timer queue max after truncation = %d", got)
	}
	e.openTimer()
	if q := e.ts().Stats().QueueOffset; q != 2 {
		t.Fatalf("queue offset %d not clamped to the consume queue's 2", q)
	}
	var b []*message.Message
	for i := 0; i < 3; i++ {
		b = append(b, e.sendAt("Orders", at)) // same sizes: same offsets as a[2:]
	}
	e.settle()
	if e.phyOf(b[0]) != cut {
		t.Fatalf("new message at %d, not reusing %d", e.phyOf(b[0]), cut)
	}
	e.settle()
	e.advance(11 * time.Second)
	e.settle()
	counts := uniqCounts(e.got("Orders"))
	for _, m := range append(a[:2], b...) {
		if n := counts[m.Properties[message.PropUniqKey]]; n != 1 {
			t.Errorf("%s delivered %d times", m.Properties[message.PropUniqKey], n)
		}
	}
	if len(counts) != 5 {
		t.Errorf("delivered %v", counts)
	}
	if st := e.ts().Stats(); st.Skipped != 3 || st.Pending != 0 {
		t.Fatalf("stale entries: stats %+v", st)
	}
}

// TestTimer_Issue7480_CheckpointBeyondConsumeQueue: a checkpoint whose queue
// offset is past the end of the timer consume queue is clamped, so new timer
// messages are read (upstream #7480 lost them).
func TestTimer_Issue7480_CheckpointBeyondConsumeQueue(t *testing.T) {
	e := newEnv(t, nil)
	e.sendAt("Orders", e.nowMs()+1000)
	e.settle()
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	cf, ck, ok, err := openCheckpoint(nil, filepath.Join(e.dir, "config", "timercheck"))
	if err != nil || !ok {
		t.Fatal(err, ok)
	}
	ck.queueOffset = 1000
	if err := cf.write(ck); err != nil {
		t.Fatal(err)
	}
	cf.close()
	e.openTimer()
	if q := e.ts().Stats().QueueOffset; q != 1 {
		t.Fatalf("queue offset %d, want clamped to 1", q)
	}
	e.sendAt("Orders", e.nowMs()+500)
	e.settle()
	e.advance(time.Second)
	e.waitCount("Orders", 2)
}

// TestRecoverCorruptTimerLogAndWheel damages the TimerLog inside the
// checkpointed part, or the wheel file, or both checkpoint slots; the store
// must rebuild from what is left and deliver every message whose unit
// survived (and, without a checkpoint, everything: duplicates allowed).
func TestRecoverCorruptTimerLogAndWheel(t *testing.T) {
	tests := []struct {
		name      string
		damage    func(t *testing.T, e *env)
		wantLost  int // messages whose units were destroyed
		allowDups bool
	}{
		{name: "wheel garbage", damage: func(t *testing.T, e *env) {
			path := filepath.Join(e.dir, "timerwheel")
			b, _ := os.ReadFile(path)
			for i := range b {
				b[i] = byte(i*7 + 3)
			}
			os.WriteFile(path, b, 0o644)
		}},
		{name: "wheel deleted", damage: func(t *testing.T, e *env) { os.Remove(filepath.Join(e.dir, "timerwheel")) }},
		{name: "garbage after the checkpointed end", damage: func(t *testing.T, e *env) {
			seg := lastSegment(t, e)
			b, _ := os.ReadFile(seg)
			end := int(e.timerLogEnd() % int64(len(b)))
			for i := end; i < len(b); i++ {
				b[i] = 0xAB
			}
			os.WriteFile(seg, b, 0o644)
		}},
		{name: "torn unit inside the checkpointed part", damage: func(t *testing.T, e *env) {
			seg := lastSegment(t, e)
			b, _ := os.ReadFile(seg)
			end := int(e.timerLogEnd() % int64(len(b)))
			b[end-unitSize+20] ^= 0xFF // the last unit
			os.WriteFile(seg, b, 0o644)
		}, wantLost: 1},
		{name: "both checkpoint slots corrupt", damage: func(t *testing.T, e *env) {
			path := filepath.Join(e.dir, "config", "timercheck")
			b, _ := os.ReadFile(path)
			b[10] ^= 1
			b[checkpointSlotSize+10] ^= 1
			os.WriteFile(path, b, 0o644)
		}, allowDups: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MappedFileSizeTimerLog = 30 * unitSize })
			start := e.nowMs()
			var sent []*message.Message
			for i := 0; i < 40; i++ {
				sent = append(sent, e.sendAt("Orders", start+int64(500+i*100)))
			}
			e.settle()
			e.advance(1200 * time.Millisecond) // some delivered before the damage
			e.settle()
			if err := e.ts().Stop(); err != nil {
				t.Fatal(err)
			}
			e.cur.Store(nil)
			tc.damage(t, e)
			e.openTimer()
			e.settle()
			e.advance(10 * time.Second)
			e.settle()
			counts := uniqCounts(e.got("Orders"))
			lost := 0
			for _, m := range sent {
				switch n := counts[m.Properties[message.PropUniqKey]]; {
				case n == 0:
					lost++
				case n > 1 && !tc.allowDups:
					t.Errorf("%s delivered %d times", m.Properties[message.PropUniqKey], n)
				}
			}
			if lost != tc.wantLost {
				t.Fatalf("lost %d messages, want %d; delivered %v", lost, tc.wantLost, counts)
			}
		})
	}
}

func (e *env) timerLogEnd() int64 {
	_, ck, ok, err := openCheckpoint(nil, filepath.Join(e.dir, "config", "timercheck"))
	if err != nil || !ok {
		e.t.Fatal(err, ok)
	}
	return ck.flushPos
}

func lastSegment(t *testing.T, e *env) string {
	ents, err := os.ReadDir(filepath.Join(e.dir, "timerlog"))
	if err != nil || len(ents) == 0 {
		t.Fatal(err)
	}
	return filepath.Join(e.dir, "timerlog", ents[len(ents)-1].Name())
}

// TestGeometryChangeRebuildsWheel restarts with another precision and ring
// size: the wheel is rebuilt from the TimerLog (which holds exact times) and
// nothing is lost or early.
func TestGeometryChangeRebuildsWheel(t *testing.T) {
	e := newEnv(t, nil)
	start := e.nowMs()
	due := map[string]int64{}
	for i := 0; i < 30; i++ {
		m := e.sendAt("Rand", start+int64(300+i*137))
		due[m.Properties[message.PropUniqKey]] = start + int64(300+i*137)
	}
	e.settle()
	e.advance(time.Second)
	e.settle()
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	e.opts.PrecisionMs = 1000
	e.opts.WheelSlots = 500
	e.opts.RollWindow = 100 * time.Second
	e.openTimer()
	for i := 0; i < 10; i++ {
		e.settle()
		e.advance(457 * time.Millisecond)
		e.settle()
		checkDeliveries(t, e, due, false)
	}
	checkDeliveries(t, e, due, true)
}

// TestLongDowntime: the broker is down for longer than the ring spans. No
// slot may be skipped: the enqueue waits while the dequeue catches up, and
// every message arrives (late), once.
func TestLongDowntime(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.WheelSlots = 200 // 20 s ring
		o.RollWindow = 10 * time.Second
	})
	start := e.nowMs()
	var sent []*message.Message
	for i := 0; i < 20; i++ {
		sent = append(sent, e.sendAt("Orders", start+int64(1000+i*900)))
	}
	e.settle()
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	e.cur.Store(nil)
	e.advance(time.Minute) // three ring spans
	e.openTimer()
	late := e.sendAt("Orders", e.nowMs()+500) // enqueued while the wheel catches up
	e.settle()
	e.advance(time.Second)
	e.settle()
	counts := uniqCounts(e.got("Orders"))
	for _, m := range append(sent, late) {
		if n := counts[m.Properties[message.PropUniqKey]]; n != 1 {
			t.Errorf("%s delivered %d times", m.Properties[message.PropUniqKey], n)
		}
	}
}

// TestTimerLogSegmentsCleaned: segments no live slot needs are deleted, and a
// restart after cleaning still works.
func TestTimerLogSegmentsCleaned(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.MappedFileSizeTimerLog = 10 * unitSize
		o.CleanInterval = time.Second
	})
	for round := 0; round < 5; round++ {
		for i := 0; i < 20; i++ {
			e.sendAt("Orders", e.nowMs()+int64(100+i*10))
		}
		e.settle()
		e.advance(time.Second)
		e.settle()
	}
	e.advance(2 * time.Second)
	e.settle()
	// Cleaning follows a checkpoint (it only trusts durable progress); the
	// flush goroutine runs both on the clock, here they are called directly.
	if err := e.ts().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.ts().clean(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "timerlog")); len(ents) > 1 {
		t.Fatalf("%d segments left", len(ents))
	}
	e.restart()
	e.sendAt("Orders", e.nowMs()+100)
	e.settle()
	e.advance(time.Second)
	e.waitCount("Orders", 101)
}

// TestCorruptUnitBelowVerifiedTail damages a pending unit far below the
// checkpointed end, where open does not check units one by one: the broken
// slot is found by the wheel check, the wheel is rebuilt around the damaged
// unit (skipped and counted), and every other timer is still delivered once.
func TestCorruptUnitBelowVerifiedTail(t *testing.T) {
	const verifyTailBytes = 2 * unitSize
	e := newEnv(t, func(o *Options) { o.MappedFileSizeTimerLog, o.verifyTailBytes = 30*unitSize, verifyTailBytes })
	start := e.nowMs()
	var sent []*message.Message
	due := map[string]int64{}
	for i := 0; i < 40; i++ {
		at := start + int64(500+i*100)
		m := e.sendAt("Orders", at)
		sent = append(sent, m)
		due[m.Properties[message.PropUniqKey]] = at
	}
	e.settle()
	e.advance(1200 * time.Millisecond)
	e.settle()
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	e.cur.Store(nil)

	// Damage the unit of the message due at start+2500 (pending, in the
	// first segments, far below the end).
	victim := sent[20].Properties[message.PropUniqKey]
	dir := filepath.Join(e.dir, "timerlog")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	damaged := false
	for _, ent := range ents {
		path := filepath.Join(dir, ent.Name())
		b, _ := os.ReadFile(path)
		for off := 0; off+unitSize <= len(b) && !damaged; off += unitSize {
			if u, ok := decodeUnit(b[off:]); ok && u.target() == due[victim] {
				b[off+20] ^= 0xFF
				os.WriteFile(path, b, 0o644)
				damaged = true
			}
		}
	}
	if !damaged {
		t.Fatal("unit of the victim not found")
	}
	if end := e.timerLogEnd(); end < 5*verifyTailBytes {
		t.Fatalf("checkpointed end %d too close to the start for the test", end)
	}

	e.openTimer()
	e.settle()
	e.advance(10 * time.Second)
	e.settle()
	counts := uniqCounts(e.got("Orders"))
	for _, m := range sent {
		k := m.Properties[message.PropUniqKey]
		switch n := counts[k]; {
		case k == victim && n != 0:
			t.Errorf("the damaged unit's message was delivered %d times", n)
		case k != victim && n != 1:
			t.Errorf("%s delivered %d times, want once", k, n)
		}
	}
	if n := e.ts().c.skipped.Load(); n < 1 {
		t.Fatalf("skipped counter %d, want the damaged unit counted", n)
	}
}
