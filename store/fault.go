package store

import (
	"fmt"
	"runtime/debug"
)

// The two ways a full disk shows, turned into ErrDiskFull once for every
// file the broker writes: here for the store's own files, and for the files
// of the timer store (timer/timerlog.go, timer/wheel.go), which map and write
// through the same FS seam (vfs.go).

// GuardFault runs fn, which writes into a mapping, and turns a memory fault
// into an error: a write to a sparse segment page on a full disk (or to a
// file cut short behind the mapping) raises SIGBUS, which would otherwise
// kill the process. The bytes of the faulting page are not written; bytes fn
// stored before the fault are, so the caller must treat the whole range fn
// writes as unwritten and write it again later. On tmpfs even a read of a
// hole page of a shared mapping allocates the page and so faults on a full
// disk: scans that read past the written data into holes (recovery) run
// under the guard too, and end where the read faulted.
func GuardFault(fn func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r) // a bug, not a fault
			}
			err = fmt.Errorf("%w: write to a mapped file faulted at %#x: %v", ErrDiskFull, fault.Addr(), r)
		}
	}()
	fn()
	return nil
}

// DiskErr wraps err in ErrDiskFull when it means the disk is full (ENOSPC
// from a write, truncate or fallocate), so that callers answer it as a full
// disk and not as an I/O failure; other errors are returned unchanged.
func DiskErr(err error) error {
	if err != nil && isNoSpace(err) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}
