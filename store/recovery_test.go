package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// putRec remembers where message i went.
type putRec struct {
	i    int
	qid  int32
	phy  int64
	size int64
}

const recoveryTopic = "Rec"

// queueContents reads every queue of recoveryTopic and returns the message
// indices found (the record FLAG is the index), checking each record against
// what was put.
func queueContents(t *testing.T, s *Store) []int {
	t.Helper()
	var got []int
	for _, qid := range s.QueueIDs(recoveryTopic) {
		for _, m := range readQueue(t, s, recoveryTopic, qid) {
			i := int(m.Flag)
			want := testMessage(recoveryTopic, qid, i)
			if !bytes.Equal(m.Body, want.Body) || m.QueueID != qid || m.QueueOffset != int64(i/3) {
				t.Fatalf("queue %d: message %d damaged or misplaced: offset %d body %q", qid, i, m.QueueOffset, m.Body)
			}
			got = append(got, i)
		}
	}
	slices.Sort(got)
	return got
}

// fillRecoveryStore writes n messages over three queues; after the first
// checkpointAfter messages it flushes and writes a checkpoint, then it
// disables the periodic one so the checkpoint stays there.
func fillRecoveryStore(t *testing.T, o Options, n, checkpointAfter int) (*Store, []putRec) {
	t.Helper()
	o.FlushInterval = time.Hour
	o.FlushConsumeQueueInterval = time.Hour
	s := openStore(t, o)
	var recs []putRec
	for i := 0; i < n; i++ {
		m := testMessage(recoveryTopic, int32(i%3), i)
		r := mustPut(t, s, m)
		recs = append(recs, putRec{i: i, qid: m.QueueID, phy: r.PhysicalOffset, size: int64(r.WroteBytes)})
		if i+1 == checkpointAfter {
			waitDispatched(t, s)
			if err := s.cl.flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.checkpointNow(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	return s, recs
}

// segment returns the path and in-file position of a commitlog offset.
func segment(o Options, phy int64) (string, int64) {
	fs := o.MappedFileSizeCommitLog
	return filepath.Join(o.Dir, commitLogDir, segmentName(phy-phy%fs)), phy % fs
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestRecoveryCorruptionHarness(t *testing.T) {
	const n, ckAt = 420, 100
	last := func(recs []putRec) putRec { return recs[len(recs)-1] }
	except := func(drop ...int) func(int) bool { return func(i int) bool { return !slices.Contains(drop, i) } }
	tests := []struct {
		name           string
		dropCheckpoint bool
		// corrupt damages the copy at dir and returns which messages must survive.
		corrupt     func(t *testing.T, o Options, recs []putRec) func(i int) bool
		wantRegions bool // damaged spans followed by valid data
		wantTorn    bool // non-zero bytes after the last valid record
	}{
		{
			name: "file truncated mid-record",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				k := recs[n-3]
				path, rel := segment(o, k.phy)
				if err := os.Truncate(path, rel+k.size/2); err != nil {
					t.Fatal(err)
				}
				return func(i int) bool { return i < k.i }
			},
			wantTorn: true,
		},
		{
			name: "garbage tail",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				k := recs[n-5]
				path, rel := segment(o, k.phy+10)
				garbage := make([]byte, last(recs).phy+last(recs).size-k.phy+3000)
				rng := rand.New(rand.NewPCG(1, 2))
				for i := range garbage {
					garbage[i] = byte(rng.Uint32())
				}
				writeAt(t, path, rel, garbage[:min(int64(len(garbage)), o.MappedFileSizeCommitLog-rel)])
				return func(i int) bool { return i < k.i }
			},
			wantTorn: true,
		},
		{
			name: "zeroed region followed by intact records",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				k := n - 20
				path, rel := segment(o, recs[k].phy)
				end := recs[k+2].phy + recs[k+2].size
				if (end-1)/o.MappedFileSizeCommitLog != recs[k].phy/o.MappedFileSizeCommitLog {
					t.Fatalf("fixture: records %d..%d straddle files", k, k+2)
				}
				writeAt(t, path, rel, make([]byte, end-recs[k].phy))
				return except(k, k+1, k+2)
			},
			wantRegions: true,
		},
		{
			name: "bad body CRC",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				k := recs[n-30]
				path, rel := segment(o, k.phy)
				writeAt(t, path, rel+90, []byte{'#'}) // inside the body
				return except(k.i)
			},
			wantRegions: true,
		},
		{
			name: "end of a full file destroyed",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				var k putRec
				for _, r := range recs {
					if r.phy < o.MappedFileSizeCommitLog {
						k = r
					}
				}
				if k.i < ckAt {
					t.Fatalf("fixture: last record of file 0 (%d) is before the checkpoint", k.i)
				}
				path, rel := segment(o, k.phy)
				writeAt(t, path, rel, make([]byte, o.MappedFileSizeCommitLog-rel)) // record and BLANK
				return except(k.i)
			},
			wantRegions: true,
		},
		{
			name:           "no checkpoint, early bad CRC",
			dropCheckpoint: true,
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				path, rel := segment(o, recs[5].phy)
				writeAt(t, path, rel+95, []byte{0xFF, 0xFF})
				return except(5)
			},
			wantRegions: true,
		},
		{
			name: "garbage checkpoint",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				writeAt(t, filepath.Join(o.Dir, checkpointName), 0, bytes.Repeat([]byte{0xA5}, checkpointFileSize))
				return func(int) bool { return true }
			},
		},
		{
			name: "garbage after the last consume-queue unit",
			corrupt: func(t *testing.T, o Options, recs []putRec) func(int) bool {
				dir := filepath.Join(o.Dir, consumeQueueDir, recoveryTopic, "1")
				starts, _ := listSegments(dir)
				path := filepath.Join(dir, segmentName(starts[len(starts)-1]))
				data, _ := os.ReadFile(path)
				w := scanUnits(data)
				rng := rand.New(rand.NewPCG(3, 4))
				garbage := make([]byte, int64(len(data))-w)
				for i := range garbage {
					garbage[i] = byte(rng.Uint32())
				}
				writeAt(t, path, w, garbage)
				return func(int) bool { return true }
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			s, recs := fillRecoveryStore(t, o, n, ckAt)
			if got := len(s.cl.files); got < 3 {
				t.Fatalf("fixture spans %d commitlog files, want >= 3", got)
			}
			crash := testOptions(t.TempDir())
			copyDir(t, o.Dir, crash.Dir)
			if tt.dropCheckpoint {
				os.Remove(filepath.Join(crash.Dir, checkpointName))
			}
			survives := tt.corrupt(t, crash, recs)
			var want []int
			for i := 0; i < n; i++ {
				if survives(i) {
					want = append(want, i)
				}
			}

			r := openStore(t, crash)
			info := r.RuntimeInfo()
			if info["recoveryCleanShutdown"] != "false" {
				t.Fatalf("crash copy recovered as a clean shutdown")
			}
			if got := queueContents(t, r); !slices.Equal(got, want) {
				t.Fatalf("recovered %d messages, want %d\nmissing/extra: %v", len(got), len(want), symmetricDiff(got, want))
			}
			if regions := info["recoveryCorruptRegions"] != "0"; regions != tt.wantRegions {
				t.Fatalf("recoveryCorruptRegions = %s, want non-zero %v", info["recoveryCorruptRegions"], tt.wantRegions)
			}
			if torn := info["recoveryTornTailBytes"] != "0"; torn != tt.wantTorn {
				t.Fatalf("recoveryTornTailBytes = %s, want non-zero %v", info["recoveryTornTailBytes"], tt.wantTorn)
			}
			end := r.MaxPhyOffset()
			for _, q := range r.allQueues() {
				for idx := q.minOffset(); idx < q.maxOffset(); idx++ {
					if phy, size, _, ok := q.unit(idx); ok && !isFiller(phy, size) && phy+int64(size) > end {
						t.Fatalf("queue %d unit %d points past the commitlog end %d", q.queueID, idx, end)
					}
				}
			}

			// The recovered store keeps working: new messages continue the queues.
			var extra []int
			for i := 10000; i < 10009; i++ {
				m := testMessage(recoveryTopic, int32(i%3), i)
				res := mustPut(t, r, m)
				if res.QueueOffset < int64(want[len(want)-1]/3) {
					t.Fatalf("new message got queue offset %d, below the recovered messages", res.QueueOffset)
				}
				extra = append(extra, i)
			}
			waitDispatched(t, r)
			// A second crash right after recovery finds the same messages.
			again := testOptions(t.TempDir())
			copyDir(t, crash.Dir, again.Dir)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{crash.Dir, again.Dir} {
				o2 := testOptions(dir)
				s2 := openStore(t, o2)
				var got []int
				for _, qid := range s2.QueueIDs(recoveryTopic) {
					for _, m := range readQueue(t, s2, recoveryTopic, qid) {
						got = append(got, int(m.Flag))
					}
				}
				slices.Sort(got)
				wantAll := append(slices.Clone(want), extra...)
				if !slices.Equal(got, wantAll) {
					t.Fatalf("reopen of %s: %v", filepath.Base(dir), symmetricDiff(got, wantAll))
				}
				s2.Close()
			}
		})
	}
}

func symmetricDiff(a, b []int) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "+"+strconv.Itoa(x))
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "-"+strconv.Itoa(x))
		}
	}
	return out
}

func TestCloseAndReopenKeepsEverything(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	var recs []*PutResult
	for i := 0; i < 400; i++ {
		recs = append(recs, mustPut(t, s, testMessage(recoveryTopic, int32(i%3), i)))
	}
	waitDispatched(t, s)
	maxPhy := s.MaxPhyOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, abortName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("abort marker left after Close: %v", err)
	}
	s = openStore(t, o)
	info := s.RuntimeInfo()
	if info["recoveryCleanShutdown"] != "true" || info["recoveryRecords"] != "0" {
		t.Fatalf("clean reopen scanned the commitlog: %v", info)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, abortName)); err != nil {
		t.Fatalf("abort marker missing while open: %v", err)
	}
	if s.MaxPhyOffset() != maxPhy {
		t.Fatalf("max offset %d after reopen, want %d", s.MaxPhyOffset(), maxPhy)
	}
	if got := queueContents(t, s); len(got) != 400 {
		t.Fatalf("%d messages after reopen", len(got))
	}
	r := mustPut(t, s, testMessage(recoveryTopic, 1, 400))
	if r.QueueOffset != 133 || r.PhysicalOffset < maxPhy {
		t.Fatalf("put after reopen: queue offset %d phy %d", r.QueueOffset, r.PhysicalOffset)
	}
}

func TestKillStyleReopen(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{name: "copy of a running store", damage: func(*testing.T, string) {}},
		{name: "consume queues and checkpoint lost", damage: func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, consumeQueueDir))
			os.Remove(filepath.Join(dir, checkpointName))
		}},
		{name: "consume queues lost, checkpoint kept", damage: func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, consumeQueueDir))
		}},
		{name: "empty newest commitlog file from a crash while creating it", damage: func(t *testing.T, dir string) {
			starts, _ := listSegments(filepath.Join(dir, commitLogDir))
			next := starts[len(starts)-1] + testOptions(dir).MappedFileSizeCommitLog
			if err := os.WriteFile(filepath.Join(dir, commitLogDir, segmentName(next)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			s := openStore(t, o)
			for i := 0; i < 300; i++ {
				mustPut(t, s, testMessage(recoveryTopic, int32(i%3), i))
			}
			waitDispatched(t, s)
			crash := testOptions(t.TempDir())
			copyDir(t, o.Dir, crash.Dir)
			tt.damage(t, crash.Dir)
			c := openStore(t, crash)
			got := queueContents(t, c)
			if len(got) != 300 && tt.name != "consume queues lost, checkpoint kept" {
				t.Fatalf("%d messages recovered, want 300", len(got))
			}
			if tt.name == "consume queues lost, checkpoint kept" {
				// Only records after the checkpoint are re-dispatched: queues start
				// where the rebuilt part begins and hold everything from there on.
				for _, qid := range c.QueueIDs(recoveryTopic) {
					if c.MaxOffsetInQueue(recoveryTopic, qid) != 100 {
						t.Fatalf("queue %d max %d, want 100", qid, c.MaxOffsetInQueue(recoveryTopic, qid))
					}
				}
			}
			r := mustPut(t, c, testMessage(recoveryTopic, 0, 300))
			if r.QueueOffset != 100 {
				t.Fatalf("next queue offset %d, want 100", r.QueueOffset)
			}
		})
	}
}

func TestDeleteTopics(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	for i := 0; i < 30; i++ {
		mustPut(t, s, testMessage("Gone", int32(i%2), i))
		mustPut(t, s, testMessage("Kept", 0, i))
	}
	waitDispatched(t, s)
	s.DeleteTopics("Gone")
	if ids := s.QueueIDs("Gone"); len(ids) != 0 || s.MaxOffsetInQueue("Gone", 0) != 0 {
		t.Fatalf("deleted topic still has queues %v", ids)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, consumeQueueDir, "Gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted topic directory remains: %v", err)
	}
	if r := s.GetMessage("Gone", 0, 0, 10, 1<<20, nil); r.Status != NoMatchedLogicQueue {
		t.Fatalf("GetMessage on deleted topic = %v", r.Status)
	}
	if r := mustPut(t, s, testMessage("Gone", 0, 100)); r.QueueOffset != 0 {
		t.Fatalf("re-created topic starts at %d", r.QueueOffset)
	}
	waitDispatched(t, s)
	if !slices.Equal(s.Topics(), []string{"Gone", "Kept"}) {
		t.Fatalf("Topics = %v", s.Topics())
	}
	check := func(t *testing.T, st *Store) {
		t.Helper()
		if got := st.MaxOffsetInQueue("Kept", 0); got != 30 {
			t.Fatalf("Kept max %d", got)
		}
		msgs := readQueue(t, st, "Gone", 0)
		if len(msgs) != 1 || msgs[0].Flag != 100 || len(st.QueueIDs("Gone")) != 1 {
			t.Fatalf("Gone after reopen: %d messages, queues %v", len(msgs), st.QueueIDs("Gone"))
		}
	}
	crash := testOptions(t.TempDir())
	copyDir(t, o.Dir, crash.Dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{o.Dir, crash.Dir} {
		st := openStore(t, testOptions(dir))
		check(t, st)
		st.Close()
	}
}

func TestCheckpointSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), checkpointName)
	c, _, ok, err := openCheckpoint(nil, path)
	if err != nil || ok {
		t.Fatalf("new checkpoint: ok=%v err=%v", ok, err)
	}
	for i := int64(1); i <= 3; i++ {
		if err := c.write(i*100, i*50, i); err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	tests := []struct {
		name       string
		damage     func(t *testing.T)
		wantOK     bool
		wantPhysic int64
	}{
		{name: "newest slot", damage: func(*testing.T) {}, wantOK: true, wantPhysic: 300},
		{name: "newest slot torn", damage: func(t *testing.T) { writeAt(t, path, 1*checkpointSlotSize+20, []byte{1}) }, wantOK: true, wantPhysic: 200},
		{name: "both slots torn", damage: func(t *testing.T) { writeAt(t, path, 0*checkpointSlotSize+3, []byte{1}) }, wantOK: false},
	}
	for _, tt := range tests {
		tt.damage(t)
		c, d, ok, err := openCheckpoint(nil, path)
		if err != nil || ok != tt.wantOK || ok && d.physicOffset != tt.wantPhysic {
			t.Fatalf("%s: ok=%v physic=%d err=%v", tt.name, ok, d.physicOffset, err)
		}
		c.close()
	}
}

func TestSecondOpenIsLockedOut(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	if _, err := Open(o); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open err = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, o)
	s2.Close()
}

func TestConsumeQueueGapsAndLateStart(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	rs := make([]*PutResult, 3)
	for i := range rs {
		rs[i] = mustPut(t, s, testMessage("Other", 0, i))
	}
	waitDispatched(t, s)
	q, err := s.queueFor("Gap", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	// A queue whose first unit is 250 (files of 100 units): fillers 200..249.
	put := func(idx int64, r *PutResult) {
		t.Helper()
		if err := q.put(idx, r.PhysicalOffset, int32(r.WroteBytes), 0, true); err != nil {
			t.Fatal(err)
		}
	}
	put(250, rs[0])
	put(251, rs[1])
	put(255, rs[2]) // gap 252..254
	if q.minOffset() != 250 || q.maxOffset() != 256 {
		t.Fatalf("queue [%d, %d), want [250, 256)", q.minOffset(), q.maxOffset())
	}
	if r := s.GetMessage("Gap", 0, 120, 10, 1<<20, nil); r.Status != OffsetTooSmall || r.NextBeginOffset != 250 {
		t.Fatalf("below the first unit: %v next %d", r.Status, r.NextBeginOffset)
	}
	r := s.GetMessage("Gap", 0, 251, 10, 1<<20, nil)
	if r.Status != Found || len(r.Messages) != 2 || r.NextBeginOffset != 256 {
		t.Fatalf("across the gap: %v %d messages next %d", r.Status, len(r.Messages), r.NextBeginOffset)
	}
	if r := s.GetMessage("Gap", 0, 252, 1, 1<<20, nil); r.Status != Found || r.NextBeginOffset != 256 {
		t.Fatalf("from a filler: %v next %d", r.Status, r.NextBeginOffset)
	}
	// Re-putting an identical unit is a no-op; a unit beyond a file boundary adds a file.
	put(251, rs[1])
	put(330, rs[2])
	if q.maxOffset() != 331 || len(q.files) != 2 {
		t.Fatalf("after a jump: max %d files %d", q.maxOffset(), len(q.files))
	}
	if r := s.GetMessage("Gap", 0, 280, 10, 1<<20, nil); r.Status != OffsetFoundNull || r.NextBeginOffset != 300 {
		t.Fatalf("past the written part of a file: %v next %d", r.Status, r.NextBeginOffset)
	}
	if r := s.GetMessage("Gap", 0, 300, 10, 1<<20, nil); r.Status != Found || len(r.Messages) != 1 || r.NextBeginOffset != 331 {
		t.Fatalf("fillers then a unit: %v %d messages next %d", r.Status, len(r.Messages), r.NextBeginOffset)
	}
}

func TestAsyncFlushAdvancesCheckpoint(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	for i := 0; i < 50; i++ {
		mustPut(t, s, testMessage("Flush", 0, i))
	}
	max := s.MaxPhyOffset()
	testutil.WaitFor(t, 5*time.Second, func() bool { return s.cl.flushedOffset.Load() == max }, "commitlog flush")
	testutil.WaitFor(t, 5*time.Second, func() bool {
		_, d, ok, err := openCheckpoint(nil, filepath.Join(o.Dir, checkpointName))
		return err == nil && ok && d.physicOffset == max && d.logicsOffset == max
	}, "checkpoint")
}

func TestChangedFileSizeIsRefusedWithoutDamage(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	for i := 0; i < 300; i++ {
		mustPut(t, s, testMessage(recoveryTopic, int32(i%3), i))
	}
	waitDispatched(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(o *Options)
	}{
		{name: "bigger commitlog files", mutate: func(o *Options) { o.MappedFileSizeCommitLog *= 2 }},
		{name: "smaller commitlog files", mutate: func(o *Options) { o.MappedFileSizeCommitLog /= 2 }},
		{name: "bigger consume queue files", mutate: func(o *Options) { o.MappedFileSizeConsumeQueue *= 2 }},
	}
	for _, tt := range tests {
		changed := o
		tt.mutate(&changed)
		if s, err := Open(changed); !errors.Is(err, ErrCorrupt) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("%s: Open err = %v, want ErrCorrupt", tt.name, err)
		}
	}
	s = openStore(t, o)
	if got := queueContents(t, s); len(got) != 300 {
		t.Fatalf("%d messages after the refused opens", len(got))
	}
}

// Consume-queue files are created by the dispatcher without fsyncs, and the
// checkpoint counts no unit in them until a flush made them durable: a crash
// that loses such files (a new topic's queue directories, a queue's next
// file) loses nothing, recovery dispatches their units again.
func TestQueueFilesCreatedAfterCheckpointLostInCrash(t *testing.T) {
	o := testOptions(t.TempDir())
	o.FlushConsumeQueueInterval = time.Hour
	s := openStore(t, o)
	for i := 0; i < 30; i++ {
		mustPut(t, s, testMessage(recoveryTopic, int32(i%3), i))
	}
	waitDispatched(t, s)
	if err := s.cl.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	const newTopic = "CreatedAfterCheckpoint"
	for i := 0; i < 30; i++ {
		mustPut(t, s, testMessage(newTopic, int32(i%3), i))
	}
	waitDispatched(t, s)
	if got := s.ckpt.last.logicsOffset; got >= s.MaxPhyOffset() {
		t.Fatalf("checkpoint logics offset %d covers the new topic's records (end %d) without a flush", got, s.MaxPhyOffset())
	}
	crash := testOptions(t.TempDir())
	copyDir(t, o.Dir, crash.Dir)
	if err := os.RemoveAll(filepath.Join(crash.Dir, consumeQueueDir, newTopic)); err != nil {
		t.Fatal(err)
	}
	c := openStore(t, crash)
	if got := queueContents(t, c); len(got) != 30 {
		t.Fatalf("%d messages of %s recovered, want 30", len(got), recoveryTopic)
	}
	for qid := int32(0); qid < 3; qid++ {
		ms := readQueue(t, c, newTopic, qid)
		if len(ms) != 10 {
			t.Fatalf("%s queue %d: %d messages after recovery, want 10", newTopic, qid, len(ms))
		}
		for j, m := range ms {
			if m.QueueOffset != int64(j) || int(m.Flag)%3 != int(qid) {
				t.Fatalf("%s queue %d: message %d at offset %d", newTopic, qid, m.Flag, m.QueueOffset)
			}
		}
	}
}
