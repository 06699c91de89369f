package store

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

const (
	seekData = 3 // SEEK_DATA
	seekHole = 4 // SEEK_HOLE

	fallocKeepSize  = 0x1 // FALLOC_FL_KEEP_SIZE
	fallocPunchHole = 0x2 // FALLOC_FL_PUNCH_HOLE
)

// dataRegions returns the [start, end) spans at or after from that may hold
// data, skipping holes and (on ext4, xfs and tmpfs) preallocated extents never
// written. Recovery scans only these, so the unwritten tail of a 1 GiB
// segment costs nothing. Without SEEK_DATA support the whole rest is one span.
func (m *mappedFile) dataRegions(from int64) [][2]int64 {
	return DataRegions(m.file, from, m.size())
}

// DataRegions returns the [start, end) spans of f between from and size that
// may hold data, skipping holes. Without SEEK_DATA support the whole range is
// one span. It leaves the file offset at 0.
func DataRegions(f *os.File, from, size int64) [][2]int64 {
	var out [][2]int64
	for from < size {
		start, err := f.Seek(from, seekData)
		if errors.Is(err, unix.ENXIO) {
			break // nothing but holes from here on
		}
		if err != nil {
			return [][2]int64{{from, size}}
		}
		end, err := f.Seek(start, seekHole)
		if err != nil {
			return [][2]int64{{from, size}}
		}
		if start >= size {
			break
		}
		out = append(out, [2]int64{start, min(end, size)})
		from = end
	}
	f.Seek(0, io.SeekStart)
	return out
}

// PunchHole deallocates [off, off+n) of f, which then reads as zeros, keeping
// the file size. It reports false where the file system cannot punch holes;
// the caller then writes zeros.
func PunchHole(f *os.File, off, n int64) bool {
	for {
		err := unix.Fallocate(int(f.Fd()), fallocPunchHole|fallocKeepSize, off, n)
		if err == unix.EINTR {
			continue
		}
		return err == nil
	}
}
