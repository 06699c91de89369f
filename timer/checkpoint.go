package timer

import (
	"fmt"

	"github.com/rmqio/rmq/store"
)

// The checkpoint file holds two slots written alternately, so a torn write can
// only damage the slot being replaced; the valid slot with the higher sequence
// wins. Layout in doc.go.
const (
	checkpointMagic    uint64 = 0x524D51544D434B31 // "RMQTMCK1"
	checkpointSlotSize        = store.SlotFileSlotSize
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
	sf   *store.SlotFile
	last checkpoint
}

func openCheckpoint(fs store.FS, path string) (*checkpointFile, checkpoint, bool, error) {
	sf, v, seq, ok, err := store.OpenSlotFile(fs, path, checkpointMagic, 9)
	if err != nil {
		return nil, checkpoint{}, false, err
	}
	var c checkpoint
	if ok {
		c = checkpoint{
			seq: seq, readTimeMs: v[0], cursorTarget: v[1], cursorPos: v[2], scannedPos: v[3],
			flushPos: v[4], queueOffset: v[5], precisionMs: v[6], wheelSlots: v[7], writtenAtMs: v[8],
		}
		if c.flushPos < 0 || c.queueOffset < 0 || c.precisionMs <= 0 || c.wheelSlots <= 0 {
			c, ok = checkpoint{}, false
		}
	}
	return &checkpointFile{sf: sf, last: c}, c, ok, nil
}

// write stores c (with the next sequence) in the slot not holding the latest
// checkpoint and syncs it.
func (cf *checkpointFile) write(c checkpoint) error {
	if err := cf.sf.Write([]int64{c.readTimeMs, c.cursorTarget, c.cursorPos, c.scannedPos, c.flushPos, c.queueOffset,
		c.precisionMs, c.wheelSlots, c.writtenAtMs}); err != nil {
		return fmt.Errorf("timer: checkpoint: %w", err)
	}
	c.seq = cf.sf.Seq()
	cf.last = c
	return nil
}

func (cf *checkpointFile) close() error { return cf.sf.Close() }
