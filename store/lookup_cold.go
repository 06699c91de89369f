package store

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/rmqio/rmq/message"
)

// Cold lookups: a record looked up by its commitlog offset (timer delivery,
// send-back, transaction checks, queries) is usually far behind the write
// position, in pages the release pass has unmapped. Reading it through the
// mapping would map those pages back into the broker's resident set until the
// next pass; a timer flood that reads 100 000 originals between two passes
// grew it by ~60 MiB. Records outside the window kept mapped are therefore
// copied with pread: the page cache serves them either way.

// coldHeaderRead is the first read of a cold record: most records fit whole.
const coldHeaderRead = 2048

// coldBufs holds first-read buffers; the record returned is an exact copy.
var coldBufs = sync.Pool{New: func() any { return new([coldHeaderRead]byte) }}

// lookCold copies the record at off with pread when off is outside the
// mapped window. ok is false when the caller should read through the mapping.
func (c *commitLog) lookCold(off int64) (out []byte, ok bool, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return nil, true, ErrClosed
	}
	max := c.maxOffset.Load()
	if off >= max-min(int64(releaseKeep), c.fileSize/4) {
		return nil, false, nil
	}
	f := c.fileAt(off)
	if f == nil {
		return nil, true, fmt.Errorf("%w: commitlog offset %d outside [%d, %d)", ErrNotFound, off, c.minLocked(), max)
	}
	end := min(max, f.end()) // published bytes of this file
	first := coldBufs.Get().(*[coldHeaderRead]byte)
	defer coldBufs.Put(first)
	buf := first[:min(int64(coldHeaderRead), end-off)]
	if _, err := f.file.ReadAt(buf, off-f.start); err != nil {
		return nil, true, fmt.Errorf("commitlog offset %d: read: %w", off, err)
	}
	if len(buf) >= 8 && binary.BigEndian.Uint32(buf[message.PosMagic:]) == BlankMagicCode {
		return nil, true, fmt.Errorf("%w: commitlog offset %d is end-of-file padding", ErrNotFound, off)
	}
	if len(buf) < 8 {
		return nil, true, fmt.Errorf("%w: commitlog offset %d: record header truncated", ErrCorrupt, off)
	}
	total := int64(int32(binary.BigEndian.Uint32(buf[message.PosTotalSize:])))
	if total > int64(len(buf)) && total <= end-off {
		buf = make([]byte, total)
		if _, err := f.file.ReadAt(buf, off-f.start); err != nil {
			return nil, true, fmt.Errorf("commitlog offset %d: read: %w", off, err)
		}
	}
	l, err := message.ParseLayout(buf)
	if err != nil {
		return nil, true, fmt.Errorf("%w: commitlog offset %d: %w", ErrCorrupt, off, err)
	}
	if &buf[0] == &first[0] {
		buf = append([]byte(nil), buf[:l.Total]...) // out of the pooled buffer
	}
	return buf[:l.Total:l.Total], true, nil
}
