package mmap

import "golang.org/x/sys/unix"

// Release drops this process's page-table entries for b, a page-aligned
// range of a mapping returned by Map (madvise MADV_DONTNEED). For a shared
// file mapping that only unmaps the pages: they stay in the page cache (a
// dirty one stays dirty and is still written back, and Sync of the range
// still writes it), and the next access faults them back in without I/O.
// The process's resident set stops counting them.
func Release(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }
