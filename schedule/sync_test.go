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
