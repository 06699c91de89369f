package timer

import (
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
)

// Synced TimerLog units far behind the end leave the broker's resident set
// (ten million pending timers kept 520 MB of units mapped before), reads of
// released units map only a sweep's worth of pages back, and nothing of the
// content changes: every unit reads back, before and after a reopen.
func TestTimerLogReleasesSyncedPages(t *testing.T) {
	dir := t.TempDir()
	const fileSize = 1 << 20
	l, err := openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	var pos []int64
	for i := int64(0); l.end < 3*fileSize+fileSize/2; i++ {
		u := testUnit(i + 1)
		p, err := l.append(&u)
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	first, last := l.segs[0], l.segs[len(l.segs)-1]
	if kb := testutil.MappedRSS(t, first.data); kb != fileSize>>10 {
		t.Fatalf("first segment has %d kB resident after it was written, want %d", kb, fileSize>>10)
	}
	for _, s := range l.pendingSyncs(l.end) {
		if err := s.seg.msync(s.from, s.to); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.markSynced(l.end); err != nil {
		t.Fatal(err)
	}
	if kb := testutil.MappedRSS(t, first.data); kb != 0 {
		t.Fatalf("first segment has %d kB resident after it was synced", kb)
	}
	if kb := testutil.MappedRSS(t, last.data); kb == 0 {
		t.Fatal("the synced end's window was released too")
	}

	// Read the first segment through: sweeps keep what comes back bounded.
	bound := int64((readSweep*unitSize+4095)/4096+1) * 4
	var n int
	for i, p := range pos {
		if p >= fileSize {
			break
		}
		if u, ok := l.read(p); !ok || u != testUnit(int64(i+1)) {
			t.Fatalf("unit %d at %d read back as %+v (%v)", i, p, u, ok)
		}
		n++
	}
	if n <= 2*readSweep {
		t.Fatalf("only %d units in the first segment: the test needs sweeps", n)
	}
	if kb := testutil.MappedRSS(t, first.data); kb > bound {
		t.Fatalf("first segment has %d kB resident after it was read through, want at most %d", kb, bound)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}

	l, err = openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	var got int
	l.end = l.scan(l.first(), func(p int64, u unit) bool {
		if p != pos[got] || u != testUnit(int64(got+1)) {
			t.Fatalf("reopened: unit %d at %d is %+v, want at %d", got, p, u, pos[got])
		}
		got++
		return true
	})
	if got != len(pos) {
		t.Fatalf("reopened: %d units, want %d", got, len(pos))
	}
}
