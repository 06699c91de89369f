package store

import (
	"errors"
	"io"
	"syscall"
)

const (
	seekData = 3 // SEEK_DATA
	seekHole = 4 // SEEK_HOLE
)

// dataRegions returns the [start, end) spans at or after from that may hold
// data, skipping holes and (on ext4, xfs and tmpfs) preallocated extents never
// written. Recovery scans only these, so the unwritten tail of a 1 GiB
// segment costs nothing. Without SEEK_DATA support the whole rest is one span.
func (m *mappedFile) dataRegions(from int64) [][2]int64 {
	size := m.size()
	var out [][2]int64
	for from < size {
		start, err := m.file.Seek(from, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // nothing but holes from here on
		}
		if err != nil {
			return [][2]int64{{from, size}}
		}
		end, err := m.file.Seek(start, seekHole)
		if err != nil {
			return [][2]int64{{from, size}}
		}
		out = append(out, [2]int64{start, min(end, size)})
		from = end
	}
	m.file.Seek(0, io.SeekStart)
	return out
}
