package store

import (
	"errors"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// TestSetRetentionTakesEffectAtOnce changes the retention keys of a running
// store: the next round and the next put see the new values, an invalid
// deleteWhen is refused and leaves the old options in force, and the hooks
// the caller did not pass survive.
func TestSetRetentionTakesEffectAtOnce(t *testing.T) {
	fx := newCleanupFixture(t, nil)
	fx.fill(t, 400)
	// 12:00, expired (one-hour reserved time), wrong hour: nothing goes.
	fx.clk.Set(at10.Add(2 * time.Hour))
	if n := fx.s.cleanRound(); n != 0 {
		t.Fatalf("deleted %d files outside deleteWhen", n)
	}
	// deleteWhen now names 12 but the reserved time grows to 48 h: still
	// nothing, the files are inside it.
	live := func(r RetentionOptions) {
		t.Helper()
		r.DeleteCommitLogFilesInterval, r.DeleteConsumeQueueFilesInterval = -1, -1
		if err := fx.s.SetRetention(r); err != nil {
			t.Fatal(err)
		}
	}
	live(RetentionOptions{FileReservedTime: 48 * time.Hour, DeleteWhen: "04;12"})
	if n := fx.s.cleanRound(); n != 0 {
		t.Fatalf("deleted %d files inside the new reserved time", n)
	}
	if got := fx.s.Retention(); got.DiskUsage != fx.disk || !got.noLoop || got.DiskMaxUsedSpaceRatio != DefaultDiskMaxUsedSpaceRatio {
		t.Fatalf("SetRetention lost the hooks or the defaults: %+v", got)
	}
	// An invalid deleteWhen changes nothing.
	if err := fx.s.SetRetention(RetentionOptions{FileReservedTime: time.Minute, DeleteWhen: "4pm"}); err == nil {
		t.Fatal("deleteWhen 4pm accepted")
	}
	if got := fx.s.Retention().FileReservedTime; got != 48*time.Hour {
		t.Fatalf("a refused update changed fileReservedTime to %v", got)
	}
	// Back to one hour at 12: every file but the newest goes.
	live(RetentionOptions{FileReservedTime: time.Hour, DeleteWhen: "12"})
	if n := fx.s.cleanRound(); n != fx.files-1 {
		t.Fatalf("deleted %d files, want %d", n, fx.files-1)
	}
	checkQueuesFollowMin(t, fx)

	// The warning ratio: a disk 80% full is fine at the stock 0.90 and
	// full at 0.75; the refusal follows the update without another check.
	fx.disk.set(0.80)
	fx.s.checkDisk()
	if _, err := fx.s.PutMessage(testMessage("T", 0, 1)); err != nil {
		t.Fatalf("put at 80%% with the stock warning level: %v", err)
	}
	live(RetentionOptions{FileReservedTime: time.Hour, DiskSpaceWarningLevelRatio: 0.75})
	if _, err := fx.s.PutMessage(testMessage("T", 0, 2)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("put at 80%% over a 0.75 warning level: %v", err)
	}
	live(RetentionOptions{FileReservedTime: time.Hour, DiskSpaceWarningLevelRatio: 0.95})
	if _, err := fx.s.PutMessage(testMessage("T", 0, 3)); err != nil {
		t.Fatalf("put after the warning level went back up: %v", err)
	}
}

// A new CleanResourceInterval re-arms the cleanup goroutine's round ticker:
// with rounds an hour apart nothing is deleted; once the interval drops to
// 20 ms the expired files go without any other trigger.
func TestSetRetentionReArmsTheRoundTicker(t *testing.T) {
	fx := newCleanupFixture(t, func(r *RetentionOptions) {
		r.noLoop = false
		r.CleanResourceInterval = time.Hour
		r.DeleteWhen = "12"
	})
	fx.fill(t, 400)
	fx.clk.Set(at10.Add(2 * time.Hour)) // 12:00, every file but the newest expired
	r := fx.s.Retention()
	r.CleanResourceInterval = 20 * time.Millisecond
	if err := fx.s.SetRetention(r); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return fx.fileCount() == 1 }, "a round on the new interval")
}
