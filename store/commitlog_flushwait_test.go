package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

// putNoWait stores a message without waiting and returns the end of its bytes.
func putNoWait(t *testing.T, s *Store, i int) int64 {
	t.Helper()
	m := testMessage("Wait", 0, i)
	m.SkipFlushWait = true
	r := mustPut(t, s, m)
	return r.PhysicalOffset + int64(r.WroteBytes)
}

func TestOnFlushedCallsAfterTheCoveringFlush(t *testing.T) {
	tests := []struct {
		name  string
		flush FlushDiskType
	}{
		{name: "SYNC_FLUSH: on the flusher", flush: SyncFlush},
		{name: "ASYNC_FLUSH: at once", flush: AsyncFlush},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.FlushDiskType = tc.flush
			o.SyncFlushTimeout = 10 * time.Second
			s := openStore(t, o)
			const n = 50
			var wg sync.WaitGroup
			var bad atomic.Int32
			for i := range n {
				end := putNoWait(t, s, i)
				wg.Add(1)
				s.OnFlushed(end, func(ok bool) {
					defer wg.Done()
					if !ok || tc.flush == SyncFlush && s.cl.flushedOffset.Load() < end {
						bad.Add(1)
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("callbacks did not all run")
			}
			if bad.Load() != 0 {
				t.Fatalf("%d callbacks ran before their bytes were durable or with ok=false", bad.Load())
			}
		})
	}
}

// The deadline of a callback is on the store's clock: it expires once that
// clock passes SyncFlushTimeout, not before, however long the disk takes.
func TestOnFlushedTimesOut(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	o := syncOptions(t)
	o.Clock = clk
	o.SyncFlushTimeout = 200 * time.Millisecond
	o.FlushConsumeQueueInterval = time.Hour // only the expiry timer fires below
	s := openStore(t, o)
	gate := make(chan struct{})
	s.cl.beforeFlush = func() { <-gate } // the disk never finishes
	t.Cleanup(func() { close(gate) })
	end := putNoWait(t, s, 0)
	got := make(chan bool, 1)
	s.OnFlushed(end, func(ok bool) { got <- ok })
	// The expiry loop and the queue flush loop wait on the clock.
	testutil.WaitFor(t, 5*time.Second, func() bool { return clk.Pending() == 2 }, "the flush loops' timers")

	// Each expiry pass ends by arming the next tick: once a timer is created
	// after the advance, the pass that saw the new time is over.
	expiryPass := func(d time.Duration) {
		created := clk.TimerCreated()
		clk.Advance(d)
		<-created
	}
	expiryPass(100 * time.Millisecond)
	select {
	case ok := <-got:
		t.Fatalf("callback ran (ok=%v) before the clock passed SyncFlushTimeout", ok)
	default:
	}
	expiryPass(150 * time.Millisecond)
	select {
	case ok := <-got:
		if ok {
			t.Fatal("callback reported durable bytes the disk never synced")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no callback after the timeout")
	}
	if s.RuntimeInfo()["putMessageFlushTimeouts"] != "1" {
		t.Fatalf("RuntimeInfo = %v", s.RuntimeInfo())
	}
}

func TestCloseRunsPendingCallbacks(t *testing.T) {
	s, err := Open(syncOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	var once sync.Once
	// The flusher is stuck in its first flush until Close has begun.
	s.cl.beforeFlush = func() { once.Do(func() { <-gate }) }
	end := putNoWait(t, s, 0)
	got := make(chan bool, 1)
	s.OnFlushed(end, func(ok bool) { got <- ok })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("Close flushed the bytes but reported the callback as failed")
		}
	default:
		t.Fatal("Close returned with a callback still pending")
	}
}
