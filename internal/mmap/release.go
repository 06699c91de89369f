package mmap

import "os"

// PageSize is the memory page size: the unit of the ranges Release and
// Sync take, and of what ReleasePages rounds to.
var PageSize = int64(os.Getpagesize())

// ReleasePages releases (Release) the whole pages of b[from:to], where b is
// a mapping returned by Map, so its first byte is page-aligned: from is
// rounded up and to down to a page boundary, and a page only partly inside
// the range stays mapped. It does nothing when no whole page is inside.
func ReleasePages(b []byte, from, to int64) error {
	from = (max(from, 0) + PageSize - 1) &^ (PageSize - 1)
	to = min(to, int64(len(b))) &^ (PageSize - 1)
	if from >= to {
		return nil
	}
	return Release(b[from:to])
}
