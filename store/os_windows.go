package store

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// canSyncDir: Windows cannot flush a directory handle (FlushFileBuffers
// needs write access, which a directory handle does not get); NTFS journals
// its directory entries, so syncDir has nothing to do.
const canSyncDir = false

// isNoSpace reports whether err means the disk is full.
func isNoSpace(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL) ||
		errors.Is(err, syscall.ENOSPC)
}

// tryLock takes an exclusive, non-blocking lock on f's first byte
// (LockFileEx). held reports that another handle holds it. Windows drops the
// lock when the process dies.
func tryLock(f *os.File) (held bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	return false, err
}
