//go:build linux

package store

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rmqio/rmq/internal/mmap"
)

// residentPages counts the pages of b in the page cache.
func residentPages(b []byte) int {
	n := 0
	for off := 0; off < len(b); off += int(pageSize) {
		if mmap.Resident(b[off : off+1]) {
			n++
		}
	}
	return n
}

// TestPageCacheKeep writes eight commitlog files with PageCacheKeep at two
// of them and checks after a flush that the pages of the files that fell
// behind left the page cache while the newest records stayed; that every
// message reads back intact from the disk, and again after a restart; and
// that PageCacheKeep 0 drops nothing.
func TestPageCacheKeep(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int64
	}{{"keep 128 KiB", 128 << 10}, {"keep 0", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.PageCacheKeep = tc.keep
			var fs unix.Statfs_t
			if err := unix.Statfs(o.Dir, &fs); err != nil {
				t.Fatal(err)
			}
			if fs.Type == unix.TMPFS_MAGIC {
				t.Skip("tmpfs pages cannot be dropped; the test needs a disk-backed directory")
			}
			s := openStore(t, o)
			n := 0
			for ; s.MaxPhyOffset() < 8*o.MappedFileSizeCommitLog; n++ {
				mustPut(t, s, testMessage("Keep", 0, n))
			}
			waitDispatched(t, s)
			s.flushCommitLog() // flushes everything and runs a drop pass

			// A pass drops nothing short of a dropStep: an earlier pass (the
			// flush loop's) may have left up to that much behind the line.
			behind := s.cl.flushedOffset.Load() - tc.keep
			dropped := behind - s.cl.dropStep()
			// Nearly every page of the files that fell behind is dropped. A
			// few may stay: the kernel skips a page it cannot free at that
			// moment (under -race, now and then two pages of one file, which
			// a direct drop freed a moment later), and no later pass comes
			// back for them.
			cachedBehind, pagesBehind := 0, 0
			for _, f := range s.cl.files {
				got := residentPages(f.data)
				switch {
				case tc.keep > 0 && f.end() <= dropped:
					cachedBehind += got
					pagesBehind += len(f.data) / int(pageSize)
				case (tc.keep == 0 || f.start >= behind) && got == 0:
					t.Errorf("file %d: no page cached, want the pages written", f.start)
				}
			}
			if tc.keep > 0 && (pagesBehind == 0 || cachedBehind > pagesBehind/4) {
				t.Errorf("%d of the %d pages of the files %d KiB or more behind are still cached, want at most a quarter",
					cachedBehind, pagesBehind, (s.MaxPhyOffset()-dropped)>>10)
			}
			checkQueue(t, s, "Keep", 0, n)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkQueue(t, openStore(t, o), "Keep", 0, n)
		})
	}
}
