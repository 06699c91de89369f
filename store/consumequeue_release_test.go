package store

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

func TestQueueFlushReleasesOldUnits(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeConsumeQueue = 300000 * cqUnitSize
	o.MappedFileSizeCommitLog = 16 << 20
	s := openStore(t, o)
	const n = 12000 // 240 000 bytes of units: 58 pages, 16 of them kept
	for i := range n {
		m := testMessage("CQRel", 0, i)
		m.Body = m.Body[:40]
		mustPut(t, s, m)
	}
	waitDispatched(t, s)
	q := s.cqs["CQRel"][0]
	f := q.files[0]
	bound := int64(cqReleaseKeep+3*pageSize) / 1024 // the kept window and partial pages
	testutil.WaitFor(t, 5*time.Second, func() bool {
		return testutil.MappedRSS(t, f.data) <= bound
	}, "queue flushes that release all but the kept window")
	if written := int64(n*cqUnitSize) / 1024; bound*2 > written {
		t.Fatalf("test too small: %d kB written, %d kB kept", written, bound)
	}
	// Released units still read back.
	if got := len(readQueue(t, s, "CQRel", 0)); got != n {
		t.Fatalf("read %d units back, want %d", got, n)
	}
}
