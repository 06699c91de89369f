//go:build !linux

package store

import "os"

// preallocate is a no-op where fallocate is unavailable: the file stays sparse.
func preallocate(*os.File, int64) error { return nil }
