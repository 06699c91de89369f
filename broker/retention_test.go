package broker

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// retentionDisk is a store.DiskUsage the test sets.
type retentionDisk struct {
	mu   sync.Mutex
	used float64
}

func (d *retentionDisk) set(v float64) {
	d.mu.Lock()
	d.used = v
	d.mu.Unlock()
}

func (d *retentionDisk) Usage(string) (float64, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.used, 1 << 40, nil
}

// at0300 is an hour before the default deleteWhen hour 04.
var at0300 = time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)

// startRetentionBroker runs a broker on a manual clock with 64 KiB
// commitlog files, a one-minute reserved time, a fake disk and cleanup
// rounds only when the test runs them (CleanNow).
func startRetentionBroker(t *testing.T, mutate func(*Options)) (*testBroker, *clock.Manual, *retentionDisk) {
	t.Helper()
	clk := clock.NewManual(at0300)
	disk := &retentionDisk{used: 0.30}
	tb := startBroker(t, func(o *Options) {
		o.Clock = clk
		// Flushed at every put: only flushed files may be deleted, and the
		// ASYNC_FLUSH period runs on the manual clock.
		o.FlushDiskType = "SYNC_FLUSH"
		o.MappedFileSizeCommitLog = 64 << 10
		o.MaxMessageSize = 16 << 10
		o.FileReservedTimeMinutes = 1
		o.CleanResourceInterval = int(time.Hour.Milliseconds())
		o.DeleteCommitLogFilesInterval = 0
		o.DeleteConsumeQueueFilesInterval = 0
		o.TransactionTimeOut = time.Hour.Milliseconds()
		o.TransactionCheckInterval = time.Hour.Milliseconds()
		o.storeOptions = func(so *store.Options) { so.Retention.DiskUsage = disk }
		if mutate != nil {
			mutate(o)
		}
	})
	return tb, clk, disk
}

// fillFiles sends 1 KiB messages to RetT until the commitlog has files
// commitlog files.
func fillFiles(t *testing.T, tb *testBroker, files int) {
	t.Helper()
	body := bytes.Repeat([]byte("r"), 1024)
	for tb.Store().MaxPhyOffset() < int64(files)*(64<<10) {
		tb.mustSend(sendArgs{topic: "RetT", body: body})
	}
	tb.waitDispatched()
}

// The delay-level message keeps its file until it is delivered; then the
// file goes, and the delivered copy is consumable.
func TestRetentionKeepsPendingDelayMessage(t *testing.T) {
	tb, clk, _ := startRetentionBroker(t, nil)
	tb.mustSend(sendArgs{topic: "RetD", body: []byte("later"), props: coreProps("DELAY", "3")}) // 10 s
	fillFiles(t, tb, 4)
	clk.Set(at0300.Add(time.Hour + 5*time.Second)) // 04:00:05: files expired, level 3 not due yet
	if n := tb.Store().CleanNow(); n != 0 || tb.Store().MinPhyOffset() != 0 {
		t.Fatalf("deleted %d files (min %d) while the delay message is pending", n, tb.Store().MinPhyOffset())
	}
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		return len(tb.messagesOn("RetD", 0))+len(tb.messagesOn("RetD", 1))+len(tb.messagesOn("RetD", 2))+len(tb.messagesOn("RetD", 3)) == 1
	}, "delay delivery")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.sched.Pending() == 0 }, "delay progress committed")
	tb.waitDispatched()
	if n := tb.Store().CleanNow(); n == 0 {
		t.Fatal("nothing deleted once the delay message was delivered")
	}
}

// An undecided half message keeps its file, expired or not.
func TestRetentionKeepsUndecidedHalfMessage(t *testing.T) {
	tb, clk, _ := startRetentionBroker(t, nil)
	tb.mustSend(sendArgs{topic: "RetH", body: []byte("half"), props: coreProps("TRAN_MSG", "true", "PGROUP", "pg")})
	fillFiles(t, tb, 4)
	clk.Set(at0300.Add(time.Hour + time.Minute))
	if n := tb.Store().CleanNow(); n != 0 {
		t.Fatalf("deleted %d files under an undecided half message", n)
	}
}

// A pending timer keeps its file; its roll window is at most half the
// reserved time, so it is re-stored before it could age out.
func TestRetentionKeepsPendingTimer(t *testing.T) {
	tb, clk, _ := startRetentionBroker(t, nil)
	if rw := timerRollWindow(&tb.opts); rw > 30*time.Second {
		t.Fatalf("timer roll window %v, want at most half of the 1-minute reserved time", rw)
	}
	due := at0300.Add(2 * time.Hour).UnixMilli()
	tb.mustSend(sendArgs{topic: "RetTm", body: []byte("timer"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due, 10))})
	tb.waitDispatched()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "timer enqueued")
	fillFiles(t, tb, 4)
	clk.Set(at0300.Add(time.Hour + time.Minute))
	if n := tb.Store().CleanNow(); n != 0 {
		t.Fatalf("deleted %d files under a pending timer", n)
	}
}

// Expired files go whatever the consumer groups' offsets (stock); a forced
// round inside the reserved time keeps what a group has not consumed.
func TestRetentionConsumerGroups(t *testing.T) {
	t.Run("expired files go past a lagging group", func(t *testing.T) {
		tb, clk, _ := startRetentionBroker(t, nil)
		fillFiles(t, tb, 4)
		tb.Clients().Offsets.Commit("G", "RetT", 0, 0)
		clk.Set(at0300.Add(time.Hour + time.Minute))
		if n := tb.Store().CleanNow(); n == 0 {
			t.Fatal("a lagging group kept expired files")
		}
		if min := tb.Store().MinOffsetInQueue("RetT", 0); min == 0 {
			t.Fatal("queue minimum did not move")
		}
	})
	t.Run("forced round deletes past an abandoned group", func(t *testing.T) {
		tb, _, disk := startRetentionBroker(t, nil)
		fillFiles(t, tb, 4)
		for q := int32(0); q < 4; q++ {
			tb.Clients().Offsets.Commit("Abandoned", "RetT", q, 0)
		}
		disk.set(0.86) // over diskSpaceCleanForciblyRatio, files not expired
		if n := tb.Store().CleanNow(); n == 0 {
			t.Fatal("an abandoned group's offsets held a forced round")
		}
		q, min := int32(-1), int64(0)
		for id := int32(0); id < 4; id++ {
			if m := tb.Store().MinOffsetInQueue("RetT", id); m > 0 {
				q, min = id, m
				break
			}
		}
		if q < 0 {
			t.Fatal("no queue minimum moved")
		}
		// The group's consumer gets the stock correction to the new minimum.
		resp := tb.pull(pullArgs{group: "Abandoned", topic: "RetT", queueID: q, offset: 0, maxMsgs: 8, sysFlag: pullFlagSubscription, subscription: "*"})
		if resp.Code != remoting.PullOffsetMoved || coreExtInt(t, resp, "nextBeginOffset") != min {
			t.Fatalf("pull below the minimum: code %d next %s, want %d next %d", resp.Code, resp.ExtFields["nextBeginOffset"], remoting.PullOffsetMoved, min)
		}
	})
	t.Run("retainUnconsumedOnForcedClean keeps unconsumed messages", func(t *testing.T) {
		tb, _, disk := startRetentionBroker(t, nil)
		tb.updateConfig(t, "retainUnconsumedOnForcedClean=true\n") // a runtime key, like the other retention keys
		fillFiles(t, tb, 4)
		for q := int32(0); q < 4; q++ {
			tb.Clients().Offsets.Commit("G", "RetT", q, 0)
		}
		disk.set(0.86) // over diskSpaceCleanForciblyRatio, files not expired
		if n := tb.Store().CleanNow(); n != 0 {
			t.Fatalf("forced round deleted %d files a group has not consumed", n)
		}
		for q := int32(0); q < 4; q++ {
			tb.Clients().Offsets.Commit("G", "RetT", q, tb.Store().MaxOffsetInQueue("RetT", q))
		}
		if n := tb.Store().CleanNow(); n == 0 {
			t.Fatal("forced round deleted nothing once everything was consumed")
		}
	})
}

// Over diskSpaceWarningLevelRatio sends are refused with the stock code and
// remark; reads go on, and sends resume once space is freed.
func TestRetentionDiskFullRefusesSends(t *testing.T) {
	tb, _, disk := startRetentionBroker(t, func(o *Options) { o.CleanFileForciblyEnable = false })
	tb.mustSend(sendArgs{topic: "RetF", body: []byte("before")})
	tb.waitDispatched()
	disk.set(0.95)
	tb.Store().CleanNow() // a disk check
	resp := tb.send(sendArgs{topic: "RetF", body: []byte("refused")})
	if resp.Code != 14 || !bytes.Contains([]byte(resp.Remark), []byte("the broker's disk is full [CL:  0.95")) {
		t.Fatalf("send on a full disk: %d %q", resp.Code, resp.Remark)
	}
	if got := tb.Store().RuntimeInfo()["diskFull"]; got != "true" {
		t.Fatalf("runtime info diskFull=%s", got)
	}
	n := 0
	for q := int32(0); q < 4; q++ {
		n += len(tb.messagesOn("RetF", q))
	}
	if n != 1 {
		t.Fatalf("%d messages readable on a full disk, want 1", n)
	}
	disk.set(0.50)
	tb.Store().CleanNow()
	tb.mustSend(sendArgs{topic: "RetF", body: []byte("after")})
}

// A timer due long after the reserved time is re-stored by the roll before
// retention reaches its commitlog copy: the file of the original copy is
// deleted, and the timer is still delivered at its time, not earlier.
func TestRetentionTimerRollOutlivesFiles(t *testing.T) {
	tb, clk, _ := startRetentionBroker(t, func(o *Options) { o.TimerFlushIntervalMs = 100 })
	due := at0300.Add(time.Hour + 10*time.Minute)
	first := tb.mustSend(sendArgs{topic: "RetRoll", body: []byte("timer"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due.UnixMilli(), 10))})
	_, origPhy, _ := message.DecodeMessageID(first.ExtFields["msgId"])
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "timer enqueued")
	// Walk the clock to 04:05 in steps shorter than the roll window, with
	// traffic, so the timer rolls (is re-stored) several times and the
	// original's file ages out.
	for now := at0300; now.Before(at0300.Add(65 * time.Minute)); now = now.Add(10 * time.Second) {
		clk.Set(now)
		if now.Second() == 0 && now.Minute()%5 == 0 {
			fillFiles(t, tb, int(tb.Store().MaxPhyOffset()/(64<<10))+2)
		}
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Rolled > 0 }, "timer rolled")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().EnqueueBehind == 0 }, "rolled copy enqueued")
	// Let a checkpoint cover the roll, then clean at 04:05.
	clk.Advance(time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		tb.Store().CleanNow()
		return tb.Store().MinPhyOffset() > origPhy
	}, "original copy no longer pinned")
	n := 0
	for q := int32(0); q < 4; q++ {
		n += len(tb.messagesOn("RetRoll", q))
	}
	if n != 0 {
		t.Fatalf("timer delivered %d messages before it was due", n)
	}
	clk.Set(due.Add(time.Second))
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		n := 0
		for q := int32(0); q < 4; q++ {
			for _, m := range tb.messagesOn("RetRoll", q) {
				if string(m.Body) == "timer" {
					n++
				}
			}
		}
		return n == 1
	}, "timer delivered after its file was deleted")
}

// DELETE_EXPIRED_COMMITLOG (329) makes the cleanup delete expired files
// outside deleteWhen; CLEAN_EXPIRED_CONSUMEQUEUE (306) then destroys the
// queues left without messages.
func TestRetentionAdminRequests(t *testing.T) {
	tb, clk, _ := startRetentionBroker(t, nil)
	tb.mustSend(sendArgs{topic: "RetGone", body: []byte("old")})
	fillFiles(t, tb, 4)
	clk.Set(at0300.Add(10 * time.Minute)) // expired, but 03:10 is not deleteWhen
	if n := tb.Store().CleanNow(); n != 0 {
		t.Fatalf("deleted %d files outside deleteWhen", n)
	}
	if resp := tb.invoke(remoting.DeleteExpiredCommitLog, nil, nil); resp.Code != remoting.Success {
		t.Fatalf("DELETE_EXPIRED_COMMITLOG: %d %q", resp.Code, resp.Remark)
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.Store().MinPhyOffset() > 0 }, "manual cleanup")
	if len(tb.Store().QueueIDs("RetGone")) == 0 {
		t.Fatal("RetGone's queue went before CLEAN_EXPIRED_CONSUMEQUEUE")
	}
	if resp := tb.invoke(remoting.CleanExpiredConsumeQueue, nil, nil); resp.Code != remoting.Success {
		t.Fatalf("CLEAN_EXPIRED_CONSUMEQUEUE: %d %q", resp.Code, resp.Remark)
	}
	if ids := tb.Store().QueueIDs("RetGone"); len(ids) != 0 {
		t.Fatalf("RetGone still has queues %v", ids)
	}
	if len(tb.Store().QueueIDs("RetT")) == 0 {
		t.Fatal("RetT's queues went too")
	}
}
