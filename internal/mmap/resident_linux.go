package mmap

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxResidentPages bounds the range Resident looks at (4 MiB of 4 KiB
// pages), so its vector lives on the stack; a longer range reads as not
// resident.
const maxResidentPages = 1024

// Resident reports whether every page of b, a range of a mapping returned by
// Map, is in memory: for a shared file mapping, in the page cache (mincore
// looks at the cache, not this process's page tables, so a page Release
// dropped still counts). Reading such a range faults at most minor faults,
// never waits for the disk, unless the kernel evicts a page between the
// check and the read. An empty b is resident; a range longer than
// maxResidentPages pages, or one mincore refuses, is not.
func Resident(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := addr &^ uintptr(PageSize-1) // inside the mapping: its base is page-aligned
	n := addr + uintptr(len(b)) - start
	pages := (n + uintptr(PageSize) - 1) / uintptr(PageSize)
	if pages > maxResidentPages {
		return false
	}
	var vec [maxResidentPages]byte
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, start, n, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return false
	}
	for _, v := range vec[:pages] {
		if v&1 == 0 {
			return false
		}
	}
	return true
}
