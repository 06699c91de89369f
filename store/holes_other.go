//go:build unix && !linux

package store

// dataRegions treats the rest of the file as one span where SEEK_DATA is not
// used.
func (m *mappedFile) dataRegions(from int64) [][2]int64 {
	if from >= m.size() {
		return nil
	}
	return [][2]int64{{from, m.size()}}
}
