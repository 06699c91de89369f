package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/store"
)

// delayOffset.json holds the next consume-queue offset to deliver, per level:
//
//	{"offsetTable":{"1":23,"2":0}}
//
// The Java broker writes the keys bare ({1:23}, fastjson's Map<Integer,Long>,
// see internal/fastjson); both forms are read, and the quoted form, which
// fastjson reads too, is written.
type offsetFile struct {
	OffsetTable map[int]int64 `json:"offsetTable"`
}

func decodeOffsets(b []byte) (map[int]int64, error) {
	var f offsetFile
	if err := fastjson.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.OffsetTable == nil {
		f.OffsetTable = map[int]int64{}
	}
	return f.OffsetTable, nil
}

func encodeOffsets(offsets map[int]int64) []byte {
	b := append(make([]byte, 0, 32+24*len(offsets)), `{"offsetTable":{`...)
	for i, l := range slices.Sorted(maps.Keys(offsets)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = fastjson.AppendIntKey(b, int64(l), true)
		b = append(b, ':')
		b = strconv.AppendInt(b, offsets[l], 10)
	}
	return append(b, "}}"...)
}

// loadOffsets reads path, falling back to path.bak; a missing file is empty.
func loadOffsets(path string) (map[int]int64, error) {
	for _, p := range []string{path, path + ".bak"} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("schedule: read %s: %w", p, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		m, err := decodeOffsets(b)
		if err != nil {
			continue // a torn file: try the backup
		}
		return m, nil
	}
	return map[int]int64{}, nil
}

func saveOffsets(path string, offsets map[int]int64) error {
	if err := store.WriteFileAtomic(path, encodeOffsets(offsets)); err != nil {
		return fmt.Errorf("schedule: persist %s: %w", path, err)
	}
	return nil
}
