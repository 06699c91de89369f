//go:build !linux

package store

import "os"

// dataRegions treats the rest of the file as one span where SEEK_DATA is not
// used.
func (m *mappedFile) dataRegions(from int64) [][2]int64 {
	return DataRegions(m.file, from, m.size())
}

// DataRegions treats [from, size) as one span where SEEK_DATA is not used.
func DataRegions(_ *os.File, from, size int64) [][2]int64 {
	if from >= size {
		return nil
	}
	return [][2]int64{{from, size}}
}

// PunchHole is not supported here: the caller writes zeros.
func PunchHole(*os.File, int64, int64) bool { return false }
