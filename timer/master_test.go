package timer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqio/rmq/store"
)

// slaveEnv is an env whose timer store does not deliver: the timer queue
// holds timers it never read, as on a slave whose store replication wrote.
// sends are four timers: a, b (due before the master's read time, read by
// the master), c (read by the master, due after it) and d (stored after
// what the master read).
func slaveEnv(t *testing.T) (e *env, master StockCheckpoint) {
	e = newEnv(t, nil)
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	now := e.nowMs()
	e.sendAt("A", now+1000)
	e.sendAt("B", now+2000)
	e.sendAt("C", now+5000)
	e.sendAt("D", now+1000)
	e.waitFor("the timer queue", func() bool { return e.st.DispatchBehind() == 0 })
	return e, StockCheckpoint{LastReadTimeMs: now + 3000, MasterTimerQueueOffset: 3, DataVersion: DataVersion{Timestamp: now, Counter: 5}}
}

// openHeld opens the timer store of e without starting it (a slave's).
func openHeld(e *env) *TimerStore {
	e.t.Helper()
	ts, err := Open(e.opts)
	if err != nil {
		e.t.Fatalf("timer.Open: %v", err)
	}
	e.cur.Store(ts)
	return ts
}

// deliveredOnce waits until the store settles and checks which topics got
// their message (once) and which none.
func deliveredOnce(e *env, want, none []string) {
	e.t.Helper()
	for _, topic := range want {
		e.waitCount(topic, 1)
	}
	e.settle()
	for _, topic := range want {
		if n := len(e.got(topic)); n != 1 {
			e.t.Fatalf("%s delivered %d times", topic, n)
		}
	}
	for _, topic := range none {
		if n := len(e.got(topic)); n != 0 {
			e.t.Fatalf("%s, delivered by the master, delivered again (%d)", topic, n)
		}
	}
}

// A slave that copied its master's checkpoint and then starts as master
// does not deliver again what the master had delivered (read by it and due
// before its read time); the rest is delivered once. Without the copy
// (TestMasterCopyNotReplicated) every one is delivered.
func TestMasterCopyTakeover(t *testing.T) {
	e, master := slaveEnv(t)
	ts := openHeld(e)
	if err := ts.CopyMaster(master, e.st.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	got := ts.StockCheckpoint()
	if got.LastReadTimeMs != master.LastReadTimeMs || got.MasterTimerQueueOffset != 3 || got.DataVersion != master.DataVersion ||
		got.LastTimerQueueOffset != 0 {
		t.Fatalf("slave answers %+v, copied %+v", got, master)
	}
	e.advance(10 * time.Second)
	ts.Start()
	deliveredOnce(e, []string{"C", "D"}, []string{"A", "B"})
	if st := ts.Stats(); st.MasterDelivered != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Delivering, it answers its own progress.
	if err := ts.Flush(); err != nil {
		t.Fatal(err)
	}
	if own := ts.StockCheckpoint(); own.MasterTimerQueueOffset != 4 || own.LastTimerQueueOffset != 4 || own.LastReadTimeMs <= master.LastReadTimeMs {
		t.Fatalf("master answers %+v", own)
	}
}

// The copy is kept in config/timermaster: a slave restarted as master after
// the copy skips the same.
func TestMasterCopySurvivesRestart(t *testing.T) {
	e, master := slaveEnv(t)
	ts := openHeld(e)
	if err := ts.CopyMaster(master, e.st.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	if err := ts.Stop(); err != nil {
		t.Fatal(err)
	}
	ts = openHeld(e)
	if got := ts.StockCheckpoint(); got.LastReadTimeMs != master.LastReadTimeMs || got.MasterTimerQueueOffset != 3 {
		t.Fatalf("restarted slave answers %+v", got)
	}
	e.advance(10 * time.Second)
	ts.Start()
	deliveredOnce(e, []string{"C", "D"}, []string{"A", "B"})
}

// Copied progress ahead of what the slave holds (the master's commitlog past
// this store's end) is answered but not used: everything is delivered
// (duplicates rather than a loss of deliveries not replicated yet). Once
// replication catches up, a later copy, or the takeover, adopts it.
func TestMasterCopyNotReplicated(t *testing.T) {
	e, master := slaveEnv(t)
	ts := openHeld(e)
	if err := ts.CopyMaster(master, e.st.MaxPhyOffset()+1); err != nil {
		t.Fatal(err)
	}
	if got := ts.StockCheckpoint(); got.LastReadTimeMs != master.LastReadTimeMs {
		t.Fatalf("slave answers %+v", got)
	}
	// The master's queue offset beyond the slave's queue: not adopted either.
	ahead := master
	ahead.MasterTimerQueueOffset = 9
	if err := ts.CopyMaster(ahead, 0); err != nil {
		t.Fatal(err)
	}
	e.advance(10 * time.Second)
	ts.Start()
	deliveredOnce(e, []string{"A", "B", "C", "D"}, nil)
	if st := ts.Stats(); st.MasterDelivered != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// An acting master (held dequeue, enqueue running) that copied the master's
// progress adopts it when it starts delivering (SetDequeue(true)), here
// once the store holds the master's commitlog end named by the copy.
func TestMasterCopyActingMaster(t *testing.T) {
	e, master := slaveEnv(t)
	ts := openHeld(e)
	ts.SetDequeue(false)
	ts.Start()
	need := e.st.MaxPhyOffset() + 1
	if err := ts.CopyMaster(master, need); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the enqueue", func() bool { return ts.Stats().Enqueued == 4 })
	e.sendAt("E", e.nowMs()+500) // replication reaches need
	e.waitFor("E in the timer queue", func() bool { return e.st.DispatchBehind() == 0 && e.st.MaxPhyOffset() >= need })
	e.advance(10 * time.Second)
	ts.SetDequeue(true)
	deliveredOnce(e, []string{"C", "D", "E"}, []string{"A", "B"})
	// Delivering, a copy is ignored (stock copies only while not delivering).
	if err := ts.CopyMaster(StockCheckpoint{LastReadTimeMs: e.nowMs() + 60000, MasterTimerQueueOffset: 5}, 0); err != nil {
		t.Fatal(err)
	}
	if r := ts.ms.rule.Load(); r.readTimeMs != master.LastReadTimeMs {
		t.Fatalf("rule %+v", r)
	}
}

// The timing counts (GET_TIMER_METRICS) follow the wheel by real topic,
// survive a restart, and a non-delivering store takes its master's when
// the data version differs.
func TestTimingCounts(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	e.sendAt("X", now+1000)
	e.sendAt("X", now+1000)
	e.sendAt("Y", now+9000)
	e.settle()
	count := func(topic string) int64 { return e.ts().StockMetrics().TimingCount[topic].Count }
	before := e.ts().StockMetrics().DataVersion
	if count("X") != 2 || count("Y") != 1 || before.Counter != 3 {
		t.Fatalf("counts %+v", e.ts().StockMetrics())
	}
	e.advance(2 * time.Second)
	e.waitCount("X", 2)
	e.settle()
	m := e.ts().StockMetrics()
	if count("X") != 0 || count("Y") != 1 || m.DataVersion.Counter <= before.Counter {
		t.Fatalf("after delivery %+v", m)
	}
	e.restart()
	if got := e.ts().StockMetrics(); got.DataVersion != m.DataVersion || got.TimingCount["Y"] != m.TimingCount["Y"] {
		t.Fatalf("restarted %+v, was %+v", got, m)
	}
	master := &StockMetrics{DataVersion: DataVersion{Counter: 77}, TimingCount: map[string]TopicCount{"Z": {Count: 4}}}
	if e.ts().CopyMasterMetrics(master) {
		t.Fatal("a delivering store took the master's counts")
	}
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	ts := openHeld(e)
	if !ts.CopyMasterMetrics(master) || ts.CopyMasterMetrics(master) {
		t.Fatal("copy when the version differs, only then")
	}
	if got := ts.StockMetrics(); got.DataVersion.Counter != 77 || len(got.TimingCount) != 1 || got.TimingCount["Z"].Count != 4 {
		t.Fatalf("copied %+v", got)
	}
}

// A kept rule whose anchor record the timer queue no longer holds (a
// commitlog cut back and rewritten since: another master's history) is
// dropped at Open: every record is delivered, none skipped for a master
// that never saw it.
func TestMasterCopyStaleAnchor(t *testing.T) {
	e, master := slaveEnv(t)
	ts := openHeld(e)
	if err := ts.CopyMaster(master, e.st.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	r := *ts.ms.rule.Load()
	if err := ts.Stop(); err != nil {
		t.Fatal(err)
	}
	sf, _, _, ok, err := store.OpenSlotFile(nil, filepath.Join(e.dir, "config", "timermaster"), masterMagic, 7)
	if err != nil || !ok {
		t.Fatalf("timermaster: %v %v", ok, err)
	}
	if err := sf.Write([]int64{r.readTimeMs, r.queueOffset, r.phy, r.anchorTs + 1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	ts = openHeld(e)
	if ts.ms.rule.Load() != nil {
		t.Fatal("stale rule kept")
	}
	e.advance(10 * time.Second)
	ts.Start()
	deliveredOnce(e, []string{"A", "B", "C", "D"}, nil)
}
