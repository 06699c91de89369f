package store

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// protect makes the mapped range b read-only, or read-write again.
func protect(b []byte, writable bool) error {
	prot := uint32(windows.PAGE_READONLY)
	if writable {
		prot = windows.PAGE_READWRITE
	}
	var old uint32
	return windows.VirtualProtect(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), prot, &old)
}
