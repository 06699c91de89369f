package store

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dispatchByPuts reads the count of puts that dispatched their own records.
func dispatchByPuts(t testing.TB, s *Store) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.RuntimeInfo()["dispatchByPuts"], 10, 64)
	if err != nil {
		t.Fatalf("dispatchByPuts: %v", err)
	}
	return n
}

// ownDispatchOptions are testOptions with files large enough that the puts
// of a test roll over no file and release no mapped pages.
func ownDispatchOptions(dir string) Options {
	o := testOptions(dir)
	o.MappedFileSizeCommitLog = 4 << 20
	o.MappedFileSizeConsumeQueue = 1000 * cqUnitSize
	return o
}

// TestPutDispatchesItsOwnRecords: a put whose records are the next to
// dispatch, with the dispatcher goroutine idle, returns with them in their
// consume queue and OnDispatch called, without waking that goroutine
// (dispatch_own.go).
func TestPutDispatchesItsOwnRecords(t *testing.T) {
	o := ownDispatchOptions(t.TempDir())
	var seen atomic.Int64
	o.OnDispatch = func(d DispatchRequest) {
		if d.Topic == "T" {
			seen.Add(1)
		}
	}
	s := openStore(t, o)
	mustPut(t, s, testMessage("T", 0, 0)) // its queue file is created by the creator
	waitDispatched(t, s)
	const n = 50
	for i := 1; i < n; i++ {
		before := dispatchByPuts(t, s)
		mustPut(t, s, testMessage("T", 0, i))
		if dispatchByPuts(t, s) == before {
			continue // the dispatcher was in a pass: it has the record
		}
		if got := s.MaxOffsetInQueue("T", 0); got != int64(i+1) {
			t.Fatalf("put %d dispatched its record, but the queue ends at %d", i, got)
		}
		if got := seen.Load(); got != int64(i+1) {
			t.Fatalf("put %d dispatched its record, but OnDispatch saw %d records", i, got)
		}
		if s.reput.Load() != s.MaxPhyOffset() {
			t.Fatalf("put %d dispatched its record, but reput %d is short of %d", i, s.reput.Load(), s.MaxPhyOffset())
		}
	}
	own := dispatchByPuts(t, s)
	if own == 0 {
		t.Fatalf("none of %d puts dispatched its own record", n-1)
	}
	t.Logf("%d of %d puts dispatched their own records", own, n-1)
	checkQueue(t, s, "T", 0, n)
}

// TestPutLeavesIndexRollOverToTheDispatcher: a put whose keys do not fit in
// the newest index file leaves the roll-over, which creates a file, to the
// dispatcher goroutine. With the creation stalled, puts still return (they
// run on event loops, which must not wait for the disk); once it completes,
// every record is in its queue and found by its keys on both sides of the
// roll-over.
func TestPutLeavesIndexRollOverToTheDispatcher(t *testing.T) {
	dir := t.TempDir()
	o := ownDispatchOptions(dir)
	o.Index = IndexOptions{HashSlotNum: 16, MaxIndexNum: 8} // 7 entries: 3 messages of 2 keys
	// The fault's rule comes once the first index file exists.
	inj := &Injector{}
	o.FS = NewErrorFS(inj)
	s := openStore(t, o)
	mustPut(t, s, testMessage("T", 0, 0))
	waitDispatched(t, s) // the first index file exists

	stall := make(chan struct{})
	inj.Add(Rule{Op: OpOpen, Path: filepath.Join(dir, "index"), Stall: stall})
	const n = 8
	done := make(chan error, 1)
	go func() {
		for i := 1; i < n; i++ {
			if _, err := s.PutMessage(testMessage("T", 0, i)); err != nil {
				done <- fmt.Errorf("put %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			close(stall)
			t.Fatal(err)
		}
	case <-time.After(testWait):
		close(stall)
		t.Fatal("a put waited for the creation of an index file")
	}
	if got := s.MaxOffsetInQueue("T", 0); got >= n {
		t.Fatalf("queue ends at %d with the index file creation stalled, want records left to the dispatcher", got)
	}
	close(stall)
	waitDispatched(t, s)
	checkQueue(t, s, "T", 0, n)
	if len(inj.Hits()) == 0 {
		t.Fatal("no index file was created")
	}
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		res, err := s.QueryMessage("T", key, 4, 0, math.MaxInt64)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("QueryMessage(T, %s): %d messages, %v; want 1", key, len(res.Messages), err)
		}
	}
}

// TestConcurrentPutsDispatchEveryRecordInOrder: puts on several goroutines,
// some dispatching their own records and some leaving them to the
// dispatcher, leave every queue whole and in order, and reput at the end.
func TestConcurrentPutsDispatchEveryRecordInOrder(t *testing.T) {
	o := testOptions(t.TempDir()) // small files: roll-overs and releases leave records to the dispatcher
	s := openStore(t, o)
	const putters, each = 4, 300
	var wg sync.WaitGroup
	for p := range putters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.PutMessage(testMessage("C", int32(p), i)); err != nil {
					t.Errorf("put %d/%d: %v", p, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitDispatched(t, s)
	for p := range putters {
		checkQueue(t, s, "C", int32(p), each)
	}
	if got, want := s.reput.Load(), s.MaxPhyOffset(); got != want {
		t.Fatalf("reput %d, want the commitlog end %d", got, want)
	}
	t.Logf("%d of %d puts dispatched their own records", dispatchByPuts(t, s), putters*each)
}

// TestPutDoesNotWaitForAnIndexLookup: a lookup holds the index lock while it
// reads index and commitlog pages, which may be on the disk. A put does not
// wait for it: it leaves its record to the dispatcher goroutine, which adds
// the keys once the lookup is done.
func TestPutDoesNotWaitForAnIndexLookup(t *testing.T) {
	s := openStore(t, ownDispatchOptions(t.TempDir()))
	mustPut(t, s, testMessage("T", 0, 0))
	waitDispatched(t, s)
	s.index.mu.RLock() // a lookup in progress
	var once sync.Once
	unlock := func() { once.Do(s.index.mu.RUnlock) }
	defer unlock() // also when putWithin fails the test: Close takes the lock
	putWithin(t, s, "T", 1)
	unlock()
	waitDispatched(t, s)
	checkQueue(t, s, "T", 0, 2)
	res, err := s.QueryMessage("T", "k1", 4, 0, math.MaxInt64)
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("QueryMessage(T, k1): %d messages, %v; want 1", len(res.Messages), err)
	}
}

// TestPutOfANewQueueLeavesItsFileToTheCreator: a put dispatching its own
// first record of a new queue hands the queue's file to the creator, as the
// dispatcher does, and indexes the record's keys under the index lock it
// holds (it waited for itself there once: the keys of a deferred record are
// indexed at once). The record is in its queue once the file exists.
func TestPutOfANewQueueLeavesItsFileToTheCreator(t *testing.T) {
	s := openStore(t, ownDispatchOptions(t.TempDir()))
	mustPut(t, s, testMessage("T", 0, 0))
	waitDispatched(t, s) // the index has a file: a put may hold its lock
	putWithin(t, s, "U", 0)
	waitDispatched(t, s)
	checkQueue(t, s, "U", 0, 1)
	res, err := s.QueryMessage("U", "k0", 4, 0, math.MaxInt64)
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("QueryMessage(U, k0): %d messages, %v; want 1", len(res.Messages), err)
	}
}

// A put that no WaitDispatched caller watches keeps the progress channel
// (no channel made per put); one a caller took is closed by the next
// dispatch, and concurrent waiters each see their record dispatched.
func TestProgressChannelReplacedOnlyWhenWatched(t *testing.T) {
	s := openStore(t, ownDispatchOptions(t.TempDir()))
	mustPut(t, s, testMessage("P", 0, 0))
	waitDispatched(t, s)
	s.signalProgress() // waitDispatched took the channel
	current := func() chan struct{} {
		s.progressMu.Lock()
		defer s.progressMu.Unlock()
		return s.progress
	}
	before := current()
	for i := range 10 {
		mustPut(t, s, testMessage("P", 0, i+1))
	}
	if current() != before || s.progressWatched.Load() {
		t.Fatal("puts nobody waited for replaced the progress channel")
	}
	ch := s.progressChan()
	mustPut(t, s, testMessage("P", 0, 11))
	select {
	case <-ch:
	case <-time.After(testWait):
		t.Fatal("a watched progress channel was not closed by the next put")
	}
	if current() == before {
		t.Fatal("the closed channel was not replaced")
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				r, err := s.PutMessage(testMessage("P", int32(w+1), i))
				if err != nil {
					t.Errorf("waiter %d, put %d: %v", w, i, err)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), testWait)
				err = s.WaitDispatched(ctx, r.PhysicalOffset+int64(r.WroteBytes))
				cancel()
				if err != nil {
					t.Errorf("waiter %d, put %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
