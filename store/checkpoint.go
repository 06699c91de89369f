package store

import "sync"

// The checkpoint file holds two slots written alternately, so a torn write
// can only damage the slot being replaced; Open uses the valid slot with the
// higher sequence number. See doc.go for the layout.
const (
	checkpointMagic    uint64 = 0x524D51434B505431 // "RMQCKPT1"
	checkpointSlotSize        = SlotFileSlotSize
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
	sf   *SlotFile
	last checkpointData
}

// openCheckpoint opens (creating) the file and returns the newest valid slot;
// ok is false when neither slot is valid.
func openCheckpoint(fs FS, path string) (*checkpointFile, checkpointData, bool, error) {
	sf, v, seq, ok, err := OpenSlotFile(fs, path, checkpointMagic, 3)
	if err != nil {
		return nil, checkpointData{}, false, err
	}
	var d checkpointData
	if ok {
		d = checkpointData{seq: seq, physicOffset: v[0], logicsOffset: v[1], writtenAtMs: v[2]}
		if d.physicOffset < 0 || d.logicsOffset < 0 {
			d, ok = checkpointData{}, false
		}
	}
	return &checkpointFile{sf: sf, last: d}, d, ok, nil
}

// write stores a new checkpoint in the slot not holding the latest one and
// fsyncs it. Unchanged offsets are not rewritten.
func (c *checkpointFile) write(physic, logics, nowMs int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.seq != 0 && c.last.physicOffset == physic && c.last.logicsOffset == logics {
		return nil
	}
	if err := c.sf.Write([]int64{physic, logics, nowMs}); err != nil {
		return err
	}
	c.last = checkpointData{seq: c.sf.Seq(), physicOffset: physic, logicsOffset: logics, writtenAtMs: nowMs}
	return nil
}

func (c *checkpointFile) close() error { return c.sf.Close() }
