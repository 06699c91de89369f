package store

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

func TestWarmerNext(t *testing.T) {
	const size = 64 << 10
	tests := []struct {
		name       string
		reserved   int64
		done       int64
		files      int // segments that exist
		wantOK     bool
		wantFrom   int64
		wantTo     int64
		wantFailed bool
		wantDone   int64 // when set, done after next()
	}{
		{name: "fresh store starts at the write position", reserved: 0, done: 0, files: 1, wantOK: true, wantFrom: 0, wantTo: 16 << 10},
		{name: "starts at the next page past a reservation", reserved: 5000, done: 0, files: 1, wantOK: true, wantFrom: 8192, wantTo: 8192 + 16<<10},
		{name: "continues after what is done", reserved: 5000, done: 12288, files: 1, wantOK: true, wantFrom: 12288, wantTo: 12288 + 16<<10},
		{name: "stops at the segment end", reserved: size - 8292, done: size - 4096, files: 1, wantOK: true, wantFrom: size - 4096, wantTo: size},
		{name: "enough ready ahead", reserved: 1000, done: 1000 + 32<<10, files: 1, wantOK: false},
		{name: "next segment not created yet", reserved: size - 10, done: size, files: 1, wantOK: false},
		{name: "next segment created", reserved: size - 10, done: size, files: 2, wantOK: true, wantFrom: size, wantTo: size + 16<<10},
		{name: "failed warmer claims nothing", reserved: 0, done: 0, files: 1, wantFailed: true},
		{name: "writer a chunk ahead of the warm-up: behind it", reserved: 8192 + 16<<10, done: 8192, files: 1, wantOK: true, wantFrom: 8192 + 16<<10, wantTo: 8192 + 32<<10},
		{name: "writer outran the warm-up: the segment is given up", reserved: 8192 + 16<<10 + 1, done: 8192, files: 2, wantOK: false, wantDone: size},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCommitLog(t.TempDir(), size, testOptions("").Logger)
			for i := range tc.files {
				cl.files = append(cl.files, &mappedFile{start: int64(i) * size, data: make([]byte, size)})
			}
			w := newWarmer(cl, 0)
			w.chunk, w.ahead = 16<<10, 32<<10
			w.reserved, w.done, w.failed = tc.reserved, tc.done, tc.wantFailed
			_, from, to, ok := w.next()
			if ok != tc.wantOK || ok && (from != tc.wantFrom || to != tc.wantTo) {
				t.Fatalf("next() = [%d, %d) %v; want [%d, %d) %v", from, to, ok, tc.wantFrom, tc.wantTo, tc.wantOK)
			}
			if ok && (w.busyFrom != from || w.busyTo != to) {
				t.Fatalf("busy [%d, %d), want the claimed chunk", w.busyFrom, w.busyTo)
			}
			if tc.wantDone != 0 && w.done != tc.wantDone {
				t.Fatalf("done %d after next(), want %d", w.done, tc.wantDone)
			}
		})
	}
}

func TestWarmerRefusesReservationOverlappingChunk(t *testing.T) {
	cl := newCommitLog(t.TempDir(), 64<<10, testOptions("").Logger)
	tests := []struct {
		name     string
		from, to int64
		refused  bool
	}{
		{name: "below the chunk", from: 0, to: 8192, refused: false},
		{name: "above the chunk", from: 12288, to: 20000, refused: false},
		{name: "overlapping the chunk", from: 8000, to: 9000, refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWarmer(cl, 0)
			w.busyFrom, w.busyTo = 8192, 12288
			ok := w.tryReserve(tc.from, tc.to, false)
			if ok == tc.refused {
				t.Fatalf("tryReserve(%d, %d) = %v with [8192, 12288) being zeroed", tc.from, tc.to, ok)
			}
			want := int64(0)
			if ok {
				want = tc.to
			}
			if w.reserved != want {
				t.Fatalf("reserved %d, want %d", w.reserved, want)
			}
			if !tc.refused {
				return
			}
			// waitIdle returns once the chunk is done, and the range can then
			// be reserved.
			idle := make(chan struct{})
			go func() {
				w.waitIdle()
				close(idle)
			}()
			w.mu.Lock()
			w.busyFrom, w.busyTo = 0, 0
			w.cond.Broadcast()
			w.mu.Unlock()
			<-idle
			if !w.tryReserve(tc.from, tc.to, false) {
				t.Fatal("refused after the chunk was done")
			}
		})
	}
}

// The warmer runs beside concurrent SYNC_FLUSH putters across many segment
// rolls; every record must read back intact, and the region past the end must
// have been zeroed ahead.
func TestWarmerNeverOverwritesRecords(t *testing.T) {
	s := openStore(t, syncOptions(t))
	if s.cl.warm == nil {
		t.Fatal("no warmer under SYNC_FLUSH")
	}
	const goroutines, each = 6, 120
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.PutMessage(testMessage("Warm", int32(g), i)); err != nil {
					t.Errorf("put: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if files := len(s.cl.files); files < 4 {
		t.Fatalf("only %d segments: the test needs rolls", files)
	}
	waitDispatched(t, s)
	for g := range int32(goroutines) {
		checkQueue(t, s, "Warm", g, each)
	}
	end := s.MaxPhyOffset()
	testutil.WaitFor(t, 5*time.Second, func() bool {
		s.cl.warm.mu.Lock()
		defer s.cl.warm.mu.Unlock()
		return s.cl.warm.done > end || s.cl.last().end() <= (end+pageSize-1)&^(pageSize-1)
	}, "the warmer to zero past the end")
}

func TestWarmerUnderAsyncFlush(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	if s.cl.warm == nil {
		t.Fatal("ASYNC_FLUSH store has no warmer")
	}
	r := mustPut(t, s, testMessage("AsyncWarm", 0, 0))
	end := r.PhysicalOffset + int64(r.WroteBytes)
	testutil.WaitFor(t, 5*time.Second, func() bool {
		s.cl.warm.mu.Lock()
		defer s.cl.warm.mu.Unlock()
		return s.cl.warm.done > end
	}, "the warmer to zero past the first record")
}

// TestWarmerWriteSizeFollowsTheWriter: the chunk claimed after a direct
// (pwrite) reservation is zeroed in small writes, after a mapping one in big
// writes, and the zeros land either way.
func TestWarmerWriteSizeFollowsTheWriter(t *testing.T) {
	tests := []struct {
		name      string
		direct    bool
		wantWrite int64
	}{
		{name: "pwrite appends", direct: true, wantWrite: warmWriteDirect},
		{name: "mapping appends", direct: false, wantWrite: warmWriteMapped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const size = 4 << 20
			dir := t.TempDir()
			cl := newCommitLog(dir, size, testOptions("").Logger)
			f, err := cl.roll(0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.close() })
			if _, err := f.file.WriteAt(bytes.Repeat([]byte{0xAB}, size), 0); err != nil {
				t.Fatal(err)
			}
			w := newWarmer(cl, 0)
			w.tryReserve(0, 100, tc.direct)
			g, from, to, ok := w.next()
			if !ok {
				t.Fatal("no chunk claimed")
			}
			if w.busyWrite != tc.wantWrite {
				t.Fatalf("zero writes of %d bytes, want %d", w.busyWrite, tc.wantWrite)
			}
			if err := w.zeroRange(g, from-g.start, to-g.start); err != nil {
				t.Fatal(err)
			}
			if !allZero(g.data[from-g.start : to-g.start]) {
				t.Fatalf("[%d, %d) not zeroed", from, to)
			}
			if g.data[from-g.start-1] != 0xAB {
				t.Fatal("zeroed below the chunk")
			}
		})
	}
}

// The first file of a new store is warmed before any reservation has told
// the warmer the writer's mode: the store sets the zero write size by its
// flush mode from the start.
func TestWarmerStartsWithTheStoresWriteSize(t *testing.T) {
	tests := []struct {
		flush FlushDiskType
		want  int64
	}{
		{flush: AsyncFlush, want: warmWriteMapped},
		{flush: SyncFlush, want: warmWriteDirect},
	}
	for _, tc := range tests {
		t.Run(tc.flush.String(), func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.FlushDiskType = tc.flush
			s := openStore(t, o)
			w := s.cl.warm
			w.mu.Lock()
			got := w.write
			w.mu.Unlock()
			if got != tc.want {
				t.Fatalf("zero writes of %d bytes before the first put, want %d", got, tc.want)
			}
		})
	}
}

// The warmer's sync, which on a busy disk waits for all the segment's dirty
// pages, does not hold up a writer that reaches the chunk it just zeroed:
// with every commitlog fdatasync stalled, puts run through the chunk (they
// waited for the stall before: 1 MiB sends timed out at 3 s in workload c
// of bench/compare), and every record reads back once the sync completes.
func TestWarmerSyncDoesNotHoldTheWriter(t *testing.T) {
	stall := make(chan struct{})
	inj := &Injector{}
	// The first sync is the allocator's warm-up of the first segment, before
	// the writer may use it; the second is the warmer's first chunk.
	inj.Add(Rule{Op: OpDatasync, Path: "commitlog", Nth: 2, Stall: stall})
	o := testOptions(t.TempDir())
	o.MappedFileSizeCommitLog = 16 << 20 // 4 MiB chunks
	o.FS = NewErrorFS(inj)
	s := openStore(t, o)
	released := false
	release := func() {
		if !released {
			released = true
			close(stall)
		}
	}
	t.Cleanup(release) // before the store's Close, which waits for the warmer
	first := 0         // put until the warmer syncs its first chunk
	for ; len(inj.Hits()) == 0; first++ {
		if first == 8<<10 {
			t.Fatal("no warmer sync in the first 8 MiB")
		}
		mustPut(t, s, testMessage("Stall", 0, first))
	}
	n := first + 5<<10 // 5 MiB more, through the chunk
	done := make(chan error, 1)
	go func() {
		for i := first; i < n; i++ {
			if _, err := s.PutMessage(testMessage("Stall", 0, i)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("put: %v", err)
		}
	case <-time.After(testutil.DefaultTimeout):
		t.Fatal("puts wait for the warmer's stalled sync")
	}
	release()
	waitDispatched(t, s)
	checkQueue(t, s, "Stall", 0, n)
}
