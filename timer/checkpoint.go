package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The checkpoint file holds two slots written alternately, so a torn write can
// only damage the slot being replaced; the valid slot with the higher sequence
// wins. Layout in doc.go.
const (
	checkpointMagic    uint64 = 0x524D51544D434B31 // "RMQTMCK1"
	checkpointSlotSize        = 512
	checkpointBodySize        = 88
	checkpointFileSize        = 2 * checkpointSlotSize
)

// checkpoint is the durable progress of the timer store. Every field is
// covered by data made durable before the checkpoint was written:
// TimerLog units below flushPos and the wheel slots linking them; deliveries of
// every slot before readTimeMs and, inside slot readTimeMs, of every unit at or
// below scannedPos whose (target, pos) is at or below (cursorTarget, cursorPos).
type checkpoint struct {
	seq          uint64
	readTimeMs   int64
	cursorTarget int64
	cursorPos    int64
	scannedPos   int64
	flushPos     int64 // TimerLog end covered by the wheel file
	queueOffset  int64 // next timer consume-queue offset to read
	precisionMs  int64
	wheelSlots   int64
	writtenAtMs  int64
}

type checkpointFile struct {
	f    *os.File
	last checkpoint
}

func openCheckpoint(path string) (*checkpointFile, checkpoint, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, checkpoint{}, false, err
	}
	buf := make([]byte, checkpointFileSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, checkpoint{}, false, err
	}
	var best checkpoint
	ok := false
	for i := 0; i < 2; i++ {
		off := i * checkpointSlotSize
		if off+checkpointBodySize+4 > n {
			continue
		}
		c, valid := decodeCheckpoint(buf[off : off+checkpointBodySize+4])
		if valid && (!ok || c.seq > best.seq) {
			best, ok = c, true
		}
	}
	return &checkpointFile{f: f, last: best}, best, ok, nil
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	be := binary.BigEndian
	if be.Uint64(b) != checkpointMagic || crc32.ChecksumIEEE(b[:checkpointBodySize]) != be.Uint32(b[checkpointBodySize:]) {
		return checkpoint{}, false
	}
	i := func(off int) int64 { return int64(be.Uint64(b[off:])) }
	c := checkpoint{
		seq: be.Uint64(b[8:]), readTimeMs: i(16), cursorTarget: i(24), cursorPos: i(32), scannedPos: i(40),
		flushPos: i(48), queueOffset: i(56), precisionMs: i(64), wheelSlots: i(72), writtenAtMs: i(80),
	}
	if c.flushPos < 0 || c.queueOffset < 0 || c.precisionMs <= 0 || c.wheelSlots <= 0 {
		return checkpoint{}, false
	}
	return c, true
}

// write stores c (with the next sequence) in the slot not holding the latest
// checkpoint and syncs it.
func (cf *checkpointFile) write(c checkpoint) error {
	c.seq = cf.last.seq + 1
	var b [checkpointBodySize + 4]byte
	be := binary.BigEndian
	be.PutUint64(b[0:], checkpointMagic)
	be.PutUint64(b[8:], c.seq)
	for k, v := range [...]int64{c.readTimeMs, c.cursorTarget, c.cursorPos, c.scannedPos, c.flushPos, c.queueOffset,
		c.precisionMs, c.wheelSlots, c.writtenAtMs} {
		be.PutUint64(b[16+8*k:], uint64(v))
	}
	be.PutUint32(b[checkpointBodySize:], crc32.ChecksumIEEE(b[:checkpointBodySize]))
	if _, err := cf.f.WriteAt(b[:], int64(c.seq%2)*checkpointSlotSize); err != nil {
		return fmt.Errorf("timer: write checkpoint: %w", err)
	}
	if err := cf.f.Sync(); err != nil {
		return fmt.Errorf("timer: sync checkpoint: %w", err)
	}
	cf.last = c
	return nil
}

func (cf *checkpointFile) close() error { return cf.f.Close() }
