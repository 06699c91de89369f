package store

import (
	"errors"
	"os"
	"syscall"
)

// preallocate reserves disk blocks for the whole file so that writes through
// the mapping cannot fault on a full disk.
func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil // e.g. some network filesystems: fall back to a sparse file
	}
	return err
}
