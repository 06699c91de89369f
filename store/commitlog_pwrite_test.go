package store

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/rmqio/rmq/message"
)

// checkReadBack reads every put back through the mapping (LookMessageByOffset)
// and compares it with the message that was put.
func checkReadBack(t *testing.T, s *Store, msgs []*message.Message, res []*PutResult) {
	t.Helper()
	for i, r := range res {
		rec, err := s.LookMessageByOffset(r.PhysicalOffset)
		if err != nil {
			t.Fatalf("message %d at %d: %v", i, r.PhysicalOffset, err)
		}
		m, err := message.DecodeRecord(rec)
		if err != nil {
			t.Fatalf("message %d at %d: %v", i, r.PhysicalOffset, err)
		}
		if !bytes.Equal(m.Body, msgs[i].Body) || m.QueueOffset != r.QueueOffset || m.PhysicalOffset != r.PhysicalOffset {
			t.Fatalf("message %d at %d reads back as queue offset %d, phy %d, body %q", i, r.PhysicalOffset, m.QueueOffset, m.PhysicalOffset, m.Body)
		}
	}
}

// endsWithBlank walks f record by record and reports whether it ends with a
// BLANK record covering the rest of the file.
func endsWithBlank(t *testing.T, f *mappedFile) bool {
	t.Helper()
	for p := 0; p < len(f.data); {
		l, kind := checkRecord(f.data, p, f.start)
		switch kind {
		case recBlank:
			return p+l.Total == len(f.data)
		case recValid:
			p += l.Total
		default:
			return false
		}
	}
	return false
}

// TestDirectAppendNeverWritesThroughTheMapping makes the first segment's
// mapping read-only: under SYNC_FLUSH records and the BLANK that closes the
// segment are pwritten and read back through that mapping; under
// ASYNC_FLUSH the same put faults.
func TestDirectAppendNeverWritesThroughTheMapping(t *testing.T) {
	tests := []struct {
		name    string
		flush   FlushDiskType
		wantErr bool
	}{
		{name: "SYNC_FLUSH appends with pwrite", flush: SyncFlush},
		{name: "ASYNC_FLUSH copies into the mapping", flush: AsyncFlush, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.FlushDiskType = tc.flush
			s := openStore(t, o)
			msgs := []*message.Message{testMessage("Direct", 0, 0)}
			res := []*PutResult{mustPut(t, s, msgs[0])}
			first := s.cl.files[0]
			if err := protect(first.data, false); err != nil {
				t.Fatal(err)
			}
			defer protect(first.data, true)
			// Until the second segment exists: the put that rolls writes
			// the BLANK at the end of the read-only one.
			for i := 1; len(s.cl.files) < 2; i++ {
				m := testMessage("Direct", int32(i%2), i)
				r, err := s.PutMessage(m)
				if tc.wantErr {
					// GuardFault reports the write fault as a full disk.
					if !errors.Is(err, ErrDiskFull) {
						t.Fatalf("put through a read-only mapping: err %v, want the fault", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("put %d: %v", i, err)
				}
				msgs, res = append(msgs, m), append(res, r)
			}
			if tc.wantErr {
				t.Fatal("no put failed")
			}
			if !endsWithBlank(t, first) {
				t.Fatal("the first segment does not end with a BLANK record")
			}
			checkReadBack(t, s, msgs, res)
			waitDispatched(t, s)
			if got := len(readQueue(t, s, "Direct", 0)) + len(readQueue(t, s, "Direct", 1)); got != len(msgs) {
				t.Fatalf("queues hold %d messages, want %d", got, len(msgs))
			}
		})
	}
}

// TestDirectAppendAcrossRollsSurvivesReopen puts under SYNC_FLUSH over many
// segments, then reads everything back from the files after a clean close
// and after a copy taken while the store ran (a crash).
func TestDirectAppendAcrossRollsSurvivesReopen(t *testing.T) {
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	s := openStore(t, o)
	var msgs []*message.Message
	var res []*PutResult
	for i := range 300 {
		m := testMessage(recoveryTopic, int32(i%3), i)
		msgs, res = append(msgs, m), append(res, mustPut(t, s, m))
	}
	if n := len(s.cl.files); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	for _, f := range s.cl.files[:len(s.cl.files)-1] {
		if !endsWithBlank(t, f) {
			t.Fatalf("segment %s does not end with a BLANK record", f.path)
		}
	}
	checkReadBack(t, s, msgs, res)
	waitDispatched(t, s)
	crash := testOptions(t.TempDir())
	copyDir(t, o.Dir, crash.Dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{o.Dir, crash.Dir} {
		ro := testOptions(dir)
		ro.FlushDiskType = SyncFlush
		r := openStore(t, ro)
		checkReadBack(t, r, msgs, res)
		if got := queueContents(t, r); len(got) != len(msgs) {
			t.Fatalf("%s: %d messages in the queues, want %d", dir, len(got), len(msgs))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirectAppendTornTailIsCleared leaves the first half of a record
// after the last complete one, as a pwrite cut short by a crash would, and
// checks that recovery drops it and the next put takes its place.
func TestDirectAppendTornTailIsCleared(t *testing.T) {
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	s := openStore(t, o)
	var msgs []*message.Message
	var res []*PutResult
	for i := range 40 {
		m := testMessage(recoveryTopic, int32(i%3), i)
		msgs, res = append(msgs, m), append(res, mustPut(t, s, m))
	}
	waitDispatched(t, s)
	end := s.MaxPhyOffset()
	last := res[len(res)-1]
	rec, err := s.LookMessageByOffset(last.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	// The torn record claims the offset it would have had, so only its
	// missing half (and CRC) give it away.
	torn := bytes.Clone(rec[:len(rec)/2])
	crash := testOptions(t.TempDir())
	copyDir(t, o.Dir, crash.Dir)
	path, rel := segment(crash, end)
	if rel+int64(len(torn)) > crash.MappedFileSizeCommitLog {
		t.Fatalf("test setup: the torn record would cross the segment end at %d", end)
	}
	writeAt(t, path, rel, torn)

	crash.FlushDiskType = SyncFlush
	c := openStore(t, crash)
	info := c.RuntimeInfo()
	if info["recoveryTornTailBytes"] == "0" {
		t.Fatal("recovery found no torn tail")
	}
	if got := c.MaxPhyOffset(); got != end {
		t.Fatalf("recovered end %d, want %d", got, end)
	}
	checkReadBack(t, c, msgs, res)
	next := testMessage(recoveryTopic, 1, len(msgs))
	r := mustPut(t, c, next)
	if r.PhysicalOffset != end {
		t.Fatalf("next put at %d, want %d", r.PhysicalOffset, end)
	}
	checkReadBack(t, c, []*message.Message{next}, []*PutResult{r})
}

// TestDirectAppendFailurePublishesNothing makes the pwrite fail (a
// read-only descriptor behind the segment): the put reports it, nothing is
// published, and the next put after the descriptor is back lands at the
// same offset.
func TestDirectAppendFailurePublishesNothing(t *testing.T) {
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	s := openStore(t, o)
	mustPut(t, s, testMessage("Fail", 0, 0))
	end := s.MaxPhyOffset()
	f := s.cl.last()
	ro, err := os.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	// Park the warmer for good (it writes through the same descriptor):
	// once its chunk in progress is done it claims no other.
	w := s.cl.warm
	w.mu.Lock()
	w.failed = true
	for w.busyTo != 0 {
		w.cond.Wait()
	}
	w.mu.Unlock()
	s.putMu.Lock()
	rw := f.file
	f.file = ro
	s.putMu.Unlock()
	if _, err := s.PutMessage(testMessage("Fail", 0, 1)); err == nil {
		t.Fatal("put through a read-only descriptor succeeded")
	} else if errors.Is(err, ErrDiskFull) {
		t.Fatalf("EBADF reported as %v", err)
	}
	if got := s.MaxPhyOffset(); got != end {
		t.Fatalf("failed put moved the end from %d to %d", end, got)
	}
	s.putMu.Lock()
	f.file = rw
	s.putMu.Unlock()
	m := testMessage("Fail", 0, 2)
	r := mustPut(t, s, m)
	if r.PhysicalOffset != end || r.QueueOffset != 1 {
		t.Fatalf("put after the failure at %d, queue offset %d; want %d, 1", r.PhysicalOffset, r.QueueOffset, end)
	}
	checkReadBack(t, s, []*message.Message{m}, []*PutResult{r})
	if got := s.RuntimeInfo()["putMessageFailedTimes"]; got != strconv.Itoa(1) {
		t.Fatalf("putMessageFailedTimes = %s, want 1", got)
	}
}

func TestDiskErrMapsENOSPC(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantFull bool
	}{
		{name: "ENOSPC", err: syscall.ENOSPC, wantFull: true},
		{name: "wrapped ENOSPC", err: &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, wantFull: true},
		{name: "EIO", err: syscall.EIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(DiskErr(tc.err), ErrDiskFull); got != tc.wantFull {
				t.Fatalf("DiskErr(%v) is ErrDiskFull: %v, want %v", tc.err, got, tc.wantFull)
			}
		})
	}
}
