package store

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

func TestFlushReleasesOldPages(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeCommitLog = 1 << 20
	s := openStore(t, o)
	// Over three segments: the first is entirely older than the kept window.
	var i int
	for s.MaxPhyOffset() < 3<<20+100<<10 {
		mustPut(t, s, testMessage("Rel", int32(i%4), i))
		i++
	}
	testutil.WaitFor(t, 5*time.Second, func() bool {
		s.cl.releaseMu.Lock()
		defer s.cl.releaseMu.Unlock()
		return s.cl.released.Load() >= 1<<20
	}, "a flush that releases the first segment")
	first := s.cl.files[0]
	if kb := testutil.MappedRSS(t, first.data); kb != 0 {
		t.Fatalf("first segment still has %d kB resident after its release", kb)
	}
	if kb := testutil.MappedRSS(t, s.cl.last().data); kb == 0 {
		t.Fatal("the segment being written has nothing resident: released too much")
	}
	// Released pages read back from the page cache.
	waitDispatched(t, s)
	for q := range int32(4) {
		msgs := readQueue(t, s, "Rel", q)
		for k, m := range msgs {
			if want := testMessage("Rel", q, int(q)+4*k).Body; !bytes.Equal(m.Body, want) {
				t.Fatalf("queue %d message %d: body %q, want %q", q, k, m.Body, want)
			}
		}
	}
}

// A drain of a backlog maps the old records it reads; they are released
// behind the furthest read (noteRead), so the pages of a fully read segment
// do not stay resident while nothing is written.
func TestDrainReleasesReadPages(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeCommitLog = 1 << 20
	s := openStore(t, o)
	var i int
	for s.MaxPhyOffset() < 6<<20 {
		mustPut(t, s, testMessage("Drain", int32(i%2), i))
		i++
	}
	waitDispatched(t, s)
	testutil.WaitFor(t, 5*time.Second, func() bool {
		s.cl.releaseMu.Lock()
		defer s.cl.releaseMu.Unlock()
		return s.cl.released.Load() >= 5<<20
	}, "a flush that releases the first five segments")
	first, second := s.cl.files[0], s.cl.files[1]
	if kb := testutil.MappedRSS(t, first.data); kb != 0 {
		t.Fatalf("first segment has %d kB resident before the drain", kb)
	}
	if lo := s.cl.readLo.Load(); lo != math.MaxInt64 {
		t.Fatalf("read span starts at %d before any read below the kept window", lo)
	}
	// Queue 0 holds every other message: reading it touches every page.
	msgs := readQueue(t, s, "Drain", 0)
	for k, m := range msgs {
		if want := testMessage("Drain", 0, 2*k).Body; !bytes.Equal(m.Body, want) {
			t.Fatalf("message %d: body %q, want %q", k, m.Body, want)
		}
	}
	for n, f := range map[string]*mappedFile{"first": first, "second": second} {
		if kb := testutil.MappedRSS(t, f.data); kb != 0 {
			t.Fatalf("%s segment has %d kB resident after it was read through", n, kb)
		}
	}
	// Reading it again maps the pages back in from the page cache.
	if got := readQueue(t, s, "Drain", 0); len(got) != len(msgs) {
		t.Fatalf("second read returned %d messages, want %d", len(got), len(msgs))
	}
}
