package timer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCrashDuplicatesAreBoundedByTheCommitWindow: the flush goroutine commits
// the deliveries (a flush writes the checkpoint) as soon as a batch of them is
// uncommitted, and the dequeue never has more than CommitWindow batches
// uncommitted, so a kill -9 redoes at most BatchSize × CommitWindow of them,
// whatever the FlushInterval. 60 messages due together go out in batches of
// 8 with a window of 2; the store is killed after a batch was stored, or
// inside a commit's flush, and restarted: every message arrives, and at most
// 16 twice.
func TestCrashDuplicatesAreBoundedByTheCommitWindow(t *testing.T) {
	const n, batch, window = 60, 8, 2
	for _, tc := range []struct {
		point string
		hit   int
	}{
		{"dequeue:after-deliver", 1},
		{"dequeue:after-deliver", 4},
		{"flush:begin", 1},
		{"flush:begin", 3},
		{"flush:after-timerlog", 2},
		{"flush:after-wheel", 1},
		{"flush:after-wheel", 2},
		{"flush:after-deletes", 3},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.point, tc.hit), func(t *testing.T) {
			var hits atomic.Int32
			e := dueTogether(t, batch, window, n, "Dup", func(name string) error {
				if name == tc.point && hits.Add(1) == int32(tc.hit) {
					return errInjectedCrash
				}
				return nil
			})
			if !settleOrDead(e) {
				t.Fatalf("failpoint %s never fired (%d hits)", tc.point, hits.Load())
			}
			ts := e.ts()
			ts.kill()
			ts.closeFiles()
			before := ts.Stats().Delivered
			e.openTimer()
			e.settle()
			counts := uniqCounts(e.got("Dup"))
			if len(counts) != n {
				t.Fatalf("%d distinct messages delivered, want %d", len(counts), n)
			}
			dups := 0
			for _, c := range counts {
				dups += c - 1
			}
			if dups > batch*window {
				t.Fatalf("%d duplicates after a crash with %d delivered, want at most the commit window (%d)", dups, before, batch*window)
			}
			t.Logf("delivered before the crash %d, duplicated %d", before, dups)
		})
	}
}

// TestDeliveriesShareCommits: timers due a millisecond apart are delivered
// each at its time, but their commits are grouped: a flush once BatchSize
// deliveries are uncommitted, or before the dequeue sleeps longer than
// commitIdleMs; never one per delivery. Nothing is left uncommitted once
// the dequeue goes idle.
func TestDeliveriesShareCommits(t *testing.T) {
	const n, batch = 40, 8
	e := newEnv(t, func(o *Options) {
		o.BatchSize = batch
		o.FlushInterval = time.Hour // only the commits flush
	})
	start := e.nowMs() + 500
	for i := range n {
		e.sendAt("Spread", start+int64(i))
	}
	e.settle()
	e.advance(500 * time.Millisecond)
	ckptSeq := func() uint64 {
		ts := e.ts()
		ts.flushMu.Lock()
		defer ts.flushMu.Unlock()
		return ts.ckf.last.seq
	}
	seq0 := ckptSeq()
	for i := range n {
		e.waitCount("Spread", i+1)
		e.settle()
		ts := e.ts()
		ts.mu.Lock()
		pending := ts.committed - ts.durableCommitted
		ts.mu.Unlock()
		if pending > batch {
			t.Fatalf("%d deliveries uncommitted, want at most %d", pending, batch)
		}
		if i < n-1 {
			e.advance(time.Millisecond)
		}
	}
	e.waitCount("Spread", n)
	e.settle()
	e.advance(time.Second) // past the slot: the dequeue sleeps long, after a commit
	e.settle()
	ts := e.ts()
	ts.mu.Lock()
	pending := ts.committed - ts.durableCommitted
	ts.mu.Unlock()
	seq := ckptSeq()
	if pending != 0 {
		t.Fatalf("%d deliveries left uncommitted when idle", pending)
	}
	if commits := seq - seq0; commits > n/batch+2 {
		t.Fatalf("%d commits for %d deliveries in batches of %d", commits, n, batch)
	}
}

// TestDeliveriesGoOnWhileACommitSyncs: a commit's syncs run on the flush
// goroutine, so a slow disk does not stop the deliveries: while a commit is
// stalled in its flush, the dequeue delivers on up to the commit window
// (more than one batch), then waits, and carries on once the flush ends.
func TestDeliveriesGoOnWhileACommitSyncs(t *testing.T) {
	const n, batch, window = 60, 8, 3
	stall := make(chan struct{})
	release := sync.OnceFunc(func() { close(stall) })
	var stalled atomic.Bool
	e := dueTogether(t, batch, window, n, "Stall", func(name string) error {
		if name == "flush:after-timerlog" && stalled.CompareAndSwap(false, true) {
			<-stall
		}
		return nil
	})
	t.Cleanup(release) // before the store's Stop, which waits for the flush
	ts := e.ts()
	e.waitFor("the dequeue to wait for the stalled commit", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.deqWaitsCommit
	})
	e.waitCount("Stall", batch*window)
	if d := ts.Stats().Delivered; d != batch*window {
		t.Fatalf("%d delivered while the commit stalled, want the commit window (%d)", d, batch*window)
	}
	release()
	e.waitCount("Stall", n)
	e.settle()
	if counts := uniqCounts(e.got("Stall")); len(counts) != n {
		t.Fatalf("%d distinct messages delivered, want %d", len(counts), n)
	}
	ts.mu.Lock()
	pending := ts.committed - ts.durableCommitted
	ts.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d deliveries left uncommitted when idle", pending)
	}
}

// dueTogether opens a timer store whose only flushes are the dequeue's
// commits (BatchSize batch, CommitWindow window), stores n messages on topic
// due together, and once the store has settled arms fp, which from then on
// runs at every failpoint, and moves the clock past their due time.
func dueTogether(t *testing.T, batch, window, n int, topic string, fp func(name string) error) *env {
	t.Helper()
	var armed atomic.Bool
	e := newEnv(t, func(o *Options) {
		o.BatchSize = batch
		o.CommitWindow = window
		o.FlushInterval = time.Hour // only the commits flush
		o.failpoint = func(name string) error {
			if !armed.Load() {
				return nil
			}
			return fp(name)
		}
	})
	at := e.nowMs() + 500
	for range n {
		e.sendAt(topic, at)
	}
	e.settle()
	armed.Store(true)
	e.advance(time.Second)
	return e
}
