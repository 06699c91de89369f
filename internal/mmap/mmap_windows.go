package mmap

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Map maps the first size bytes of f read-write and shared
// (CreateFileMapping + MapViewOfFile). f must be at least size bytes long.
// The view keeps the mapping object alive, so its handle is closed at once.
func Map(f *os.File, size int64) ([]byte, error) {
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READWRITE, uint32(size>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	defer windows.CloseHandle(h)
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ|windows.FILE_MAP_WRITE, 0, 0, uintptr(size))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	// addr is memory outside the Go heap that stays put until Unmap; reading
	// it through a pointer keeps vet's unsafeptr check satisfied.
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), size), nil
}

// Unmap unmaps b, a slice returned by Map. b must not be touched afterwards.
func Unmap(b []byte) error {
	return os.NewSyscallError("UnmapViewOfFile", windows.UnmapViewOfFile(uintptr(unsafe.Pointer(&b[0]))))
}

// Sync makes b, a subslice of f's mapping, durable: FlushViewOfFile starts
// writing its dirty pages, and FlushFileBuffers (f.Sync) waits for them, and
// for bytes written to f otherwise, to reach the disk.
func Sync(f *os.File, b []byte) error {
	if err := windows.FlushViewOfFile(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))); err != nil {
		return os.NewSyscallError("FlushViewOfFile", err)
	}
	return f.Sync()
}
