package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
)

// mapNewFile creates a file of size bytes in the test's directory and maps
// it; the file is closed when the test ends, the mapping is the caller's.
func mapNewFile(t *testing.T, size int64) (*os.File, []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "seg"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	b, err := Map(f, size)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// TestMapWriteSyncReread writes through a mapping, syncs it, unmaps, and
// reads the bytes back through the file.
func TestMapWriteSyncReread(t *testing.T) {
	const size = 1 << 16
	f, b := mapNewFile(t, size)
	if len(b) != size {
		t.Fatalf("len = %d, want %d", len(b), size)
	}
	want := []byte("hello, mapping")
	copy(b[size-len(want):], want)
	page := os.Getpagesize()
	if err := Sync(f, b[(size-len(want))&^(page-1):]); err != nil {
		t.Fatal(err)
	}
	if err := Unmap(b); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, size-int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
}

// TestReleasePagesRounds checks that only the whole pages inside the range
// leave the resident set, and that the bytes stay (a shared file mapping
// keeps them in the page cache). Ranges without a whole page, or reaching
// past the mapping, release what they cover and do not fail.
func TestReleasePagesRounds(t *testing.T) {
	page := PageSize
	size := 8 * page
	_, b := mapNewFile(t, size)
	defer Unmap(b)
	fill := func() {
		for i := range b {
			b[i] = byte(i % 251)
		}
	}
	kb := page / 1024
	for _, c := range []struct {
		from, to int64
		pages    int64 // released
	}{
		{0, size, 8},
		{1, page, 0},
		{page - 1, 3*page + 1, 2},
		{3 * page, 3 * page, 0},
		{5 * page, size + page, 3},
		{-page, page, 1},
		{size, 2 * size, 0},
	} {
		fill()
		if runtime.GOOS != "linux" {
			if err := ReleasePages(b, c.from, c.to); err != nil {
				t.Fatalf("ReleasePages(%d, %d): %v", c.from, c.to, err)
			}
			continue
		}
		if got := testutil.MappedRSS(t, b); got != 8*kb {
			t.Fatalf("%d kB resident after writing every page, want %d", got, 8*kb)
		}
		if err := ReleasePages(b, c.from, c.to); err != nil {
			t.Fatalf("ReleasePages(%d, %d): %v", c.from, c.to, err)
		}
		if got, want := testutil.MappedRSS(t, b), (8-c.pages)*kb; got != want {
			t.Errorf("ReleasePages(%d, %d): %d kB resident, want %d", c.from, c.to, got, want)
		}
	}
	for i := range b {
		if b[i] != byte(i%251) {
			t.Fatalf("byte %d = %d after release, want %d", i, b[i], byte(i%251))
		}
	}
}
