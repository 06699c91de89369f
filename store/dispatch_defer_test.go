package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// dispatchLog records OnDispatch calls.
type dispatchLog struct {
	mu   sync.Mutex
	seen []DispatchRequest
}

func (l *dispatchLog) add(d DispatchRequest) {
	l.mu.Lock()
	l.seen = append(l.seen, d)
	l.mu.Unlock()
}

// offsets lists the queue offsets OnDispatch saw for topic, in call order.
func (l *dispatchLog) offsets(topic string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, d := range l.seen {
		if d.Topic == topic {
			out = append(out, d.QueueOffset)
		}
	}
	return out
}

// putWithin puts message i of the test stream and fails the test when
// it does not return within testWait: a put must never wait for a queue
// file.
func putWithin(t *testing.T, s *Store, topic string, i int) *PutResult {
	t.Helper()
	done := make(chan *PutResult, 1)
	go func() {
		r, err := s.PutMessage(testMessage(topic, 0, i))
		if err != nil {
			t.Errorf("PutMessage(%s, %d): %v", topic, i, err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(testWait):
		t.Fatalf("PutMessage(%s, %d) blocked", topic, i)
		return nil
	}
}

// stallNewQueueFile makes the creation of topic NEW's queue files (their
// open) wait until release is called; release runs anyway at the end of
// the test, before the store's Close. inj is the injector of the store's
// FS (faultFS).
func stallNewQueueFile(t *testing.T, inj *Injector) (release func()) {
	stall := make(chan struct{})
	release = sync.OnceFunc(func() { close(stall) })
	t.Cleanup(release)
	inj.Add(Rule{Op: OpOpen, Path: filepath.Join(consumeQueueDir, "NEW"), Stall: stall})
	return release
}

// failNewQueueFile makes the creation of topic NEW's queue files fail
// until the injector's rules are cleared.
func failNewQueueFile(inj *Injector) {
	inj.Add(Rule{Op: OpOpen, Path: filepath.Join(consumeQueueDir, "NEW")})
}

// faultFS makes o's file operations go through a new injector, with no
// rule yet: tests add theirs once the store is open.
func faultFS(o *Options) *Injector {
	inj := &Injector{}
	o.FS = NewErrorFS(inj)
	return inj
}

// holdDispatchAtNEW makes the dispatcher wait at the first record of topic
// NEW until open is called, so that the records stored behind it are in the
// commitlog before its file creation fails (puts are refused after that).
// Puts leave their records to the dispatcher goroutine, which waits; a put
// dispatching its own would wait instead.
func holdDispatchAtNEW(o *Options) (open func()) {
	o.noOwnDispatch = true
	gate := make(chan struct{})
	var once sync.Once
	o.dispatchFault = func(d *DispatchRequest) error {
		if d.Topic == "NEW" {
			once.Do(func() { <-gate })
		}
		return nil
	}
	return func() { close(gate) }
}

// A new queue's first file is created while the dispatcher goes on: records
// of other queues behind the first record of the new queue are dispatched
// (units written, OnDispatch called) while the creation stalls; the new
// queue's records follow in queue order once the file exists; reput, what
// the checkpoint and WaitDispatched read, stays at the new queue's first
// record until then; and a crash in the middle loses nothing. Before the
// deferral the dispatcher created the file in place and every queue waited
// for it (1.9 s at a 1 024-queue topic's first messages on a slow disk,
// timers included).
func TestDispatchGoesOnWhileAQueueFileIsCreated(t *testing.T) {
	o := testOptions(t.TempDir())
	var log dispatchLog
	o.OnDispatch = log.add
	inj := faultFS(&o)
	s := openStore(t, o)
	for i := 0; i < 3; i++ {
		mustPut(t, s, testMessage("OLD", 0, i))
	}
	waitDispatched(t, s)

	release := stallNewQueueFile(t, inj)

	first := putWithin(t, s, "NEW", 0)
	putWithin(t, s, "OLD", 3)
	putWithin(t, s, "NEW", 1)
	putWithin(t, s, "OLD", 4)
	testutil.WaitFor(t, testWait, func() bool { return len(log.offsets("OLD")) == 5 }, "OLD's records dispatched while NEW's file is created")
	if got := s.MaxOffsetInQueue("OLD", 0); got != 5 {
		t.Fatalf("OLD has %d units, want 5", got)
	}
	if got := s.MaxOffsetInQueue("NEW", 0); got != 0 {
		t.Fatalf("NEW has %d units before its file exists", got)
	}
	if got := log.offsets("OLD"); len(got) != 5 || got[3] != 3 || got[4] != 4 {
		t.Fatalf("OnDispatch saw OLD offsets %v, want 0-4", got)
	}
	if got := log.offsets("NEW"); len(got) != 0 {
		t.Fatalf("OnDispatch saw NEW offsets %v before its units were written", got)
	}
	if got := s.reput.Load(); false && got != first.PhysicalOffset {
		t.Fatalf("reput %d, want %d: the first record waiting for its file", got, first.PhysicalOffset)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); false && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDispatched returned %v while NEW's records wait", err)
	}
	cancel()
	if got := len(inj.Hits()); got != 1 {
		t.Fatalf("%d creation attempts, want 1: %v", got, inj.Hits())
	}

	// A crash now, after a checkpoint with the whole commitlog flushed
	// (recovery starts at the lower of its two offsets): the checkpoint
	// must not cover NEW's records.
	if err := s.cl.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	crashed := testOptions(t.TempDir())
	copyDir(t, o.Dir, crashed.Dir)
	c := openStore(t, crashed)
	waitDispatched(t, c)
	checkQueue(t, c, "NEW", 0, 2)
	checkQueue(t, c, "OLD", 0, 5)
	c.Close()

	release()
	waitDispatched(t, s)
	if got := log.offsets("NEW"); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("OnDispatch saw NEW offsets %v, want [0 1]", got)
	}
	checkQueue(t, s, "NEW", 0, 2)
	checkQueue(t, s, "OLD", 0, 5)
	putWithin(t, s, "NEW", 2)
	waitDispatched(t, s)
	checkQueue(t, s, "NEW", 0, 3)
}

// A queue file that cannot be created stalls dispatch as a unit that cannot
// be written does: puts are refused (not a full disk: ErrNotWritable), the
// other queues' records already stored are still dispatched, and the
// creation is tried again until it succeeds; a store closed meanwhile
// leaves the records to the next Open's recovery.
func TestQueueFileThatCannotBeCreatedStallsDispatch(t *testing.T) {
	for _, closeFirst := range []bool{false, true} {
		name := "recovers"
		if closeFirst {
			name = "closed while failing"
		}
		t.Run(name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			// The dispatcher waits at NEW's record until OLD's is stored
			// behind it: once it fails to create NEW's file, puts are
			// refused.
			openGate := holdDispatchAtNEW(&o)
			inj := faultFS(&o)
			s, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mustPut(t, s, testMessage("OLD", 0, 0))
			waitDispatched(t, s)
			failNewQueueFile(inj)
			mustPut(t, s, testMessage("NEW", 0, 0))
			mustPut(t, s, testMessage("OLD", 0, 1))
			openGate()
			testutil.WaitFor(t, testWait, func() bool { return s.dispatchStalled.Load() }, "dispatch stall")
			testutil.WaitFor(t, testWait, func() bool { return s.MaxOffsetInQueue("OLD", 0) == 2 }, "OLD dispatched past the stall")
			_, err = s.PutMessage(testMessage("OLD", 0, 2))
			if !errors.Is(err, ErrNotWritable) || errors.Is(err, ErrDiskFull) {
				t.Fatalf("put while a queue file cannot be created: %v, want ErrNotWritable", err)
			}
			testutil.WaitFor(t, testWait, func() bool { return len(inj.Hits()) >= 2 }, "the creation tried again")
			if closeFirst {
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				inj.Clear()
				s, err = Open(o)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
			} else {
				inj.Clear()
				testutil.WaitFor(t, testWait, func() bool { return !s.dispatchStalled.Load() }, "dispatch resumed")
			}
			waitDispatched(t, s)
			checkQueue(t, s, "NEW", 0, 1)
			mustPut(t, s, testMessage("OLD", 0, 2))
			waitDispatched(t, s)
			checkQueue(t, s, "OLD", 0, 3)
		})
	}
}

// A deferred record whose unit cannot be written once its file exists (the
// disk filled meanwhile) stalls dispatch, and when the retry writes it,
// puts are accepted again. The retry used to report the error it retried
// as still failing: dispatch stalled again at the commitlog's end, where
// nothing was left to dispatch past it, and puts stayed refused for good
// (TestDiskFillsMidSegment/SYNC_FLUSH on a tmpfs, 3 runs in 30 in CI).
func TestDeferredRecordWrittenOnRetryResumesPuts(t *testing.T) {
	var full atomic.Bool
	o := testOptions(t.TempDir())
	o.dispatchFault = func(d *DispatchRequest) error {
		if d.Topic == "NEW" {
			return diskFullFault(&full)(d)
		}
		return nil
	}
	inj := faultFS(&o)
	s := openStore(t, o)
	mustPut(t, s, testMessage("OLD", 0, 0))
	waitDispatched(t, s)
	release := stallNewQueueFile(t, inj)
	putWithin(t, s, "NEW", 0)
	// The dispatcher has deferred the record and the creator is at its
	// file: the disk fills before the unit is written.
	testutil.WaitFor(t, testWait, func() bool { return len(inj.Hits()) == 1 }, "the creator at NEW's file")
	full.Store(true)
	release()
	testutil.WaitFor(t, testWait, func() bool { return s.dispatchStalled.Load() }, "dispatch stall")
	if _, err := s.PutMessage(testMessage("OLD", 0, 1)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put while the deferred unit cannot be written: %v, want ErrDiskFull", err)
	}
	full.Store(false)
	testutil.WaitFor(t, testWait, func() bool {
		_, err := s.PutMessage(testMessage("OLD", 0, 1))
		return err == nil
	}, "puts accepted again")
	waitDispatched(t, s)
	checkQueue(t, s, "NEW", 0, 1)
	checkQueue(t, s, "OLD", 0, 2)
}

// A stall recorded at the commitlog's end (a deferral that failed before it
// held a record: its record failed too and stalled dispatch at itself) is
// lifted by the next pass once nothing stored is left undispatched: puts,
// refused, cannot move reput past it.
func TestStallAtTheEndLiftsOnceEverythingIsDispatched(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	mustPut(t, s, testMessage("T", 0, 0))
	waitDispatched(t, s)
	s.stallDispatch(s.reput.Load(), fmt.Errorf("%w: test fault", ErrDiskFull))
	if _, err := s.PutMessage(testMessage("T", 0, 1)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put while stalled: %v, want ErrDiskFull", err)
	}
	dispatchPass(t, s)
	mustPut(t, s, testMessage("T", 0, 1))
	waitDispatched(t, s)
	checkQueue(t, s, "T", 0, 2)
}

// The records waiting for files are bounded: past maxDeferred the
// dispatcher waits for the creation instead of reading on.
func TestDeferredRecordsAreBounded(t *testing.T) {
	o := testOptions(t.TempDir())
	o.maxDeferred = 4
	inj := faultFS(&o)
	s := openStore(t, o)
	mustPut(t, s, testMessage("OLD", 0, 0))
	waitDispatched(t, s)
	release := stallNewQueueFile(t, inj)
	for i := 0; i < 3; i++ {
		putWithin(t, s, "NEW", i)
	}
	putWithin(t, s, "OLD", 1) // three deferred: dispatched
	testutil.WaitFor(t, testWait, func() bool { return s.MaxOffsetInQueue("OLD", 0) == 2 }, "OLD dispatched with three records deferred")
	for i := 3; i < 6; i++ {
		putWithin(t, s, "NEW", i)
	}
	putWithin(t, s, "OLD", 2) // behind the fourth deferred: waits for the file
	time.Sleep(50 * time.Millisecond)
	if got := s.MaxOffsetInQueue("OLD", 0); got != 2 {
		t.Fatalf("OLD has %d units with more than maxDeferred records deferred, want 2", got)
	}
	release()
	waitDispatched(t, s)
	checkQueue(t, s, "NEW", 0, 6)
	checkQueue(t, s, "OLD", 0, 3)
}

// With maxDeferred records waiting for a file that cannot be created, the
// dispatcher stops reading on (and stalls) rather than holding every
// record behind in memory; it resumes once the file can be created.
func TestDeferredRecordsAreBoundedWhileCreationFails(t *testing.T) {
	o := testOptions(t.TempDir())
	o.maxDeferred = 4
	// The dispatcher waits at NEW's first record until everything below
	// is stored: once it fails to create NEW's file, puts are refused.
	openGate := holdDispatchAtNEW(&o)
	inj := faultFS(&o)
	s := openStore(t, o)
	mustPut(t, s, testMessage("OLD", 0, 0))
	waitDispatched(t, s)
	failNewQueueFile(inj)
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("NEW", 0, i))
	}
	mustPut(t, s, testMessage("OLD", 0, 1))
	openGate()
	testutil.WaitFor(t, testWait, func() bool { return s.dispatchStalled.Load() }, "dispatch stall")
	testutil.WaitFor(t, testWait, func() bool { return len(inj.Hits()) >= 2 }, "the creation tried again")
	if got := s.MaxOffsetInQueue("OLD", 0); got != 1 {
		t.Fatalf("OLD has %d units with maxDeferred records waiting for a file that fails, want 1", got)
	}
	inj.Clear()
	testutil.WaitFor(t, testWait, func() bool { return !s.dispatchStalled.Load() }, "dispatch resumed")
	waitDispatched(t, s)
	checkQueue(t, s, "NEW", 0, 5)
	checkQueue(t, s, "OLD", 0, 2)
}

// DeleteTopics waits for the records dispatched before it, those waiting
// for their queue's file included, so a deleted queue is not brought back
// by a record that was waiting for its file.
func TestDeleteTopicsWaitsForDeferredRecords(t *testing.T) {
	o := testOptions(t.TempDir())
	var log dispatchLog
	o.OnDispatch = log.add
	inj := faultFS(&o)
	s := openStore(t, o)
	mustPut(t, s, testMessage("OLD", 0, 0))
	waitDispatched(t, s)
	release := stallNewQueueFile(t, inj)
	putWithin(t, s, "NEW", 0)
	putWithin(t, s, "OLD", 1)
	testutil.WaitFor(t, testWait, func() bool { return len(log.offsets("OLD")) == 2 }, "OLD dispatched while NEW's file is created")
	deleted := make(chan struct{})
	go func() {
		s.DeleteTopics("NEW")
		close(deleted)
	}()
	select {
	case <-deleted:
		t.Fatal("DeleteTopics returned while a record of the topic waited for its file")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	<-deleted
	if got := log.offsets("NEW"); len(got) != 1 {
		t.Fatalf("OnDispatch saw NEW offsets %v before the delete, want [0]", got)
	}
	waitDispatched(t, s)
	if got := s.MaxOffsetInQueue("NEW", 0); got != 0 {
		t.Fatalf("NEW has %d units after its deletion", got)
	}
	if r := putWithin(t, s, "NEW", 0); r.QueueOffset != 0 {
		t.Fatalf("first put after the delete got queue offset %d, want 0", r.QueueOffset)
	}
	waitDispatched(t, s)
	checkQueue(t, s, "NEW", 0, 1)
	checkQueue(t, s, "OLD", 0, 2)
}
