package schedule

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/store"
)

// TestOffsetWriterRewritesInPlace: the first write replaces the file whole
// (keeping the previous one as .bak), later ones rewrite the same file in
// place at its length, padded with spaces, and each reads back as written;
// a text that outgrows the file replaces it whole again; the previous
// process's file stays in .bak throughout.
func TestOffsetWriterRewritesInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "delayOffset.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	prev := `{"offsetTable":{"1":3}}`
	if err := os.WriteFile(path, []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &offsetWriter{fs: store.OSFS(), path: path}
	defer w.close()
	check := func(want map[int]int64) os.FileInfo {
		t.Helper()
		got, err := loadOffsets(path)
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("read back %v, %v; want %v", got, err, want)
		}
		if bak, err := os.ReadFile(path + ".bak"); err != nil || string(bak) != prev {
			t.Fatalf(".bak = %q, %v; want the previous process's %q", bak, err, prev)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}

	if err := w.write(map[int]int64{1: 5, 2: 0}, false); err != nil {
		t.Fatal(err)
	}
	first := check(map[int]int64{1: 5, 2: 0})
	if w.f == nil || first.Size() != int64(w.size) || w.unsynced {
		t.Fatalf("after the first write: open %v, size %d (file %d), unsynced %v; want the synced file open at its length",
			w.f != nil, w.size, first.Size(), w.unsynced)
	}
	for i, offs := range []map[int]int64{{1: 37, 2: 1}, {1: 69, 2: 1}, {1: 70, 2: 1, 3: 4}} {
		if err := w.write(offs, false); err != nil {
			t.Fatal(err)
		}
		fi := check(offs)
		if !os.SameFile(fi, first) || fi.Size() != first.Size() {
			t.Fatalf("write %d: the file was replaced or resized (%d bytes, was %d)", i, fi.Size(), first.Size())
		}
		if !w.unsynced {
			t.Fatalf("write %d: an in-place write without sync is not marked unsynced", i)
		}
	}
	b, _ := os.ReadFile(path)
	if text := strings.TrimRight(string(b), " "); text == string(b) || !strings.HasSuffix(text, "}}") {
		t.Fatalf("in-place text %q is not padded with spaces", b)
	}
	if err := w.sync(); err != nil || w.unsynced {
		t.Fatalf("sync: %v, unsynced %v", err, w.unsynced)
	}

	long := map[int]int64{}
	for l := 1; l <= 18; l++ {
		long[l] = 1 << 40
	}
	if err := w.write(long, false); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadOffsets(path)
	if err != nil || !maps.Equal(got, long) {
		t.Fatalf("after outgrowing the file: %v, %v", got, err)
	}
	if int64(len(b)) <= first.Size() || len(b) != w.size {
		t.Fatalf("grown text: file %d bytes (was %d), writer size %d", len(b), first.Size(), w.size)
	}
	// .bak now holds the file it replaced, the last in-place text.
	if bak, _ := loadOffsets(path + ".bak"); !maps.Equal(bak, map[int]int64{1: 70, 2: 1, 3: 4}) {
		t.Fatalf(".bak after the whole rewrite = %v, want the last in-place offsets", bak)
	}
}

// TestPersistSyncsWhatBatchCommitsLeftUnsynced: a batch commit leaves the
// file unsynced; the periodic persist syncs it even when no offset moved
// since, and with SyncCommits every commit is synced.
func TestPersistSyncsWhatBatchCommitsLeftUnsynced(t *testing.T) {
	for _, syncCommits := range []bool{false, true} {
		h := newHarnessWith(t, t.TempDir(), clock.NewManual(t0), func(o *Options) { o.SyncCommits = syncCommits })
		for range deliverBatch + 1 {
			h.putDelayed("C", 1, "x")
		}
		h.clk.Advance(2 * time.Second) // level 1: 1 s
		if _, idle, err := h.svc.deliverDue(1, h.clk.Now()); !idle || err != nil {
			t.Fatalf("deliverDue: idle %v, %v", idle, err)
		}
		if h.svc.w.f == nil {
			t.Fatal("no offset file open after the commits")
		}
		if h.svc.w.unsynced == syncCommits {
			t.Fatalf("SyncCommits %v: unsynced %v after the batch commits", syncCommits, h.svc.w.unsynced)
		}
		if err := h.svc.persist(true); err != nil || h.svc.w.unsynced {
			t.Fatalf("periodic persist: %v, unsynced %v", err, h.svc.w.unsynced)
		}
		h.close()
		if h.svc.w.f != nil {
			t.Fatal("Stop left the offset file open")
		}
	}
}
