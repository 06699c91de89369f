package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// testWait bounds how long a test waits for a background goroutine.
const testWait = 10 * time.Second

// diskFullFault makes every consume-queue write fail as on a full disk while
// full is set.
func diskFullFault(full *atomic.Bool) func(*DispatchRequest) error {
	return func(d *DispatchRequest) error {
		if full.Load() {
			return fmt.Errorf("%w: test fault at %d", ErrDiskFull, d.PhysicalOffset)
		}
		return nil
	}
}

// A record acknowledged before its consume-queue unit could be written (the
// disk filled up between the commitlog write and dispatch) must not be
// skipped: dispatch stops at it, puts are refused with ErrDiskFull, and once
// space is back it is dispatched and puts resume, without a restart.
func TestDispatchStallsOnFullDiskAndResumes(t *testing.T) {
	var full atomic.Bool
	o := testOptions(t.TempDir())
	o.dispatchFault = diskFullFault(&full)
	s := openStore(t, o)
	for i := 0; i < 10; i++ {
		mustPut(t, s, testMessage("T", 0, i))
	}
	waitDispatched(t, s)
	full.Store(true)
	acked := mustPut(t, s, testMessage("T", 0, 10)) // the commitlog still had room
	testutil.WaitFor(t, testWait, func() bool { return s.dispatchStalled.Load() }, "dispatch stall")
	if _, err := s.PutMessage(testMessage("T", 0, 11)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put while dispatch is stalled: err %v, want ErrDiskFull", err)
	}
	if got := s.MaxOffsetInQueue("T", 0); got != 10 {
		t.Fatalf("queue max %d while stalled, want 10", got)
	}
	if s.RuntimeInfo()["dispatchStalled"] != "true" {
		t.Fatalf("runtime info does not show the stall")
	}
	full.Store(false)
	s.wakeDispatcher()
	testutil.WaitFor(t, testWait, func() bool { return !s.dispatchStalled.Load() }, "dispatch resumed")
	waitDispatched(t, s)
	if got := s.MaxOffsetInQueue("T", 0); got != 11 || acked.QueueOffset != 10 {
		t.Fatalf("queue max %d (acked offset %d), want 11", got, acked.QueueOffset)
	}
	r := mustPut(t, s, testMessage("T", 0, 11))
	if r.QueueOffset != 11 {
		t.Fatalf("next queue offset %d, want 11", r.QueueOffset)
	}
	waitDispatched(t, s)
	if n := len(readQueue(t, s, "T", 0)); n != 12 {
		t.Fatalf("%d messages consumable, want 12", n)
	}
}

// A store closed or killed while dispatch is stalled keeps the acknowledged
// records in the commitlog, and the next Open puts them into their queues
// (not a padded gap): they are consumable and their queue offsets are not
// given out again.
func TestStalledRecordsSurviveRestartAndCrash(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			var full atomic.Bool
			o := testOptions(t.TempDir())
			o.dispatchFault = diskFullFault(&full)
			s, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 50; i++ {
				mustPut(t, s, testMessage("T", int32(i%2), i))
			}
			waitDispatched(t, s)
			full.Store(true)
			mustPut(t, s, testMessage("T", 0, 50))
			testutil.WaitFor(t, testWait, func() bool { return s.dispatchStalled.Load() }, "dispatch stall")
			// Acknowledged in the same window (SEND_OK), before the refusal.
			reopen := testOptions(t.TempDir())
			if crash {
				if err := s.cl.flush(); err != nil {
					t.Fatal(err)
				}
				copyDir(t, o.Dir, reopen.Dir)
				s.Close()
			} else {
				// Close with the disk still full: the checkpoint keeps the
				// stalled record undispatched.
				s.Close()
				reopen.Dir = o.Dir
			}
			// Still full at the next Open: recovery must not pad or skip.
			reopen.dispatchFault = diskFullFault(&full)
			c, err := Open(reopen)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutMessage(testMessage("T", 0, 51)); !errors.Is(err, ErrDiskFull) {
				t.Fatalf("put after reopening on a full disk: %v, want ErrDiskFull", err)
			}
			full.Store(false)
			c.wakeDispatcher()
			testutil.WaitFor(t, testWait, func() bool { return !c.dispatchStalled.Load() }, "dispatch resumed")
			r := mustPut(t, c, testMessage("T", 0, 51))
			if r.QueueOffset != 26 {
				t.Fatalf("queue offset after reopen %d, want 26", r.QueueOffset)
			}
			waitDispatched(t, c)
			got := readQueue(t, c, "T", 0)
			if len(got) != 27 {
				t.Fatalf("%d messages in queue 0, want 27", len(got))
			}
			for i, m := range got {
				if m.QueueOffset != int64(i) {
					t.Fatalf("message %d has queue offset %d", i, m.QueueOffset)
				}
			}
			c.Close()
		})
	}
}
