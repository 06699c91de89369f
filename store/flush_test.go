package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

func syncOptions(t *testing.T) Options {
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	o.SyncFlushTimeout = 10 * time.Second
	return o
}

func TestSyncFlushGroupCommitOneFsyncForAllWaiters(t *testing.T) {
	s := openStore(t, syncOptions(t))
	gate := make(chan struct{})
	var entered atomic.Int32
	s.cl.beforeFlush = func() {
		if entered.Add(1) == 1 {
			<-gate // hold the first flush until every putter is waiting
		}
	}
	const putters = 9
	results := make(chan *PutResult, putters)
	var wg sync.WaitGroup
	put := func(i int) {
		defer wg.Done()
		r, err := s.PutMessage(testMessage("Sync", int32(i%3), i))
		if err != nil {
			t.Error(err)
			return
		}
		results <- r
	}
	wg.Add(1)
	go put(0)
	testutil.WaitFor(t, 5*time.Second, func() bool { return entered.Load() == 1 }, "first flush to start")
	for i := 1; i < putters; i++ {
		wg.Add(1)
		go put(i)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return s.stats.putMessages.Load() == putters }, "all puts written")
	select {
	case r := <-results:
		t.Fatalf("put returned %v before its flush", r.Status)
	default:
	}
	close(gate)
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		if r.Status != PutOK {
			t.Fatalf("status %v", r.Status)
		}
	}
	if n != putters {
		t.Fatalf("%d puts returned", n)
	}
	if f := s.cl.flushes.Load(); f != 1 {
		t.Fatalf("%d fsyncs for %d puts, want 1", f, putters)
	}
	if s.cl.flushedOffset.Load() != s.MaxPhyOffset() {
		t.Fatalf("flushed %d of %d", s.cl.flushedOffset.Load(), s.MaxPhyOffset())
	}
}

func TestSyncFlushConcurrentPutters(t *testing.T) {
	s := openStore(t, syncOptions(t))
	const goroutines, each = 8, 40
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := s.PutMessage(testMessage("Conc", int32(g), i))
				if err != nil || r.Status != PutOK {
					t.Errorf("put: %v %v", r, err)
					return
				}
				if s.cl.flushedOffset.Load() < r.PhysicalOffset+int64(r.WroteBytes) {
					t.Errorf("put acknowledged before its bytes were flushed")
					return
				}
			}
		}()
	}
	wg.Wait()
	if f := s.cl.flushes.Load(); f == 0 || f > goroutines*each {
		t.Fatalf("%d fsyncs for %d puts", f, goroutines*each)
	}
	waitDispatched(t, s)
	for g := int32(0); g < goroutines; g++ {
		msgs := readQueue(t, s, "Conc", g)
		if len(msgs) != each {
			t.Fatalf("queue %d: %d messages", g, len(msgs))
		}
		for i, m := range msgs {
			if m.Flag != int32(i) {
				t.Fatalf("queue %d offset %d holds message %d", g, i, m.Flag)
			}
		}
	}
}

func TestSyncFlushTimeoutAndNoWait(t *testing.T) {
	o := syncOptions(t)
	o.SyncFlushTimeout = 50 * time.Millisecond
	s := openStore(t, o)
	gate := make(chan struct{})
	s.cl.beforeFlush = func() { <-gate } // the disk never finishes
	t.Cleanup(func() { close(gate) })    // runs before the store's Close
	tests := []struct {
		name   string
		mutate func(m *message.Message)
		want   PutStatus
	}{
		{name: "waits and times out", mutate: func(*message.Message) {}, want: PutFlushDiskTimeout},
		{name: "SkipFlushWait", mutate: func(m *message.Message) { m.SkipFlushWait = true }, want: PutOK},
		{name: "WAIT=false property", mutate: func(m *message.Message) { m.Properties["WAIT"] = "false" }, want: PutOK},
	}
	for i, tt := range tests {
		m := testMessage("Slow", 0, i)
		tt.mutate(m)
		// The flush never finishes: a put that waited for it could only end
		// with PutFlushDiskTimeout, so PutOK proves it did not wait (no
		// wall-clock bound, which a loaded machine breaks).
		r, err := s.PutMessage(m)
		if err != nil || r.Status != tt.want {
			t.Fatalf("%s: %v %v", tt.name, r, err)
		}
	}
	waitDispatched(t, s)
	if got := len(readQueue(t, s, "Slow", 0)); got != 3 {
		t.Fatalf("%d messages stored", got)
	}
	if s.RuntimeInfo()["putMessageFlushTimeouts"] != "1" {
		t.Fatalf("RuntimeInfo = %v", s.RuntimeInfo())
	}
}

func TestPutAllocations(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeCommitLog = 8 << 20
	o.FlushInterval = time.Hour
	o.FlushConsumeQueueInterval = time.Hour
	// Park the dispatcher so that only the put path allocates while measuring.
	parked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	o.OnDispatch = func(DispatchRequest) {
		once.Do(func() { close(parked); <-release })
	}
	s := openStore(t, o)
	t.Cleanup(func() { close(release) })
	mustPut(t, s, testMessage("Alloc", 0, 0))
	<-parked
	m := testMessage("Alloc", 0, 1)
	m.Properties = map[string]string{"TAGS": "a", "KEYS": "k"}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.PutMessage(m); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per PutMessage", allocs)
	// Properties text, result, its id slice and the id string.
	if allocs > 4 {
		t.Fatalf("PutMessage allocates %.1f times per call", allocs)
	}
}

// TestGroupCommitPacing: once a sync covered groupCommitPaceBytes, the next
// one starts at least groupCommitPeriod after it, so while 64 putters keep
// the flusher busy the syncs that follow big ones are at most one per
// period (a disk whose syncs take longer than the period passes anyway);
// every put still returns only after its bytes are synced.
func TestGroupCommitPacing(t *testing.T) {
	o := syncOptions(t)
	o.MappedFileSizeCommitLog = 8 << 20
	s := openStore(t, o)
	var mu sync.Mutex
	var starts []int64 // flushedOffset at the start of each sync
	s.cl.beforeFlush = func() {
		mu.Lock()
		starts = append(starts, s.cl.flushedOffset.Load())
		mu.Unlock()
	}
	// Two puts in a sync reach the threshold, so without pacing nearly every
	// sync would be followed at once by the next.
	body := make([]byte, groupCommitPaceBytes/2)
	const putters, each = 64, 20
	var wg sync.WaitGroup
	began := time.Now()
	for g := range putters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, err := s.PutMessage(&message.Message{Topic: "Pace", QueueID: int32(g % 4), Body: body})
				if err != nil || r.Status != PutOK {
					t.Errorf("put: %v %v", r, err)
					return
				}
				if s.cl.flushedOffset.Load() < r.PhysicalOffset+int64(r.WroteBytes) {
					t.Errorf("put acknowledged before its bytes were synced")
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	mu.Lock()
	defer mu.Unlock()
	paced := 0 // syncs that started after one that covered the pace threshold
	for k := 2; k < len(starts); k++ {
		if starts[k-1]-starts[k-2] >= groupCommitPaceBytes {
			paced++
		}
	}
	if paced == 0 {
		t.Fatalf("no sync covered %d bytes in %d syncs of %d puts", groupCommitPaceBytes, len(starts), putters*each)
	}
	if limit := int(elapsed/groupCommitPeriod) + 1; paced > limit {
		t.Fatalf("%d paced syncs in %v, want at most one per %v (%d)", paced, elapsed, groupCommitPeriod, limit)
	}
	t.Logf("%d puts in %v: %d syncs, %d of them paced", putters*each, elapsed, len(starts), paced)
}
