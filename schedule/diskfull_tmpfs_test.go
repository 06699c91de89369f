//go:build linux

package schedule

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/store"
)

// delayOffset.json on a full disk (a tmpfs filled by a ballast file): a
// persist fails with ErrDiskFull and keeps the offsets dirty, Stop reports
// it, New opens on the full disk even when it has a correction to persist,
// and once space is freed the offsets are persisted and nothing is lost or
// delivered twice.
func TestDelayOffsetsOnFullDisk(t *testing.T) {
	// The config directory alone is a tiny tmpfs: what frees or takes
	// space in the store's files cannot change when it is full.
	dir := t.TempDir()
	root := filepath.Join(dir, "config")
	testutil.MountTmpfs(t, root, 64<<10)
	path := filepath.Join(root, "delayOffset.json")
	// A file written in place later: its page has its block.
	pad := func(s string) []byte { return append([]byte(s), bytes.Repeat([]byte{' '}, 200-len(s))...) }
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pad(`{"offsetTable":{1:0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	for i := 0; i < 5; i++ {
		h.putDelayed("F", 1, strconv.Itoa(i))
	}
	clk.Advance(time.Second)
	if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(root, "ballast")
	testutil.FillDisk(t, ballast)
	// Written in place (the page has its block): no space needed.
	if err := h.svc.Stop(); err != nil {
		t.Fatalf("Stop on the full disk: %v", err)
	}
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}

	// An offset beyond its queue, written in place: New corrects it and,
	// as the first write of a process replaces the file whole, cannot
	// persist the correction.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(pad(`{"offsetTable":{1:99}}`), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h = newHarness(t, dir, clk)
	if off := h.svc.Offsets()[1]; off != 5 {
		t.Fatalf("offset after a restart on the full disk = %d, want 5", off)
	}
	if err := h.svc.persist(true); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("persist on the full disk: %v, want ErrDiskFull", err)
	}
	if err := h.svc.Stop(); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("Stop on the full disk: %v, want ErrDiskFull", err)
	}
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, dir, clk)
	h.close()
	if saved, err := loadOffsets(path); err != nil || saved[1] != 5 {
		t.Fatalf("persisted offsets %v, %v; want 5", saved, err)
	}

	h = newHarness(t, dir, clk)
	defer h.close()
	if off := h.svc.Offsets()[1]; off != 5 {
		t.Fatalf("offset after a restart = %d, want 5", off)
	}
	h.putDelayed("F", 1, "late")
	clk.Advance(time.Second)
	if _, _, err := h.svc.deliverDue(1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	got := h.delivered("F")
	if len(got) != 6 || string(got[5].Body) != "late" {
		t.Fatalf("%d messages delivered, want the 5 before the full disk and 1 after", len(got))
	}
}
