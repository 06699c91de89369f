package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// gateSegment returns options whose allocator holds the commitlog file
// starting at start until the returned release is called; entered receives
// once the allocator is held there. Call release (t.Cleanup after openStore)
// before the store's Close, which waits for the allocator.
func gateSegment(t *testing.T, o Options, start int64) (Options, <-chan struct{}, func()) {
	t.Helper()
	entered := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	prev := o.BeforeSegmentCreate // another gate, for another file
	o.BeforeSegmentCreate = func(at int64) {
		if prev != nil {
			prev(at)
		}
		if at == start {
			entered <- struct{}{}
			<-gate
		}
	}
	return o, entered, release
}

// A roll whose next file is not created yet: the inline put is refused at
// once with nothing written, the put lock stays free (reads and more inline
// puts are answered), a blocking put waits, and it completes in the new file
// once the allocation goes on.
func TestInlinePutRefusedWhileNextFileIsCreated(t *testing.T) {
	o := testOptions(t.TempDir())
	size := o.MappedFileSizeCommitLog
	o, entered, release := gateSegment(t, o, size)
	s := openStore(t, o)
	t.Cleanup(release)
	m := testMessage("Roll", 0, 1)

	// Fill file 0 with blocking puts until the next record does not fit.
	first := mustPut(t, s, m)
	<-entered // file 0 is listed; file 1 is asked for and held
	n := int64(first.WroteBytes)
	var puts int
	for s.MaxPhyOffset()+n+blankRecordLength <= size {
		if res, err := s.PutMessageInline(m); errors.Is(err, ErrWouldBlock) {
			mustPut(t, s, m) // the warmer was zeroing the range
		} else if err != nil || res.PhysicalOffset >= size {
			t.Fatalf("inline put in file 0: %+v, %v", res, err)
		}
		puts++
	}
	end := s.MaxPhyOffset()

	if _, err := s.PutMessageInline(m); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("inline put needing the held file: %v, want ErrWouldBlock", err)
	}
	if s.MaxPhyOffset() != end || len(s.cl.files) != 1 {
		t.Fatalf("the refused put wrote something: end %d -> %d, %d files", end, s.MaxPhyOffset(), len(s.cl.files))
	}

	blocked := make(chan *PutResult, 1)
	go func() { blocked <- mustPut(t, s, m) }()
	// The blocking put waits outside the put lock: this inline put and this
	// read are answered while the allocation is still held.
	if _, err := s.PutMessageInline(m); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("second inline put: %v, want ErrWouldBlock", err)
	}
	if _, err := s.LookMessageByOffset(first.PhysicalOffset); err != nil {
		t.Fatalf("read while the roll is held: %v", err)
	}
	select {
	case r := <-blocked:
		t.Fatalf("blocking put completed (%+v) while its file was not created", r)
	default:
	}

	release()
	r := <-blocked
	if r.PhysicalOffset != size {
		t.Fatalf("blocked put stored at %d, want the start of file 1 (%d)", r.PhysicalOffset, size)
	}
	if res, err := s.PutMessageInline(m); err != nil && !errors.Is(err, ErrWouldBlock) || err == nil && res.PhysicalOffset != size+n {
		t.Fatalf("inline put after the roll: %+v, %v", res, err)
	}
	if info := s.RuntimeInfo(); info["putMessageInlineWouldBlock"] == "0" {
		t.Fatalf("refusals not counted: %v", info)
	}
	waitDispatched(t, s)
	if got, want := len(readQueue(t, s, "Roll", 0)), puts+2; got < want {
		t.Fatalf("queue holds %d messages, want at least %d", got, want)
	}
}

// A writer refused because the file it needs is not created yet waits for
// that file only. Once another writer has taken it, the allocator's pending
// request is the file after it, which the refused writer does not need: it
// used to wait for that one too, so the first sends to a new store were
// answered only once its second 1 GiB file was created (workload 4 of
// bench/compare: 2 700 sends answered 0.27 s late, then lateness p99
// 0.3-0.6 s at the start of each delay level).
func TestRefusedWriterWaitsOnlyForItsFile(t *testing.T) {
	o := testOptions(t.TempDir())
	size := o.MappedFileSizeCommitLog
	o, entered1, release1 := gateSegment(t, o, size)
	o, entered0, release0 := gateSegment(t, o, 0)
	s := openStore(t, o)
	t.Cleanup(release1)
	t.Cleanup(release0)
	m := testMessage("Refused", 0, 1)

	_, refused := s.PutMessageInline(m)
	var seg *waitSegmentError
	if !errors.As(refused, &seg) || seg.start != 0 {
		t.Fatalf("inline put on an empty store before file 0 exists: %v, want a wait for file 0", refused)
	}
	<-entered0
	release0()
	if r := mustPut(t, s, m); r.PhysicalOffset != 0 {
		t.Fatalf("first put stored at %d, want 0", r.PhysicalOffset)
	}
	<-entered1 // file 0 is listed; file 1 is asked for and held

	waited := make(chan struct{})
	go func() {
		s.cl.awaitWritable(refused) // the writer refused before file 0 was there
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer refused for file 0 still waits, for file 1, which it does not need")
	}
	if r := mustPut(t, s, m); r.PhysicalOffset >= size {
		t.Fatalf("put after the wait stored at %d, want file 0", r.PhysicalOffset)
	}
}

// Many putters, inline and blocking, over the smallest files: every record
// lands once, in queue order, across many rolls, and survives a reopen.
func TestInlineAndBlockingPutsAcrossSmallFiles(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeCommitLog = minCommitLogFileSize
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 4, 150
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := testMessage("Small", int32(g), i)
				m.Body = m.Body[:min(len(m.Body), 300)]
				if g%2 == 0 {
					if _, err := s.PutMessageInline(m); err == nil {
						continue
					} else if !errors.Is(err, ErrWouldBlock) {
						t.Errorf("inline put: %v", err)
						return
					}
				}
				if _, err := s.PutMessage(m); err != nil {
					t.Errorf("put: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		s.Close()
		return
	}
	if got := len(s.cl.files); got < 20 {
		t.Fatalf("%d commitlog files, want many rolls", got)
	}
	check := func(s *Store) {
		t.Helper()
		waitDispatched(t, s)
		for g := range goroutines {
			msgs := readQueue(t, s, "Small", int32(g))
			if len(msgs) != each {
				t.Fatalf("queue %d holds %d messages, want %d", g, len(msgs), each)
			}
			for i, me := range msgs {
				want := fmt.Appendf(nil, "Small/%d/msg-%06d|", g, i)
				if !bytes.HasPrefix(me.Body, want) {
					t.Fatalf("queue %d offset %d: body %q", g, i, me.Body)
				}
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openStore(t, o))
}

// Every state a crash can leave the next file in — not created, created
// empty, cut short, full of zeros — is recovered after a clean shutdown and
// after a crash: all records stay, nothing past them is kept, and the store
// rolls on over the files as usual.
func TestRecoveryWithNextFileHalfCreated(t *testing.T) {
	states := []struct {
		name string
		make func(t *testing.T, path string, size int64)
	}{
		{name: "not created", make: func(t *testing.T, path string, size int64) {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}},
		{name: "created empty", make: func(t *testing.T, path string, size int64) { truncateFile(t, path, 0) }},
		{name: "cut short", make: func(t *testing.T, path string, size int64) { truncateFile(t, path, size/3) }},
		{name: "full of zeros", make: func(t *testing.T, path string, size int64) { truncateFile(t, path, size) }},
	}
	for _, crashed := range []bool{false, true} {
		for _, st := range states {
			t.Run(fmt.Sprintf("%s/crash=%v", st.name, crashed), func(t *testing.T) {
				o := testOptions(t.TempDir())
				size := o.MappedFileSizeCommitLog
				s := openStore(t, o)
				var n int
				for s.MaxPhyOffset() < size+size/2 { // into file 1; file 2 is created ahead
					mustPut(t, s, testMessage("Half", 0, n))
					n++
				}
				testutil.WaitFor(t, 10*time.Second, func() bool {
					_, err := os.Stat(filepath.Join(o.Dir, commitLogDir, segmentName(2*size)))
					return err == nil
				}, "the file created ahead")
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				next := filepath.Join(o.Dir, commitLogDir, segmentName(2*size))
				if fi, err := os.Stat(next); err != nil || fi.Size() != size {
					t.Fatalf("file created ahead: %v, %v", fi, err)
				}
				os.Remove(next) // recreated in the state below
				if err := os.WriteFile(next, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				st.make(t, next, size)
				if crashed {
					if err := os.WriteFile(filepath.Join(o.Dir, abortName), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}

				r := openStore(t, o)
				if clean := r.RuntimeInfo()["recoveryCleanShutdown"] == "true"; clean == crashed {
					t.Fatalf("recovered as clean=%v", clean)
				}
				if got := len(r.cl.files); got != 2 {
					t.Fatalf("%d files listed after recovery, want 2 (the one past the end dropped)", got)
				}
				for i := n; i < n+300; i++ { // on over files 2, 3, ...
					mustPut(t, r, testMessage("Half", 0, i))
				}
				n += 300
				waitDispatched(t, r)
				if got := len(readQueue(t, r, "Half", 0)); got != n {
					t.Fatalf("%d messages after recovery and more puts, want %d", got, n)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				again := openStore(t, o)
				waitDispatched(t, again)
				msgs := readQueue(t, again, "Half", 0)
				got := make([]int, len(msgs))
				for i, me := range msgs {
					fmt.Sscanf(string(me.Body), "Half/0/msg-%06d|", &got[i])
				}
				want := make([]int, n)
				for i := range want {
					want[i] = i
				}
				if !slices.Equal(got, want) {
					t.Fatalf("reopened store holds %v, want 0..%d", symmetricDiff(got, want), n-1)
				}
			})
		}
	}
}

func truncateFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// The allocator warms the start of each file it creates: after a roll the
// warmer has nothing to do there, so the first records of the file never
// meet its chunk.
func TestRollTakesPrewarmedFile(t *testing.T) {
	o := testOptions(t.TempDir())
	size := o.MappedFileSizeCommitLog
	s := openStore(t, o)
	for i := 0; s.MaxPhyOffset() < size; i++ {
		mustPut(t, s, testMessage("Warm", 0, i))
	}
	w := s.cl.warm
	w.mu.Lock()
	done, ahead := w.done, w.ahead
	w.mu.Unlock()
	if want := size + min(ahead, size); done < want {
		t.Fatalf("warmer done at %d after the roll, want at least %d (file 1 warmed when created)", done, want)
	}
}

// prewarm zeroes ahead bytes (one chunk when the writer already waits for
// the file) from the second page of a new file, leaving the first page to
// the writer as the warmer did after a roll, and reports where the warmer
// goes on.
func TestPrewarmLeavesFirstPage(t *testing.T) {
	const size = 1 << 20
	cl := newCommitLog(t.TempDir(), size, testOptions("").Logger)
	f, err := cl.createSegment(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.close() })
	w := newWarmer(cl, 0)
	w.chunk = w.ahead / 4
	for _, waited := range []bool{true, false} {
		if _, err := f.file.WriteAt(bytes.Repeat([]byte{0xAB}, size), 0); err != nil {
			t.Fatal(err)
		}
		// A writer waiting for the file waits for one chunk, not the reach.
		want := pageSize + w.ahead
		if waited {
			want = pageSize + w.chunk
		}
		warmed := w.prewarm(f, make([]byte, warmWriteMapped), waited)
		if warmed != want {
			t.Fatalf("prewarm (writer waiting: %v) reports %d bytes, want %d", waited, warmed, want)
		}
		if bytes.Count(f.data[:pageSize], []byte{0xAB}) != int(pageSize) {
			t.Fatal("the first page was written")
		}
		if !allZero(f.data[pageSize:warmed]) {
			t.Fatalf("[%d, %d) not zeroed", pageSize, warmed)
		}
		if f.data[warmed] != 0xAB {
			t.Fatal("zeroed past the reported end")
		}
	}
}

// awaitNear holds the warm-up of the next file until a reservation comes
// within ahead bytes of it, the writer waits for the file, or the store
// stops.
func TestAwaitNear(t *testing.T) {
	const size = 1 << 20
	cl := newCommitLog(t.TempDir(), size, testOptions("").Logger)
	tests := []struct {
		name   string
		wake   func(t *testing.T, w *warmer, wanted, stop chan struct{})
		wantOK bool
	}{
		{name: "writer comes near", wantOK: true, wake: func(t *testing.T, w *warmer, _, _ chan struct{}) {
			w.tryReserve(size-w.ahead-100, size-w.ahead-1, false) // still short of it
			if !armed(w) {
				t.Error("released by a reservation short of the reach")
			}
			w.tryReserve(size-w.ahead-1, size-w.ahead, false)
		}},
		{name: "writer waits for the file", wantOK: true, wake: func(_ *testing.T, _ *warmer, wanted, _ chan struct{}) { close(wanted) }},
		{name: "store stops", wantOK: false, wake: func(_ *testing.T, _ *warmer, _, stop chan struct{}) { close(stop) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWarmer(cl, 0)
			wanted, stop := make(chan struct{}), make(chan struct{})
			res := make(chan bool, 1)
			go func() { res <- w.awaitNear(size, wanted, stop) }()
			for !armed(w) { // armed before it blocks, disarmed only on return
				runtime.Gosched()
			}
			tc.wake(t, w, wanted, stop)
			if ok := <-res; ok != tc.wantOK {
				t.Fatalf("awaitNear = %v, want %v", ok, tc.wantOK)
			}
			if armed(w) || len(w.near) != 0 {
				t.Fatal("left armed or with a signal pending")
			}
		})
	}
	// A writer already within reach: no wait at all.
	w := newWarmer(cl, 0)
	w.reserved = size - w.ahead
	if !w.awaitNear(size, nil, nil) {
		t.Fatal("awaitNear = false with the writer within reach")
	}
}

func armed(w *warmer) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nearArmed
}
