package store

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

// BenchmarkGetMessage is a pull of 1 KiB messages with maxMsgs 32, the stock
// consumer's batch: "one" reads the only new message at the queue end (the
// steady state of a consumer that keeps up), "batch" reads 32, and
// "batch-released" reads as the broker's pulls do (GetMessageFiltered) and
// hands each body back once the answer is copied out. The bytes allocated follow what is returned, not maxMsgs:
//
//	go test ./store -run '^$' -bench GetMessage -benchmem
func BenchmarkGetMessage(b *testing.B) {
	for _, tc := range []struct {
		name    string
		msgs    int
		release bool
	}{{"one", 1, false}, {"batch", 32, false}, {"batch-released", 32, true}} {
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
				var r *GetResult
				if tc.release {
					r = s.GetMessageFiltered("Bench", 0, 0, 32, 256<<10, everything{})
				} else {
					r = s.GetMessage("Bench", 0, 0, 32, 256<<10, nil)
				}
				if r.Status != Found || len(r.Messages) != tc.msgs {
					b.Fatalf("got %v with %d messages", r.Status, len(r.Messages))
				}
				if tc.release {
					r.Release()
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

// everything is a MessageFilter that takes every message.
type everything struct{}

func (everything) MatchTags(int64) bool          { return true }
func (everything) MatchProps(message.Props) bool { return true }

// TestGetMessageReusesReleasedBodies checks the body pool of the broker's
// pulls (GetMessageFiltered): a released result's buffer serves the next
// read of its class, which returns its own records (the old bytes
// overwritten, none left over), and a read that is not released allocates
// anew. GetMessage, whose callers do not release, does not take from it. sync.Pool may drop buffers at a GC, so the
// reuse is checked with the collector off.
func TestGetMessageReusesReleasedBodies(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	s := openStore(t, testOptions(t.TempDir()))
	body := func(i int) []byte { return fmt.Appendf(nil, "message %06d of a fixed size", i) }
	for i := range 40 {
		mustPut(t, s, &message.Message{Topic: "Pool", QueueID: 0, Body: body(i)})
	}
	waitDispatched(t, s)

	a := s.GetMessageFiltered("Pool", 0, 0, 32, 1<<20, everything{})
	first := unsafe.SliceData(a.Body())
	a.Release()
	if a.Body() != nil || a.Messages != nil {
		t.Fatal("a released result still shows its body")
	}
	b := s.GetMessageFiltered("Pool", 0, 8, 32, 1<<20, everything{})
	if unsafe.SliceData(b.Body()) != first && !testutil.RaceEnabled { // -race: sync.Pool drops at random
		t.Fatal("the next read of the same class did not reuse the released buffer")
	}
	if len(b.Messages) != 32 {
		t.Fatalf("read %d messages, want 32", len(b.Messages))
	}
	for i, raw := range b.Messages {
		m, err := message.DecodeRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Body, body(8+i)) {
			t.Fatalf("message %d in a reused buffer: body %q, want %q", 8+i, m.Body, body(8+i))
		}
	}
	c := s.GetMessageFiltered("Pool", 0, 0, 32, 1<<20, everything{})
	if unsafe.SliceData(c.Body()) == unsafe.SliceData(b.Body()) {
		t.Fatal("two results hold one buffer")
	}
	b.Release()
	c.Release()
	c.Release() // twice is harmless
	d := s.GetMessage("Pool", 0, 0, 32, 1<<20, nil)
	if cap(d.Body()) != len(d.Body()) {
		t.Fatalf("GetMessage's body has cap %d for %d bytes: it took a pooled buffer", cap(d.Body()), len(d.Body()))
	}
	allocs := testing.AllocsPerRun(20, func() { s.GetMessageFiltered("Pool", 0, 0, 32, 1<<20, everything{}).Release() })
	if allocs > 5 && !testutil.RaceEnabled {
		t.Fatalf("a released pull of 32 messages made %.0f allocations", allocs)
	}
}
