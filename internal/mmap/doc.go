// Package mmap maps files read-write and shared, on every system rmq builds
// for: mmap/munmap/msync on Unix (golang.org/x/sys/unix), and
// CreateFileMapping/MapViewOfFile/FlushViewOfFile on Windows
// (golang.org/x/sys/windows). Bytes copied into a mapping are in the OS's
// cache at once, so a killed process loses nothing written; Sync makes them
// durable. The store and the timer log map their segment files with it.
package mmap
