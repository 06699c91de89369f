//go:build !linux

package mmap

// Release does nothing off Linux: pages stay mapped until Unmap, and the OS
// reclaims them under memory pressure as it would any clean (or flushed)
// page of a shared file mapping.
func Release([]byte) error { return nil }
