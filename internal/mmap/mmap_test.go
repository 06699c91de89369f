package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMapWriteSyncReread writes through a mapping, syncs it, unmaps, and
// reads the bytes back through the file.
func TestMapWriteSyncReread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 1 << 16
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	b, err := Map(f, size)
	if err != nil {
		t.Fatal(err)
	}
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
