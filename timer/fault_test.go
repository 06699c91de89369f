package timer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// faultEnv is newEnv with the file operations of both stores going through
// one ErrorFS, as broker.Options.FS hands the same FS to both.
func faultEnv(t *testing.T) (*env, *store.Injector) {
	t.Helper()
	inj := &store.Injector{}
	fs := store.NewErrorFS(inj)
	e := newEnvStore(t, func(o *store.Options) { o.FS = fs }, func(o *Options) {
		o.FS = fs
		o.RetryInterval = time.Millisecond // the manual clock paces the retries
	})
	return e, inj
}

// lastCheckpoint is the durable checkpoint the timer store last wrote.
func lastCheckpoint(ts *TimerStore) checkpoint {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.lastCkpt
}

// noUnsynced fails when a timer log byte range whose msync failed was never
// written again: Linux may have marked its pages clean without writing them,
// so a later successful msync does not make it durable.
func noUnsynced(t *testing.T, e *env, inj *store.Injector) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.dir, "timerlog"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		p := filepath.Join(e.dir, "timerlog", ent.Name())
		if r := inj.Unsynced(p); len(r) > 0 {
			t.Fatalf("%s: ranges %v whose msync failed are claimed durable", p, r)
		}
	}
}

// A write or sync of a timer file that fails (the TimerLog's msync, the
// wheel's pwrite or fsync, the delete set's, the checkpoint's) fails the
// flush with the error and leaves the durable checkpoint where it was, and
// so does its retry. Once the fault is gone a flush succeeds and covers what
// the failed ones did not: no range whose msync failed is claimed durable
// unwritten. After a crash with the fault back, the timer store opens on the
// faulty disk or refuses to with the fault (when its recovery writes that
// file) and opens once the fault is gone; after another crash every
// acknowledged timer is delivered, none early, and the recalled one is not.
func TestFaultTimerFileWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule store.Rule
		file string // named in the flush's error
	}{
		{"timerlog msync", store.Rule{Op: store.OpMsync, Path: "timerlog"}, "timerlog"},
		{"wheel write", store.Rule{Op: store.OpWrite, Path: "timerwheel"}, "wheel"},
		{"wheel sync", store.Rule{Op: store.OpSync, Path: "timerwheel"}, "wheel"},
		{"deletes write", store.Rule{Op: store.OpWrite, Path: "timerdelete.json"}, "timerdelete.json"},
		{"deletes rename", store.Rule{Op: store.OpRename, Path: "timerdelete.json"}, "timerdelete.json"},
		{"checkpoint write", store.Rule{Op: store.OpWrite, Path: "timercheck"}, "timercheck"},
		{"checkpoint sync", store.Rule{Op: store.OpSync, Path: "timercheck"}, "timercheck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, inj := faultEnv(t)
			f := &fullDiskTimers{e: e}
			a := e.nowMs() + 5000
			// b's slot is 200 slots from a's: another page of the wheel.
			b := a + 200*e.opts.PrecisionMs
			f.mustSend(a)
			e.settle()
			if err := e.ts().Flush(); err != nil {
				t.Fatal(err)
			}
			before := lastCheckpoint(e.ts())
			f.mustSend(b)
			gone := e.sendAt("T", b)
			e.settle()
			if _, err := e.ts().Recall("T", handleOf(t, gone), "pg"); err != nil {
				t.Fatalf("recall: %v", err)
			}
			e.settle()

			inj.Add(tc.rule)
			for try := 0; try < 2; try++ { // the retry fails alike
				err := e.ts().Flush()
				if !errors.Is(err, store.ErrInjected) || !strings.Contains(err.Error(), tc.file) {
					t.Fatalf("flush with a faulty %s: %v, want the injected fault in %s", tc.file, err, tc.file)
				}
				if got := lastCheckpoint(e.ts()); got != before {
					t.Fatalf("a failed flush moved the checkpoint from %+v to %+v", before, got)
				}
			}
			inj.Clear()
			if err := e.ts().Flush(); err != nil {
				t.Fatalf("flush once the fault is gone: %v", err)
			}
			noUnsynced(t, e, inj)

			// A crash with the fault back. The restart either fails with the
			// fault (recovery writes that file) or opens on the faulty disk.
			c := b + 100
			f.mustSend(c)
			e.settle()
			inj.Add(tc.rule)
			e.ts().crash()
			if ts, err := Open(e.opts); err != nil {
				if !errors.Is(err, store.ErrInjected) {
					t.Fatalf("open on the faulty disk: %v", err)
				}
				inj.Clear()
				e.openTimer()
			} else {
				e.cur.Store(ts)
				ts.Start()
				e.settle()
				inj.Clear()
			}
			e.settle()
			if err := e.ts().Flush(); err != nil {
				t.Fatalf("flush once the fault is gone: %v", err)
			}
			e.crashRestart()
			f.deliverAll(a, c)
			if counts := uniqCounts(e.got("T")); counts[gone.Properties[message.PropUniqKey]] != 0 || len(counts) != 3 {
				t.Fatalf("delivered %v, want the three acknowledged timers and not the recalled one", counts)
			}
		})
	}
}

// A TimerLog segment that cannot be created (its open, truncate or mmap
// fails) refuses the appends that need it: the acknowledged timers stay in
// the timer queue and are linked once the fault is gone, and every one is
// delivered, none early.
func TestFaultTimerLogSegmentCreation(t *testing.T) {
	for _, op := range []store.Op{store.OpOpen, store.OpTruncate, store.OpMmap} {
		t.Run(op.String(), func(t *testing.T) {
			e, inj := faultEnv(t)
			f := &fullDiskTimers{e: e}
			base := e.nowMs() + 5000
			f.mustSend(base)
			e.waitFor("the first timer linked", func() bool { return e.ts().Stats().Enqueued == 1 })
			// A 4 KiB segment holds 78 units: the 100 timers need a second one.
			inj.Add(store.Rule{Op: op, Path: "timerlog"})
			for i := 1; i < 100; i++ {
				f.mustSend(base + int64(i)*10)
			}
			e.waitFor("a TimerLog append refused", func() bool { return e.ts().Stats().AppendFailures > 0 })
			if st := e.ts().Stats(); st.EnqueueBehind == 0 || st.Enqueued >= int64(len(f.acked)) {
				t.Fatalf("every timer linked while no segment can be created: %+v", st)
			}
			if len(inj.Hits()) == 0 {
				t.Fatal("no fault injected")
			}
			inj.Clear()
			e.waitFor("the backlog linked", func() bool {
				e.advance(time.Millisecond)
				return e.ts().Stats().EnqueueBehind == 0
			})
			if err := e.ts().Flush(); err != nil {
				t.Fatal(err)
			}
			e.crashRestart()
			f.deliverAll(base, base+990)
		})
	}
}
