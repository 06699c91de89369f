package store

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPeriodicFlushLeavesLightQueues: the periodic consume-queue flush syncs
// only queues with cqFlushLeastPages pages to sync (and new or full files),
// as Java's does, and its checkpoint lowers the dispatch position to the
// first unit it left unsynced. A crash that loses those units (zeroed in a
// copy of the store) is repaired by recovery, which dispatches again from
// there: every message is back in its queue. A thorough checkpoint syncs
// every queue and records the whole dispatch position.
func TestPeriodicFlushLeavesLightQueues(t *testing.T) {
	const light = 8
	o := testOptions(t.TempDir())
	o.MappedFileSizeConsumeQueue = 1000 * cqUnitSize // 20 000 bytes: about 5 pages
	o.FlushInterval = time.Hour
	o.FlushConsumeQueueInterval = time.Hour // the test checkpoints itself
	s := openStore(t, o)
	put := func(topic string, qid int32, i int) *PutResult { return mustPut(t, s, testMessage(topic, qid, i)) }
	checkpoint := func(thorough bool) checkpointData {
		t.Helper()
		waitDispatched(t, s)
		if err := s.cl.flush(); err != nil {
			t.Fatal(err)
		}
		if err := s.checkpoint(thorough); err != nil {
			t.Fatal(err)
		}
		return s.ckpt.last
	}
	for q := range light {
		put("Light", int32(q), 0)
	}
	put("Heavy", 0, 0)
	if ck := checkpoint(false); ck.logicsOffset != s.reput.Load() {
		t.Fatalf("first checkpoint: logics %d, want the dispatch position %d (new files are synced whole)", ck.logicsOffset, s.reput.Load())
	}
	firstPending := put("Light", 0, 1).PhysicalOffset
	for q := 1; q < light; q++ {
		put("Light", int32(q), 1)
	}
	for i := 1; i < 600; i++ { // 12 000 bytes of units: two pages and more
		put("Heavy", 0, i)
	}
	ck := checkpoint(false)
	if ck.logicsOffset != firstPending {
		t.Fatalf("periodic checkpoint: logics %d, want %d (the first unit left unsynced)", ck.logicsOffset, firstPending)
	}
	for q := range light {
		lq, _ := s.queueFor("Light", int32(q), false)
		f := lq.files[0]
		if f.flushed != cqUnitSize || f.wrote.Load() != 2*cqUnitSize {
			t.Fatalf("Light/%d: synced %d of %d bytes, want the first unit only", q, f.flushed, f.wrote.Load())
		}
	}
	hq, _ := s.queueFor("Heavy", 0, false)
	if f := hq.files[0]; f.flushed != f.wrote.Load() {
		t.Fatalf("Heavy/0: synced %d of %d bytes, want all", f.flushed, f.wrote.Load())
	}

	// The crash: a copy of the running store whose unsynced Light units
	// are lost.
	crash := o
	crash.Dir = filepath.Join(t.TempDir(), "crash")
	copyDir(t, o.Dir, crash.Dir)
	for q := range light {
		path := filepath.Join(crash.Dir, consumeQueueDir, "Light", strconv.Itoa(q), segmentName(0))
		writeAt(t, path, cqUnitSize, make([]byte, cqUnitSize))
	}
	if _, err := os.Stat(filepath.Join(crash.Dir, abortName)); err != nil {
		t.Fatalf("the copy is not of a running store: %v", err)
	}
	r := openStore(t, crash)
	waitDispatched(t, r)
	for q := range light {
		checkQueue(t, r, "Light", int32(q), 2)
	}
	checkQueue(t, r, "Heavy", 0, 600)

	if ck := checkpoint(true); ck.logicsOffset != s.reput.Load() {
		t.Fatalf("thorough checkpoint: logics %d, want the dispatch position %d", ck.logicsOffset, s.reput.Load())
	}
	for q := range light {
		lq, _ := s.queueFor("Light", int32(q), false)
		if f := lq.files[0]; f.flushed != f.wrote.Load() {
			t.Fatalf("Light/%d after a thorough flush: synced %d of %d bytes", q, f.flushed, f.wrote.Load())
		}
	}
}
