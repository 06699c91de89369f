package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// truncFixture is a store with msgs puts over queues of topic "T" and
// their results, in put order.
type truncFixture struct {
	o    Options
	s    *Store
	puts []*PutResult
	qids []int32
}

func newTruncFixture(t *testing.T, n, queues int, tweak func(*Options)) *truncFixture {
	t.Helper()
	o := testOptions(t.TempDir())
	if tweak != nil {
		tweak(&o)
	}
	f := &truncFixture{o: o, s: openStore(t, o)}
	for i := 0; i < n; i++ {
		q := int32(i % queues)
		f.puts = append(f.puts, mustPut(t, f.s, testMessage("T", q, i/queues)))
		f.qids = append(f.qids, q)
	}
	waitDispatched(t, f.s)
	return f
}

// below counts the puts of queue q stored below off.
func (f *truncFixture) below(q int32, off int64) int {
	n := 0
	for i, r := range f.puts {
		if f.qids[i] == q && r.PhysicalOffset < off {
			n++
		}
	}
	return n
}

// checkCut checks that s holds exactly the fixture's records below off:
// commitlog end, every queue's content and maximum, and the index.
func (f *truncFixture) checkCut(t *testing.T, s *Store, off int64, queues int) {
	t.Helper()
	if got := s.MaxPhyOffset(); got != off {
		t.Fatalf("commitlog end %d, want %d", got, off)
	}
	waitDispatched(t, s)
	for q := int32(0); q < int32(queues); q++ {
		n := f.below(q, off)
		checkQueue(t, s, "T", q, n)
		if m := s.MaxOffsetInQueue("T", q); m != int64(n) {
			t.Fatalf("queue %d max offset %d, want %d", q, m, n)
		}
	}
	for i, r := range f.puts {
		key := fmt.Sprintf("k%d", i/queues)
		res, err := s.QueryMessage("T", key, 64, 0, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, b := range res.Messages {
			if recordPhyOffset(b) == r.PhysicalOffset {
				found = true
			}
		}
		if found != (r.PhysicalOffset < off) {
			t.Fatalf("put %d at %d (cut %d): found by key %v", i, r.PhysicalOffset, off, found)
		}
	}
}

// checkContinues puts one message per queue after a cut at off and checks
// where they go: the first at off, each at the next offset of its queue.
func (f *truncFixture) checkContinues(t *testing.T, s *Store, off int64, queues int) {
	t.Helper()
	for q := int32(0); q < int32(queues); q++ {
		n := f.below(q, off)
		r := mustPut(t, s, testMessage("T", q, n))
		if r.QueueOffset != int64(n) {
			t.Fatalf("queue %d: put after the cut got queue offset %d, want %d", q, r.QueueOffset, n)
		}
		if q == 0 && r.PhysicalOffset != off && r.PhysicalOffset != off-off%s.cl.fileSize+s.cl.fileSize {
			t.Fatalf("first put after the cut at %d stored at %d", off, r.PhysicalOffset)
		}
	}
	waitDispatched(t, s)
	for q := int32(0); q < int32(queues); q++ {
		checkQueue(t, s, "T", q, f.below(q, off)+1)
	}
}

func TestTruncateTo(t *testing.T) {
	const queues = 3
	cases := []struct {
		name string
		pick func(f *truncFixture) int64
	}{
		{"middle of a file", func(f *truncFixture) int64 {
			// A record in the middle of the last file but one.
			last := f.puts[len(f.puts)-1].PhysicalOffset
			for i := len(f.puts) - 1; i >= 0; i-- {
				if p := f.puts[i].PhysicalOffset; p < last-last%f.s.cl.fileSize-f.s.cl.fileSize/2 {
					return p
				}
			}
			return 0
		}},
		{"last file", func(f *truncFixture) int64 { return f.puts[len(f.puts)-7].PhysicalOffset }},
		{"file boundary", func(f *truncFixture) int64 { return 2 * f.s.cl.fileSize }},
		{"across several files", func(f *truncFixture) int64 { return f.puts[40].PhysicalOffset }},
		{"whole log", func(f *truncFixture) int64 { return 0 }},
		{"blank filler", func(f *truncFixture) int64 {
			// Where the first file's BLANK starts: the end of its last record.
			for i := range f.puts {
				if f.puts[i+1].PhysicalOffset >= f.s.cl.fileSize {
					return f.puts[i].PhysicalOffset + int64(f.puts[i].WroteBytes)
				}
			}
			return 0
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newTruncFixture(t, 600, queues, nil)
			end := f.s.MaxPhyOffset()
			off := tc.pick(f)
			if end < 4*f.s.cl.fileSize || off >= end {
				t.Fatalf("fixture: end %d, cut at %d", end, off)
			}
			if err := f.s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			f.checkCut(t, f.s, off, queues)
			if _, err := readTruncateMarkerT(f.o.Dir); err != nil {
				t.Fatal(err)
			}
			// Closed and opened again: the cut is what the files hold.
			if err := f.s.Close(); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, f.o)
			f.checkCut(t, s, off, queues)
			f.checkContinues(t, s, off, queues)
		})
	}
}

func readTruncateMarkerT(dir string) (bool, error) {
	_, ok, err := readTruncateMarker(dir)
	if ok {
		return ok, errors.New("truncate marker left behind")
	}
	return ok, err
}

// Puts continue at the cut with the right queue offsets without a restart.
func TestTruncateToThenPut(t *testing.T) {
	f := newTruncFixture(t, 400, 3, nil)
	off := f.puts[250].PhysicalOffset
	if err := f.s.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	f.checkContinues(t, f.s, off, 3)
}

func TestTruncateToRefusals(t *testing.T) {
	f := newTruncFixture(t, 200, 2, nil)
	end := f.s.MaxPhyOffset()
	for _, off := range []int64{-1, f.puts[10].PhysicalOffset + 1, f.puts[100].PhysicalOffset + 4} {
		if err := f.s.TruncateTo(off); !errors.Is(err, ErrTruncateOffset) {
			t.Fatalf("TruncateTo(%d) = %v, want ErrTruncateOffset", off, err)
		}
	}
	for _, off := range []int64{end, end + 1, end + 1<<30} {
		if err := f.s.TruncateTo(off); err != nil {
			t.Fatalf("TruncateTo(%d) past the end = %v", off, err)
		}
	}
	if f.s.MaxPhyOffset() != end {
		t.Fatalf("end moved to %d", f.s.MaxPhyOffset())
	}
	checkQueue(t, f.s, "T", 0, 100)
	checkQueue(t, f.s, "T", 1, 100)

	// Below the first file, once cleanup removed it.
	f.s.cl.mu.Lock()
	first := f.s.cl.files[0]
	f.s.cl.files = f.s.cl.files[1:]
	f.s.cl.mu.Unlock()
	defer func() {
		f.s.cl.mu.Lock()
		f.s.cl.files = append(append([]*mappedFile(nil), first), f.s.cl.files...)
		f.s.cl.mu.Unlock()
	}()
	if err := f.s.TruncateTo(f.puts[1].PhysicalOffset); !errors.Is(err, ErrTruncateOffset) {
		t.Fatalf("TruncateTo below the first file = %v", err)
	}
}

// A slave cut back to the point where it agrees with its new master
// replicates on from there and ends identical to it, queues and all; the
// bytes it held of an incomplete record are dropped too.
func TestTruncateToThenAppendReplicated(t *testing.T) {
	m := openStore(t, testOptions(t.TempDir()))
	for i := 0; i < 300; i++ {
		mustPut(t, m, testMessage("R", int32(i%2), i/2))
	}
	common := m.MaxPhyOffset()
	// The slave was the old master: it has the common records and then
	// records of its own the new master never had.
	s := openStore(t, testOptions(t.TempDir()))
	for _, c := range replicaChunks(t, m, 0, 3000) {
		if _, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	for i := 0; i < 90; i++ {
		mustPut(t, s, testMessage("R", int32(i%2), 1000+i))
	}
	// The new master wrote other records after the common point.
	for i := 300; i < 500; i++ {
		mustPut(t, m, testMessage("R", int32(i%2), i/2))
	}
	// A partial record of the new master's, held in memory.
	part := masterBytes(t, m, common, 10)
	if err := s.TruncateTo(common); err != nil {
		t.Fatal(err)
	}
	if s.ReplicaEnd() != common || s.MaxPhyOffset() != common {
		t.Fatalf("after the cut: replica end %d, end %d, want %d", s.ReplicaEnd(), s.MaxPhyOffset(), common)
	}
	if _, err := s.AppendReplicated(common, part); err != nil {
		t.Fatal(err)
	}
	if err := s.TruncateTo(s.MaxPhyOffset()); err != nil || s.ReplicaEnd() != common {
		t.Fatalf("dropping the pending bytes: %v, replica end %d", err, s.ReplicaEnd())
	}
	for _, c := range replicaChunks(t, m, common, 2500) {
		if _, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s)
	sameBytes(t, m, s, 0, m.MaxPhyOffset())
	for q := int32(0); q < 2; q++ {
		checkQueue(t, s, "R", q, 250)
	}
	// Promoted: its puts follow the replicated queue offsets.
	if r := mustPut(t, s, testMessage("R", 1, 250)); r.QueueOffset != 250 {
		t.Fatalf("put after promotion got queue offset %d", r.QueueOffset)
	}
	s.Close()
	s2 := openStore(t, s.opts)
	checkQueue(t, s2, "R", 0, 250)
	checkQueue(t, s2, "R", 1, 251)
}

// A cut with many queue files and the index: units in several queue files
// and index entries go, and new keys are found again.
func TestTruncateToQueueFilesAndIndex(t *testing.T) {
	f := newTruncFixture(t, 900, 2, func(o *Options) {
		o.MappedFileSizeConsumeQueue = 20 * cqUnitSize
		o.Index = IndexOptions{HashSlotNum: 64, MaxIndexNum: 300}
	})
	files, _ := f.s.IndexStats()
	off := f.puts[333].PhysicalOffset
	if err := f.s.TruncateTo(off); err != nil {
		t.Fatal(err)
	}
	after, _ := f.s.IndexStats()
	if files < 4 || after >= files {
		t.Fatalf("index files %d before the cut, %d after", files, after)
	}
	f.checkCut(t, f.s, off, 2)
	f.checkContinues(t, f.s, off, 2)
	res, err := f.s.QueryMessage("T", fmt.Sprintf("k%d", 166), 64, 0, 1<<62)
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("key of a record put after the cut: %d found, %v", len(res.Messages), err)
	}
	f.s.Close()
	q := filepath.Join(f.o.Dir, consumeQueueDir, "T", "0")
	starts, err := listSegments(q)
	if err != nil || len(starts) != int(f.below(0, off)+1+19)/20 {
		t.Fatalf("queue 0 files after the cut: %v %v", starts, err)
	}
}

// FuzzParseTruncateMarker: any bytes are either refused or a marker that
// encodes back to exactly them.
func FuzzParseTruncateMarker(f *testing.F) {
	f.Add(encodeTruncateMarker(0))
	f.Add(encodeTruncateMarker(123456789))
	f.Add([]byte("RMQTRUNC"))
	f.Add(append(encodeTruncateMarker(7), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		off, err := parseTruncateMarker(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if off < 0 || string(encodeTruncateMarker(off)) != string(b) {
			t.Fatalf("%x parsed as %d", b, off)
		}
	})
}

// TruncateTo while puts run on many queues whose files come and go (five
// units a file: the dispatcher defers records for new files all the time):
// afterwards every queue is gap-free, unit i holding the record stored
// with queue offset i, and the queues hold exactly the records the
// commitlog holds.
func TestTruncateToUnderLoad(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeConsumeQueue = 5 * cqUnitSize
	s := openStore(t, o)
	const queues = 16
	var (
		mu    sync.Mutex
		puts  []*PutResult
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		count [queues]int
		// base is the index in puts of the first put started after the
		// last cut returned: puts before it may have been cut away (the
		// one in flight during the cut is appended just before base).
		base int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			q := int32(i % queues)
			mu.Lock()
			n := count[q]
			count[q]++
			mu.Unlock()
			r, err := s.PutMessage(testMessage("C", q, n))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			puts = append(puts, r)
			mu.Unlock()
		}
	}()
	for k := 0; k < 3; k++ {
		for {
			mu.Lock()
			n := len(puts) - base
			mu.Unlock()
			if n > 400 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		off := puts[len(puts)-150].PhysicalOffset
		mu.Unlock()
		if err := s.TruncateTo(off); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		base = len(puts) + 1
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	waitDispatched(t, s)
	records := 0
	for from := s.MinPhyOffset(); from < s.MaxPhyOffset(); {
		batch, next, err := s.readRecords(from, s.MaxPhyOffset(), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		records += len(batch)
		from = next
	}
	units := 0
	for q := int32(0); q < queues; q++ {
		for j, m := range readQueue(t, s, "C", q) {
			if m.QueueOffset != int64(j) {
				t.Fatalf("queue %d unit %d holds a record stored with queue offset %d", q, j, m.QueueOffset)
			}
			units++
		}
	}
	if units != records {
		t.Fatalf("%d units for %d records", units, records)
	}
	t.Logf("%d records after three cuts", records)
}

// The SYNC_FLUSH callbacks TruncateTo's flush answers run after it has
// released its locks: one that calls into the store does not deadlock, and
// it is told its bytes are durable (they were, before the cut).
func TestTruncateAnswersFlushWaitersOutsideLocks(t *testing.T) {
	f := newTruncFixture(t, 50, 1, nil)
	s := f.s
	got := make(chan bool, 1)
	s.waiters.mu.Lock()
	s.waiters.list = append(s.waiters.list, flushWaiter{end: s.MaxPhyOffset(), deadline: time.Now().Add(time.Hour), fn: func(ok bool) {
		s.ReplicaEnd() // takes the put lock
		got <- ok
	}})
	s.waiters.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- s.TruncateTo(f.puts[20].PhysicalOffset) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testWait):
		t.Fatal("TruncateTo deadlocked on a flush callback")
	}
	if ok := <-got; !ok {
		t.Fatal("callback told its flushed bytes were not durable")
	}
}
