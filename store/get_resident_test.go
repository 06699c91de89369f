//go:build linux

package store

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rmqio/rmq/internal/mmap"
)

// evict drops f's pages from the page cache: unmapped from the process
// (Release), written back (Sync), then dropped (fadvise DONTNEED skips
// mapped and dirty pages). Reads then go to the disk.
func evict(t *testing.T, f *mappedFile) {
	t.Helper()
	if err := mmap.Release(f.data); err != nil {
		t.Fatal(err)
	}
	if err := mmap.Sync(f.file, f.data); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.file.Fd()), 0, int64(len(f.data)), unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestReadResident checks the snapshot the broker uses to serve a pull
// behind the queue's end on its event loop: true for records just written,
// false once the commitlog or consume-queue pages they need leave the page
// cache (until a read brings them back), and false for a queue or offset
// with nothing to read and for a pull whose records lie in two commitlog
// files.
func TestReadResident(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeConsumeQueue = 1000 * cqUnitSize
	s := openStore(t, o)
	var fs unix.Statfs_t
	if err := unix.Statfs(o.Dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs pages cannot be evicted; the test needs a disk-backed directory")
	}
	for i := range 64 {
		mustPut(t, s, testMessage("Res", 0, i))
	}
	waitDispatched(t, s)
	if len(s.cl.files) != 1 {
		t.Fatalf("64 messages took %d commitlog files, want 1", len(s.cl.files))
	}
	const maxBytes = 256 << 10
	if !s.ReadResident("Res", 0, 0, 32, maxBytes) || !s.ReadResident("Res", 0, 40, 32, maxBytes) {
		t.Fatal("records just written read as not resident")
	}
	for name, ok := range map[string]bool{
		"offset at the end": s.ReadResident("Res", 0, 64, 32, maxBytes),
		"offset past it":    s.ReadResident("Res", 0, 70, 32, maxBytes),
		"unknown queue":     s.ReadResident("Res", 1, 0, 32, maxBytes),
		"unknown topic":     s.ReadResident("Nope", 0, 0, 32, maxBytes),
	} {
		if ok {
			t.Errorf("%s reads as resident", name)
		}
	}

	evict(t, s.cl.files[0])
	if s.ReadResident("Res", 0, 0, 32, maxBytes) {
		t.Fatal("records evicted from the page cache read as resident")
	}
	if got := len(readQueue(t, s, "Res", 0)); got != 64 {
		t.Fatalf("read %d messages back, want 64", got)
	}
	if !s.ReadResident("Res", 0, 0, 32, maxBytes) {
		t.Fatal("records read back read as not resident")
	}

	q, _ := s.queueFor("Res", 0, false)
	evict(t, q.files[0].mappedFile)
	if s.ReadResident("Res", 0, 0, 32, maxBytes) {
		t.Fatal("consume-queue units evicted from the page cache read as resident")
	}
	readQueue(t, s, "Res", 0)

	// Fill the first commitlog file: the records of one pull then lie in
	// two files.
	n := 64
	for len(s.cl.files) < 2 {
		mustPut(t, s, testMessage("Res", 0, n))
		n++
	}
	mustPut(t, s, testMessage("Res", 0, n))
	waitDispatched(t, s)
	if s.ReadResident("Res", 0, int64(n-2), 32, maxBytes) {
		t.Fatal("a pull over two commitlog files reads as resident")
	}
	if !s.ReadResident("Res", 0, int64(n), 32, maxBytes) {
		t.Fatal("the newest record, alone in the second file, reads as not resident")
	}
}
