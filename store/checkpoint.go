package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
)

// The checkpoint file holds two slots written alternately, so a torn write
// can only damage the slot being replaced; Open uses the valid slot with the
// higher sequence number. See doc.go for the layout.
const (
	checkpointMagic    uint64 = 0x524D51434B505431 // "RMQCKPT1"
	checkpointSlotSize        = 512
	checkpointBodySize        = 40 // bytes covered by the CRC
	checkpointFileSize        = 2 * checkpointSlotSize
)

// checkpointData records durable progress.
type checkpointData struct {
	seq uint64
	// physicOffset: every commitlog byte below it was fsynced.
	physicOffset int64
	// logicsOffset: every record below it has its consume-queue unit fsynced.
	logicsOffset int64
	writtenAtMs  int64
}

type checkpointFile struct {
	mu   sync.Mutex
	f    *os.File
	last checkpointData
}

// openCheckpoint opens (creating) the file and returns the newest valid slot;
// ok is false when neither slot is valid.
func openCheckpoint(path string) (*checkpointFile, checkpointData, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, checkpointData{}, false, err
	}
	buf := make([]byte, checkpointFileSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, checkpointData{}, false, err
	}
	var best checkpointData
	ok := false
	for slot := 0; slot < 2; slot++ {
		off := slot * checkpointSlotSize
		if off+checkpointBodySize+4 > n {
			continue
		}
		d, valid := decodeCheckpointSlot(buf[off : off+checkpointBodySize+4])
		if valid && (!ok || d.seq > best.seq) {
			best, ok = d, true
		}
	}
	return &checkpointFile{f: f, last: best}, best, ok, nil
}

func decodeCheckpointSlot(b []byte) (checkpointData, bool) {
	be := binary.BigEndian
	if be.Uint64(b) != checkpointMagic {
		return checkpointData{}, false
	}
	if crc32.ChecksumIEEE(b[:checkpointBodySize]) != be.Uint32(b[checkpointBodySize:]) {
		return checkpointData{}, false
	}
	d := checkpointData{
		seq:          be.Uint64(b[8:]),
		physicOffset: int64(be.Uint64(b[16:])),
		logicsOffset: int64(be.Uint64(b[24:])),
		writtenAtMs:  int64(be.Uint64(b[32:])),
	}
	if d.physicOffset < 0 || d.logicsOffset < 0 {
		return checkpointData{}, false
	}
	return d, true
}

// write stores a new checkpoint in the slot not holding the latest one and
// fsyncs it. Unchanged offsets are not rewritten.
func (c *checkpointFile) write(physic, logics, nowMs int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.seq != 0 && c.last.physicOffset == physic && c.last.logicsOffset == logics {
		return nil
	}
	d := checkpointData{seq: c.last.seq + 1, physicOffset: physic, logicsOffset: logics, writtenAtMs: nowMs}
	var b [checkpointBodySize + 4]byte
	be := binary.BigEndian
	be.PutUint64(b[0:], checkpointMagic)
	be.PutUint64(b[8:], d.seq)
	be.PutUint64(b[16:], uint64(d.physicOffset))
	be.PutUint64(b[24:], uint64(d.logicsOffset))
	be.PutUint64(b[32:], uint64(d.writtenAtMs))
	be.PutUint32(b[checkpointBodySize:], crc32.ChecksumIEEE(b[:checkpointBodySize]))
	if _, err := c.f.WriteAt(b[:], int64(d.seq%2)*checkpointSlotSize); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("store: sync checkpoint: %w", err)
	}
	c.last = d
	return nil
}

func (c *checkpointFile) close() error { return c.f.Close() }
