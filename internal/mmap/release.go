package mmap

import "os"

var pageSize = int64(os.Getpagesize())

// ReleasePages releases (Release) the whole pages of b[from:to], where b is
// a mapping returned by Map, so its first byte is page-aligned: from is
// rounded up and to down to a page boundary, and a page only partly inside
// the range stays mapped. It does nothing when no whole page is inside.
func ReleasePages(b []byte, from, to int64) error {
	from = (max(from, 0) + pageSize - 1) &^ (pageSize - 1)
	to = min(to, int64(len(b))) &^ (pageSize - 1)
	if from >= to {
		return nil
	}
	return Release(b[from:to])
}
