package store

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

// A SYNC_FLUSH put whose pwrite stalls holds the put lock; once it has held
// it past OSPageCacheBusyTimeout (on the store's clock) the store is page-
// cache busy and a new put is refused with ErrOSPageCacheBusy without
// waiting for the lock. At the timeout itself it is not busy yet (stock
// compares with >), and once the stalled put ends it is not busy again.
func TestPageCacheBusyRefusesPutsWhileTheLockIsHeldTooLong(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	inj := &Injector{}
	stall := make(chan struct{})
	inj.Add(Rule{Op: OpWrite, Path: "commitlog", Stall: stall, Data: func(b []byte) bool { return bytes.Contains(b, []byte("Slow/")) }})
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	o.Clock = clk
	o.FS = NewErrorFS(inj)
	o.OSPageCacheBusyTimeout = time.Second
	s := openStore(t, o)

	slow := make(chan error, 1)
	go func() {
		m := testMessage("Slow", 0, 0)
		m.SkipFlushWait = true
		_, err := s.PutMessage(m)
		slow <- err
	}()
	testutil.WaitFor(t, 5*time.Second, func() bool { return s.LockHeld() == 0 && s.busy.lockedSince.Load() != 0 }, "the slow put to take the lock")
	if s.IsOSPageCacheBusy() {
		t.Fatal("busy at once")
	}
	clk.Advance(time.Second)
	if s.IsOSPageCacheBusy() {
		t.Fatal("busy at exactly the timeout; stock needs more")
	}
	clk.Advance(time.Millisecond)
	if !s.IsOSPageCacheBusy() {
		t.Fatal("not busy after the lock was held past the timeout")
	}
	m := testMessage("Fast", 0, 0)
	m.SkipFlushWait = true
	if _, err := s.PutMessage(m); !errors.Is(err, ErrOSPageCacheBusy) {
		t.Fatalf("put while busy: %v, want ErrOSPageCacheBusy", err)
	}
	s.SetOSPageCacheBusyTimeout(0)
	if s.IsOSPageCacheBusy() {
		t.Fatal("busy with the timeout turned off")
	}
	s.SetOSPageCacheBusyTimeout(time.Second)
	close(stall)
	if err := <-slow; err != nil {
		t.Fatalf("slow put: %v", err)
	}
	if s.IsOSPageCacheBusy() || s.LockHeld() != 0 {
		t.Fatal("still busy after the slow put released the lock")
	}
	mustPut(t, s, testMessage("Fast", 0, 1))
}
