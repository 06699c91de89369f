package store

import (
	"testing"

	"github.com/rmqio/rmq/message"
)

// BenchmarkGetMessage is a pull of 1 KiB messages with maxMsgs 32, the stock
// consumer's batch: "one" reads the only new message at the queue end (the
// steady state of a consumer that keeps up), "batch" reads 32. The bytes
// allocated follow what is returned, not maxMsgs:
//
//	go test ./store -run '^$' -bench GetMessage -benchmem
func BenchmarkGetMessage(b *testing.B) {
	for _, tc := range []struct {
		name string
		msgs int
	}{{"one", 1}, {"batch", 32}} {
		b.Run(tc.name, func(b *testing.B) {
			s := openStore(b, testOptions(b.TempDir()))
			body := make([]byte, 1024)
			for range tc.msgs {
				mustPut(b, s, &message.Message{Topic: "Bench", QueueID: 0, Body: body})
			}
			waitDispatched(b, s)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r := s.GetMessage("Bench", 0, 0, 32, 256<<10, nil)
				if r.Status != Found || len(r.Messages) != tc.msgs {
					b.Fatalf("got %v with %d messages", r.Status, len(r.Messages))
				}
			}
		})
	}
}

// TestGetMessageBodySizedToResult checks that the pull buffer holds what is
// returned: one message read with maxMsgs 32 allocates about one record, and
// a byte budget below the next record stops the estimate where the copy
// stops.
func TestGetMessageBodySizedToResult(t *testing.T) {
	s := openStore(t, testOptions(t.TempDir()))
	body := make([]byte, 1024)
	var size int
	for range 3 {
		size = int(mustPut(t, s, &message.Message{Topic: "T", QueueID: 0, Body: body}).WroteBytes)
	}
	waitDispatched(t, s)
	for _, tc := range []struct {
		from     int64
		maxMsgs  int
		maxBytes int
		want     int
	}{
		{from: 2, maxMsgs: 32, maxBytes: 1 << 20, want: 1},
		{from: 0, maxMsgs: 32, maxBytes: 1 << 20, want: 3},
		{from: 0, maxMsgs: 2, maxBytes: 1 << 20, want: 2},
		{from: 0, maxMsgs: 32, maxBytes: 2*size + 1, want: 2},
		{from: 0, maxMsgs: 32, maxBytes: 10, want: 1}, // always at least one
	} {
		r := s.GetMessage("T", 0, tc.from, tc.maxMsgs, tc.maxBytes, nil)
		if r.Status != Found || len(r.Messages) != tc.want {
			t.Fatalf("%+v: got %v with %d messages", tc, r.Status, len(r.Messages))
		}
		if len(r.Body()) != tc.want*size || cap(r.Body()) != len(r.Body()) {
			t.Fatalf("%+v: body len %d cap %d, want both %d", tc, len(r.Body()), cap(r.Body()), tc.want*size)
		}
	}
	allocs := testing.AllocsPerRun(20, func() { s.GetMessage("T", 0, 2, 32, 1<<20, nil) })
	if allocs > 4 {
		t.Fatalf("a pull of one message made %.0f allocations", allocs)
	}
}
