//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// canSyncDir: fsync of a directory makes the entries created in it durable.
const canSyncDir = true

// isNoSpace reports whether err means the disk is full.
func isNoSpace(err error) bool { return errors.Is(err, unix.ENOSPC) }

// tryLock takes an exclusive, non-blocking flock on f. held reports that
// another open file holds it. The kernel drops the lock when the process
// dies.
func tryLock(f *os.File) (held bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// Usage implements DiskUsage with statfs(2).
func (StatfsUsage) Usage(path string) (float64, int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1, 0, err
	}
	if st.Blocks == 0 {
		return -1, 0, fmt.Errorf("store: statfs %s: no blocks", path)
	}
	bs := int64(st.Bsize)
	used := float64(st.Blocks-st.Bfree) / float64(st.Blocks)
	return used, int64(st.Bavail) * bs, nil
}
