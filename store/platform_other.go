//go:build !linux

package store

import "os"

// Portable fallbacks for the Linux-only calls of platform_linux.go.

// madviseRandom does nothing: read-ahead stays on, which costs page-cache
// churn on sparse files but nothing in correctness.
func madviseRandom([]byte) {}

// syncData makes f's data durable with a full fsync (F_FULLFSYNC on macOS,
// FlushFileBuffers on Windows) where fdatasync is not available.
func syncData(f *os.File) error { return f.Sync() }

// dropCached does nothing: the kernel alone decides which cached pages go.
func dropCached(*os.File, int64, int64) {}

// populateWrite does nothing: pages fault in when first touched.
func populateWrite([]byte) error { return nil }
