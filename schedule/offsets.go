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

// offsetWriter writes delayOffset.json. A level's batch commit (deliverDue)
// happens every deliverBatch deliveries, so it must be cheap: it only has
// to outlive the process (a kill -9 re-delivers at most the batch in
// flight), and the page cache keeps a completed write, so the file is
// rewritten in place with one pwrite, unsynced. Every write has the file's
// length (the JSON padded with spaces, which JSON readers skip, Java's
// fastjson included) and fits in one page at offset 0, so a process that
// dies leaves either the old or the new text, never a mix. The first write
// of a process, and one whose text outgrew the file, replaces the file
// whole with store.WriteFileAtomic (synced, keeping the previous file as
// .bak); sync makes a write durable (the periodic persist, a correction,
// Stop). A text torn by a power loss falls back to .bak, which holds
// lower offsets: duplicates, never loss. On a full disk a write fails with
// store.ErrDiskFull (the in-place page has its block, so only a whole-file
// rewrite can meet it) and the offsets stay dirty for the next persist. All
// methods run under the service's pmu.
type offsetWriter struct {
	fs       store.FS // Options.FS, never nil
	path     string
	f        *os.File // the file written in place; nil before the first write
	size     int      // its length, which every in-place write keeps
	unsynced bool     // an in-place write has not been synced yet
}

// inPlaceMax is the longest text written in place: one page.
const inPlaceMax = 4096

// write stores offsets; sync false leaves the text in the page cache.
func (w *offsetWriter) write(offsets map[int]int64, sync bool) error {
	b := encodeOffsets(offsets)
	if w.f != nil && len(b) <= w.size {
		b = append(b, bytes.Repeat([]byte{' '}, w.size-len(b))...)
		if _, err := w.fs.WriteAt(w.f, b, 0); err != nil {
			w.close()
			return fmt.Errorf("schedule: persist %s: %w", w.path, store.DiskErr(err))
		}
		w.unsynced = true
		if sync {
			return w.sync()
		}
		return nil
	}
	w.close()
	// Room for the offsets to grow by a few digits before the next
	// rewrite of the whole file.
	size := (len(b) + 64 + 63) &^ 63
	b = append(b, bytes.Repeat([]byte{' '}, size-len(b))...)
	if err := store.WriteFileAtomic(w.fs, w.path, b); err != nil {
		return fmt.Errorf("schedule: persist %s: %w", w.path, err)
	}
	if size > inPlaceMax {
		return nil // too long to be written in place: always whole
	}
	f, err := w.fs.OpenFile(w.path, os.O_WRONLY, 0)
	if err != nil {
		return nil // written; the next write replaces the file again
	}
	w.f, w.size = f, size
	return nil
}

// sync makes the in-place writes durable.
func (w *offsetWriter) sync() error {
	if w.f == nil || !w.unsynced {
		return nil
	}
	if err := w.fs.Sync(w.f); err != nil {
		w.close()
		return fmt.Errorf("schedule: sync %s: %w", w.path, store.DiskErr(err))
	}
	w.unsynced = false
	return nil
}

// close forgets the open file; the next write replaces it whole.
func (w *offsetWriter) close() {
	if w.f != nil {
		_ = w.f.Close()
		w.f, w.unsynced = nil, false
	}
}
