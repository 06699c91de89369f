//go:build linux

package timer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// emptyDisk reports a nearly empty file system, so the store's own disk
// guard (statfs against DiskReserve) never refuses a put: the full disk is
// met by a write, as when another process fills it between two checks.
type emptyDisk struct{}

func (emptyDisk) Usage(string) (float64, int64, error) { return 0, 1 << 40, nil }

// fullDiskEnv is a message store and a timer store on a tmpfs of size bytes,
// with the store's disk guard and the key index off so that the timer's own
// files are the first to meet the full disk.
func fullDiskEnv(t *testing.T, size int64, mutate func(*Options)) (*env, string) {
	root := testutil.Tmpfs(t, size)
	e := newEnvIn(t, filepath.Join(root, "store"), func(o *store.Options) {
		o.Index.Disabled = true
		o.Retention.DiskUsage = emptyDisk{}
	}, mutate)
	return e, filepath.Join(root, "ballast")
}

// A full disk met by the TimerLog (a write into a sparse segment page, which
// raises SIGBUS on tmpfs as on ext4): the timer messages stay pending in the
// timer queue and are read again, the timer store survives a crash and a
// clean restart on the full disk, and once space is freed every
// acknowledged timer is linked and delivered, none early, also after a
// restart of both stores.
func TestTimerLogOnFullDisk(t *testing.T) {
	e, ballast := fullDiskEnv(t, 8<<20, func(o *Options) {
		o.MappedFileSizeTimerLog = 64 << 10
		o.RetryInterval = time.Millisecond // the manual clock paces the retries
	})
	base := e.nowMs() + 30_000
	due := map[string]int64{}
	var acked []*message.Message
	send := func(at int64) error {
		m, err := e.trySend("T", deliverAtProps(at))
		if err == nil {
			acked = append(acked, m)
			due[m.Properties[message.PropUniqKey]] = at
		}
		return err
	}
	if err := send(base); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the first timer linked", func() bool { return e.ts().Stats().Enqueued == 1 })
	testutil.FillDisk(t, ballast)
	// The commitlog segment is preallocated and the timer queue's page is
	// there: these sends are acknowledged, while the TimerLog needs a new
	// page after 78 units.
	for i := 1; i < 300; i++ {
		if err := send(base + int64(i)*10); err != nil {
			if !errors.Is(err, store.ErrDiskFull) {
				t.Fatalf("send %d on the full disk: %v", i, err)
			}
			break
		}
	}
	t.Logf("%d timers acknowledged", len(acked))
	e.waitFor("a TimerLog append refused", func() bool { return e.ts().Stats().AppendFailures > 0 })
	if st := e.ts().Stats(); st.EnqueueBehind == 0 || st.Enqueued >= int64(len(acked)) {
		t.Fatalf("every timer linked on the full disk: %+v", st)
	}

	// kill -9 and a clean restart, both on the full disk.
	e.crashRestart()
	if err := e.ts().Stop(); err != nil && !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("Stop on the full disk: %v", err)
	}
	e.openTimer()
	if st := e.ts().Stats(); st.EnqueueBehind == 0 {
		t.Fatalf("every timer linked on the full disk after a restart: %+v", st)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// The store's dispatcher resumes on its own disk check (wall clock),
	// the timer enqueue on its retry interval (the manual clock).
	e.waitFor("sends accepted again", func() bool { return send(base+5000) == nil })
	e.waitFor("the backlog linked", func() bool {
		e.advance(time.Millisecond)
		return e.st.DispatchBehind() == 0 && e.ts().Stats().EnqueueBehind == 0
	})
	e.settle()
	e.advance(time.Duration(base-1-e.nowMs()) * time.Millisecond)
	e.settle()
	if got := e.got("T"); len(got) != 0 {
		t.Fatalf("%d timers delivered early", len(got))
	}
	e.advance(10 * time.Second)
	checkDelivered(e, "T", acked, due)

	// Both stores restarted: the deliveries are still there.
	if err := e.ts().Stop(); err != nil {
		t.Fatal(err)
	}
	e.cur.Store(nil)
	e.st.Close()
	e.openStore()
	e.openTimer()
	checkDelivered(e, "T", acked, due)
}

// wantFlushFull checks that a flush fails as on a full disk, in file.
func wantFlushFull(e *env, file string) {
	e.t.Helper()
	err := e.ts().Flush()
	if !errors.Is(err, store.ErrDiskFull) || !strings.Contains(err.Error(), file) {
		e.t.Fatalf("flush on the full disk: %v, want ErrDiskFull in %s", err, file)
	}
}

// The other files of the timer store on a full disk: the wheel and the
// delete set (pwrite and a temporary file: ENOSPC) and the checkpoint. A
// flush that meets the full disk fails with ErrDiskFull and is retried;
// the timer store survives a crash on the full disk and opens there, and
// once space is freed every acknowledged timer is delivered, none early.
func TestTimerFilesOnFullDisk(t *testing.T) {
	retryFast := func(o *Options) { o.RetryInterval = time.Millisecond }

	t.Run("wheel", func(t *testing.T) {
		e, ballast := fullDiskEnv(t, 8<<20, retryFast)
		f := &fullDiskTimers{e: e}
		a := e.nowMs() + 5000
		// b's slot is 200 slots (6400 bytes) from a's: another page of
		// the wheel file, a hole until b is linked.
		b := a + 200*e.opts.PrecisionMs
		f.mustSend(a)
		e.settle()
		if err := e.ts().Flush(); err != nil {
			t.Fatal(err)
		}
		testutil.FillDisk(t, ballast)
		f.mustSend(b) // the TimerLog page has room for it
		e.settle()
		wantFlushFull(e, "wheel")
		e.crashRestart()
		e.settle()
		wantFlushFull(e, "wheel")
		if err := os.Remove(ballast); err != nil {
			t.Fatal(err)
		}
		if err := e.ts().Flush(); err != nil {
			t.Fatalf("flush after space was freed: %v", err)
		}
		e.crashRestart()
		f.deliverAll(a, b)
	})

	t.Run("checkpoint", func(t *testing.T) {
		e, ballast := fullDiskEnv(t, 8<<20, retryFast)
		f := &fullDiskTimers{e: e}
		a := e.nowMs() + 5000
		f.mustSend(a)
		e.settle()
		// A first start of the timer store on a full disk: every file of it
		// is new (the checkpoint's first write needs a block), and the
		// message it must link is in the timer queue.
		if err := e.ts().Stop(); err != nil {
			t.Fatal(err)
		}
		e.cur.Store(nil)
		for _, p := range []string{"timerlog", "timerwheel", filepath.Join("config", "timercheck")} {
			if err := os.RemoveAll(filepath.Join(e.dir, p)); err != nil {
				t.Fatal(err)
			}
		}
		testutil.FillDisk(t, ballast)
		e.openTimer()
		wantFlushFull(e, "timercheck")
		e.waitFor("a TimerLog append refused", func() bool { return e.ts().Stats().AppendFailures > 0 })
		e.crashRestart()
		wantFlushFull(e, "timercheck")
		if err := os.Remove(ballast); err != nil {
			t.Fatal(err)
		}
		e.waitFor("the timer linked", func() bool {
			e.advance(time.Millisecond)
			return e.ts().Stats().EnqueueBehind == 0
		})
		if err := e.ts().Flush(); err != nil {
			t.Fatalf("flush after space was freed: %v", err)
		}
		e.restart()
		f.deliverAll(a, a)
	})

	t.Run("deletes", func(t *testing.T) {
		e, ballast := fullDiskEnv(t, 8<<20, retryFast)
		f := &fullDiskTimers{e: e}
		a := e.nowMs() + 5000
		f.mustSend(a)
		gone := e.sendAt("T", a)
		e.settle()
		if err := e.ts().Flush(); err != nil {
			t.Fatal(err)
		}
		testutil.FillDisk(t, ballast)
		if _, err := e.ts().Recall("T", handleOf(t, gone), "pg"); err != nil {
			t.Fatalf("recall on the full disk: %v", err)
		}
		e.settle()
		wantFlushFull(e, "timerdelete.json")
		e.crashRestart()
		e.settle()
		wantFlushFull(e, "timerdelete.json")
		if err := os.Remove(ballast); err != nil {
			t.Fatal(err)
		}
		if err := e.ts().Flush(); err != nil {
			t.Fatalf("flush after space was freed: %v", err)
		}
		e.restart()
		f.deliverAll(a, a) // gone is not among them: checkDelivered counts only f.acked
		if counts := uniqCounts(e.got("T")); counts[gone.Properties[message.PropUniqKey]] != 0 || len(counts) != 1 {
			t.Fatalf("delivered %v, the recalled message among them", counts)
		}
	})
}
