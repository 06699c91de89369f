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

// dropCached drops the clean page-cache pages of f's bytes [off, off+n)
// that no process maps (posix_fadvise DONTNEED). Failure only keeps them
// cached, so it is ignored.
func dropCached(f *os.File, off, n int64) { _ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED) }

// populateWrite maps b's pages writable ahead of use (MADV_POPULATE_WRITE,
// Linux 5.14+): one system call instead of a read fault and a write fault
// per page when they are first touched. Errors (an older kernel, no disk
// space for a sparse file's holes) only leave the faults to happen later.
func populateWrite(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
