package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves disk blocks for the whole file so that writes through
// the mapping cannot fault on a full disk.
func preallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil // e.g. some network filesystems: fall back to a sparse file
	}
	return err
}
