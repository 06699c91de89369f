package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"

	jsoniter "github.com/json-iterator/go"

	"rmq/store"
)

// delayOffset.json holds the next consume-queue offset to deliver, per level:
//
//	{"offsetTable":{"1":23,"2":0}}
//
// The Java broker writes the keys bare ({1:23}); both forms are read.
type offsetFile struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
}

var bareKey = regexp.MustCompile(`([{,]\s*)(-?\d+)\s*:`)

func decodeOffsets(b []byte) (map[int]int64, error) {
	b = bareKey.ReplaceAll(b, []byte(`$1"$2":`))
	var f offsetFile
	if err := jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(f.OffsetTable))
	for k, v := range f.OffsetTable {
		level, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("level key %q: %w", k, err)
		}
		out[level] = v
	}
	return out, nil
}

func encodeOffsets(offsets map[int]int64) []byte {
	levels := make([]int, 0, len(offsets))
	for l := range offsets {
		levels = append(levels, l)
	}
	sort.Ints(levels)
	var b bytes.Buffer
	b.WriteString(`{"offsetTable":{`)
	for i, l := range levels {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, l, offsets[l])
	}
	b.WriteString("}}")
	return b.Bytes()
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
