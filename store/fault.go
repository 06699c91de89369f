package store

import (
	"fmt"
	"runtime/debug"
)

// guardFault runs fn, which writes into a mapping, and turns a memory fault
// into an error: a write to a sparse segment page on a full disk (or to a
// file cut short behind the mapping) raises SIGBUS, which would otherwise
// kill the process.
func guardFault(fn func()) (err error) {
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
