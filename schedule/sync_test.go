package schedule

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/rmqio/rmq/internal/clock"
)

// TestReplaceOffsetsFromMaster: a slave takes its master's delay offsets
// (the GET_ALL_DELAY_OFFSET text, bare keys as a Java master writes them):
// the levels named replace its own, levels outside the table are ignored,
// the file holds them at once and they survive Stop (whose persist must not
// write the old ones back) and a restart. A body that is not JSON changes
// nothing.
func TestReplaceOffsetsFromMaster(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	for range 3 {
		h.putDelayed("T", 1, "a")
	}
	h.putDelayed("T", 2, "b")
	if err := h.svc.ReplaceOffsets([]byte(`{"offsetTable":{1:2,2:1,99:5}}`)); err != nil {
		t.Fatal(err)
	}
	want := map[int]int64{1: 2, 2: 1}
	if got := h.svc.Offsets(); got[1] != 2 || got[2] != 1 || got[99] != 0 {
		t.Fatalf("offsets %v", got)
	}
	if got, err := loadOffsets(filepath.Join(dir, "config", "delayOffset.json")); err != nil || !maps.Equal(got, want) {
		t.Fatalf("file %v %v, want %v", got, err, want)
	}
	if err := h.svc.ReplaceOffsets([]byte(`{"offsetTable":`)); err == nil {
		t.Fatal("a torn body was taken")
	}
	h.close()
	h = newHarness(t, dir, clk)
	defer h.close()
	if got := h.svc.Offsets(); got[1] != 2 || got[2] != 1 {
		t.Fatalf("after a restart: %v", got)
	}
}

// TestAdvanceOffsetsFromActingSlave: a returning master takes the delay
// offsets of the slave that acted for it only forward and only within its
// own queues: level 1 (3 entries here) moves from 0 to 2 and not back to 1
// later; level 2 (1 entry) does not move to 3, past its queue's end (the
// entries 1 and 2 would be lost); level 3 (empty) stays; level 99 is not a
// level. The taken offsets are in the file at once.
func TestAdvanceOffsetsFromActingSlave(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	h := newHarness(t, dir, clk)
	defer h.close()
	for range 3 {
		h.putDelayed("T", 1, "a")
	}
	h.putDelayed("T", 2, "b")
	n, err := h.svc.AdvanceOffsets([]byte(`{"offsetTable":{1:2,2:3,3:1,99:5}}`))
	if err != nil || n != 1 {
		t.Fatalf("moved %d levels, %v; want 1", n, err)
	}
	want := map[int]int64{1: 2, 2: 0, 3: 0}
	if got := h.svc.Offsets(); got[1] != 2 || got[2] != 0 || got[3] != 0 || got[99] != 0 {
		t.Fatalf("offsets %v, want %v", got, want)
	}
	if got, err := loadOffsets(filepath.Join(dir, "config", "delayOffset.json")); err != nil || got[1] != 2 {
		t.Fatalf("file %v %v", got, err)
	}
	if n, err := h.svc.AdvanceOffsets([]byte(`{"offsetTable":{1:1,2:1}}`)); err != nil || n != 1 {
		t.Fatalf("moved %d levels, %v; want level 2 only", n, err)
	}
	if got := h.svc.Offsets(); got[1] != 2 || got[2] != 1 {
		t.Fatalf("offsets %v: level 1 moved back or level 2 not taken", got)
	}
	if _, err := h.svc.AdvanceOffsets([]byte(`{"offsetTable":`)); err == nil {
		t.Fatal("a torn body was taken")
	}
}
