//go:build unix

package store

import (
	"errors"
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
