package store

import (
	"errors"
	"fmt"
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

// Usage implements DiskUsage with GetDiskFreeSpaceEx: used is
// (total-free)/total, avail the bytes free to this user.
func (StatfsUsage) Usage(path string) (float64, int64, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return -1, 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return -1, 0, os.NewSyscallError("GetDiskFreeSpaceEx", err)
	}
	if total == 0 {
		return -1, 0, fmt.Errorf("store: %s: volume of size 0", path)
	}
	return float64(total-free) / float64(total), int64(avail), nil
}
