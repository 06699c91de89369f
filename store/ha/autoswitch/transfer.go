package autoswitch

// The master's side of the transfer, as pure steps over its epoch table,
// so that the broker wiring only moves bytes: where a slave's stream
// starts (AutoSwitchHAConnection.java:661-697) and how each chunk is cut
// so that it never crosses an epoch boundary (:596-617).

// TransferStart is the commitlog offset the master sends from after a
// slave's first report (:661-678). A report of 0 is a slave with nothing:
// it gets the start of the last commitlog file when it asked for
// isSyncFromLastFile, otherwise the commitlog's min offset (the full
// history). Any other report is where the slave already is.
func TransferStart(report int64, syncFromLastFile bool, minOffset, maxOffset, fileSize int64) int64 {
	if report != 0 {
		return report
	}
	if !syncFromLastFile {
		return minOffset
	}
	if fileSize <= 0 {
		return max(maxOffset, 0)
	}
	return max(maxOffset-maxOffset%fileSize, 0)
}

// TransferCursor is one slave connection's position in the master's
// commitlog and epoch table (nextTransferFromWhere, currentTransferEpoch
// and currentTransferEpochEndOffset).
type TransferCursor struct {
	Next  int64 // the next offset to send
	Epoch int32 // the epoch the next header names
	// EpochEnd is where Epoch ends; -1 while Epoch is the table's last
	// (it has no end yet).
	EpochEnd int64
}

// NewTransferCursor places a cursor at offset, in the epoch that holds it
// (findEpochEntryByOffset, :687-694); ok is false when no epoch does (the
// master then only sends heartbeats and retries).
func NewTransferCursor(t *EpochFile, offset int64) (TransferCursor, bool) {
	e, ok := t.FindEpochByOffset(offset)
	if !ok {
		return TransferCursor{Next: offset, Epoch: -1}, false
	}
	c := TransferCursor{Next: offset}
	c.enter(t, e)
	return c, true
}

// enter is changeTransferEpochToNext (:192-199).
func (c *TransferCursor) enter(t *EpochFile, e EpochEntry) {
	c.Epoch, c.EpochEnd = e.Epoch, e.EndOffset
	if e.Epoch == t.LastEpoch() {
		c.EpochEnd = -1
	}
}

// Chunk cuts the next chunk from the available bytes at c.Next (already
// capped by haTransferBatchSize and flow control) and returns its size and
// the header to send with it, advancing the cursor. A chunk that would
// cross the end of the cursor's epoch is cut at that end and the cursor
// moves to the next epoch before the header is built, so, as stock, the
// chunk that closes an epoch is sent naming the next one (a slave appends
// that epoch entry one chunk early, and a new replica whose first chunk is
// that one never sees the closed epoch named: the Service's slave takes it
// from the handshake table), and an
// epoch that ends exactly at a chunk's end gives an empty chunk next. ok
// is false when the epoch table has no next epoch (:600-605); the cursor
// is then unchanged.
//
// An empty term (an entry the next one starts at, see EpochEntry) is
// stepped over: its epoch holds no byte, and a stock slave that recorded
// it from one chunk would refuse the next epoch at the same start
// (appendEntry), leaving the bytes after it under the wrong epoch. Stock
// has no such entry to step over (its append refuses it).
func (c *TransferCursor) Chunk(t *EpochFile, available int32, confirmOffset int64) (TransferHeader, bool) {
	size := available
	if c.EpochEnd != -1 && c.Next+int64(size) > c.EpochEnd {
		next, ok := t.NextEntry(c.Epoch)
		for ok && next.EndOffset == next.StartOffset && next.Epoch != t.LastEpoch() {
			next, ok = t.NextEntry(next.Epoch)
		}
		if !ok {
			return TransferHeader{}, false
		}
		size = int32(c.EpochEnd - c.Next)
		c.enter(t, next)
	}
	h, ok := c.header(t, size, confirmOffset)
	if !ok {
		return TransferHeader{}, false
	}
	c.Next += int64(size)
	return h, true
}

// Heartbeat is the empty chunk sent after haSendHeartbeatInterval of
// silence (:555-562): at the cursor, naming its epoch, or the first epoch
// before the cursor has one. ok is false for an empty table (stock would
// fail on it; a master always has an entry).
func (c *TransferCursor) Heartbeat(t *EpochFile, confirmOffset int64) (TransferHeader, bool) {
	return c.header(t, 0, confirmOffset)
}

// header is buildTransferHeaderBuffer (:519-553).
func (c *TransferCursor) header(t *EpochFile, size int32, confirmOffset int64) (TransferHeader, bool) {
	e, ok := t.Entry(c.Epoch)
	if !ok {
		if size > 0 {
			return TransferHeader{}, false
		}
		if e, ok = t.FirstEntry(); !ok {
			return TransferHeader{}, false
		}
	}
	return TransferHeader{BodySize: size, Offset: c.Next, Epoch: e.Epoch, EpochStartOffset: e.StartOffset, ConfirmOffset: confirmOffset}, true
}
