package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (not its metadata) to the device, as dd's
// conv=fdatasync does.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
