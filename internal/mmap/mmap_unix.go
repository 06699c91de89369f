//go:build unix

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f read-write and shared. f must be at
// least size bytes long.
func Map(f *os.File, size int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// Unmap unmaps b, a slice returned by Map. b must not be touched afterwards.
func Unmap(b []byte) error { return unix.Munmap(b) }

// Sync makes b, a page-aligned subslice of f's mapping, durable (msync
// MS_SYNC). On Linux msync syncs that range of the file (vfs_fsync_range),
// so it covers bytes written to it with pwrite as well.
func Sync(_ *os.File, b []byte) error { return unix.Msync(b, unix.MS_SYNC) }
