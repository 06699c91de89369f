//go:build unix

package store

import "golang.org/x/sys/unix"

// protect makes the mapped range b read-only, or read-write again.
func protect(b []byte, writable bool) error {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	return unix.Mprotect(b, prot)
}
