package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// Linux-only page-cache and sync calls. platform_other.go has the portable
// fallbacks for every other system.

// madviseRandom turns off read-ahead for faults on b (see
// mappedFile.adviseRandom). Failure only costs read-ahead, so it is ignored.
func madviseRandom(b []byte) { _ = unix.Madvise(b, unix.MADV_RANDOM) }

// releasePages drops this process's page-table entries for b, a range of a
// shared file mapping; the pages stay in the page cache (commitlog_release.go).
func releasePages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }

// syncData makes f's written data durable without its timestamps
// (fdatasync): the extent conversion is the metadata that matters.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
