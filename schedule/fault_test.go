package schedule

import (
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/store"
)

// fileOffset reads level's offset from delayOffset.json as a restart
// would (-1: no file).
func fileOffset(t *testing.T, dir string, level int) int64 {
	t.Helper()
	m, err := loadOffsets(filepath.Join(dir, "config", "delayOffset.json"))
	if err != nil {
		t.Fatal(err)
	}
	if off, ok := m[level]; ok {
		return off
	}
	return -1
}

// A write or sync of delayOffset.json that fails, through Options.FS, is
// returned by persist and by Stop and keeps the offsets dirty: the file
// keeps the last offsets written, so a restart delivers again, never
// skips. Both ways of writing the file are covered: whole (the first write,
// store.WriteFileAtomic) and in place (later ones). Once the fault is gone
// the next persist writes the offsets.
func TestFaultDelayOffsetWrite(t *testing.T) {
	for _, op := range []store.Op{store.OpWrite, store.OpSync} {
		t.Run(op.String(), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			inj := &store.Injector{}
			fs := store.NewErrorFS(inj)
			rule := store.Rule{Op: op, Path: "delayOffset.json"}
			h := newHarnessWith(t, dir, clk, func(o *Options) { o.FS = fs })
			for i := 0; i < 5; i++ {
				h.putDelayed("F", 1, strconv.Itoa(i))
			}
			inj.Add(rule)
			clk.Advance(time.Second)
			if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
				t.Fatal(err)
			}
			if n := len(h.delivered("F")); n != 5 {
				t.Fatalf("%d of 5 delivered", n)
			}
			// The whole-file write failed (the commit's and this one).
			if err := h.svc.persist(true); !errors.Is(err, store.ErrInjected) {
				t.Fatalf("persist with a faulty delayOffset.json: %v", err)
			}
			if off := fileOffset(t, dir, 1); off > 0 {
				t.Fatalf("delayOffset.json holds %d after failed writes", off)
			}
			inj.Clear()
			if err := h.svc.persist(true); err != nil {
				t.Fatalf("persist once the fault is gone: %v", err)
			}
			if off := fileOffset(t, dir, 1); off != 5 {
				t.Fatalf("delayOffset.json holds %d, want 5", off)
			}

			// In place now: two more deliveries whose commits fail.
			h.putDelayed("F", 1, "5")
			h.putDelayed("F", 1, "6")
			inj.Add(rule)
			clk.Advance(time.Second)
			if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
				t.Fatal(err)
			}
			if err := h.svc.Stop(); !errors.Is(err, store.ErrInjected) {
				t.Fatalf("Stop with a faulty delayOffset.json: %v", err)
			}
			if err := h.st.Close(); err != nil {
				t.Fatal(err)
			}
			inj.Clear()
			if op == store.OpWrite {
				if off := fileOffset(t, dir, 1); off != 5 {
					t.Fatalf("delayOffset.json holds %d after a failed write, want 5", off)
				}
			}

			// The restart delivers everything again that the file does
			// not cover: nothing acknowledged is lost.
			h = newHarnessWith(t, dir, clk, func(o *Options) { o.FS = fs })
			defer h.close()
			if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for _, m := range h.deliveredAll("F") {
				counts[string(m.Body)]++
			}
			for i := 0; i < 7; i++ {
				if counts[strconv.Itoa(i)] == 0 {
					t.Fatalf("message %d lost: delivered %v", i, counts)
				}
			}
			if err := h.svc.persist(true); err != nil {
				t.Fatal(err)
			}
			if off := fileOffset(t, dir, 1); off != 7 {
				t.Fatalf("delayOffset.json holds %d, want 7", off)
			}
		})
	}
}
