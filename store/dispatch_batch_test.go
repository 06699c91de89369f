package store

import (
	"sync"
	"testing"
)

// TestOnDispatchBatchFollowsItsRecords: OnDispatchBatch runs after the
// OnDispatch calls of a batch, when every record they reported is readable
// from its consume queue.
func TestOnDispatchBatchFollowsItsRecords(t *testing.T) {
	var (
		mu      sync.Mutex
		seen    int64 // records OnDispatch reported
		batches int
		s       *Store
		bad     string
	)
	o := testOptions(t.TempDir())
	o.OnDispatch = func(d DispatchRequest) {
		mu.Lock()
		seen = d.QueueOffset + 1
		mu.Unlock()
	}
	o.OnDispatchBatch = func() {
		mu.Lock()
		defer mu.Unlock()
		batches++
		if s != nil && s.MaxOffsetInQueue("T", 0) < seen {
			bad = "a batch ended before its records were in the consume queue"
		}
	}
	s = openStore(t, o)
	const n = 50
	for i := range n {
		mustPut(t, s, testMessage("T", 0, i))
	}
	waitDispatched(t, s)
	mu.Lock()
	defer mu.Unlock()
	if bad != "" {
		t.Fatal(bad)
	}
	if seen != n || batches == 0 {
		t.Fatalf("saw %d records in %d batches, want %d records", seen, batches, n)
	}
}
