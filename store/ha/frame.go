package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame sizes of the classic protocol (5.x DefaultHAConnection
// TRANSFER_HEADER_SIZE, DefaultHAClient REPORT_HEADER_SIZE).
const (
	headerSize = 12 // int64 start offset, int32 body size
	reportSize = 8  // int64 slave commitlog end
	// MaxBodySize bounds a transfer body: the stock slave's read buffer
	// (HAClient READ_MAX_BUFFER_SIZE), which haTransferBatchSize must fit.
	MaxBodySize = 4 << 20
)

// errFrame is a transfer header a slave refuses: a negative size or one
// above MaxBodySize. The connection is closed, as for any broken frame.
var errFrame = errors.New("ha: bad transfer header")

// putHeader writes a transfer header into b[:headerSize].
func putHeader(b []byte, off int64, size int32) {
	binary.BigEndian.PutUint64(b, uint64(off))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
}

// frameReader parses the master→slave stream. Its body buffer grows to
// the largest body read, at most MaxBodySize.
type frameReader struct {
	r    io.Reader
	hdr  [headerSize]byte
	body []byte
}

// next reads one frame: its start offset and body (empty for a
// heartbeat), valid until the next call. A header whose size is negative
// or above MaxBodySize is an errFrame; a stream that ends inside a frame
// is an io.ErrUnexpectedEOF.
func (f *frameReader) next() (int64, []byte, error) {
	off, size, err := f.header()
	if err != nil {
		return off, nil, err
	}
	b, err := f.readBody(size)
	return off, b, err
}

// header reads and checks a frame's header: its start offset and body
// size (the slave checks the offset before it waits for the body, as
// stock does).
func (f *frameReader) header() (int64, int32, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return 0, 0, err
	}
	off := int64(binary.BigEndian.Uint64(f.hdr[:]))
	size := int32(binary.BigEndian.Uint32(f.hdr[8:]))
	if size < 0 || size > MaxBodySize {
		return off, 0, fmt.Errorf("%w: body size %d at offset %d (limit %d)", errFrame, size, off, MaxBodySize)
	}
	return off, size, nil
}

// readBody reads the size bytes of the body whose header header returned.
func (f *frameReader) readBody(size int32) ([]byte, error) {
	if int(size) > cap(f.body) {
		f.body = make([]byte, size)
	}
	b := f.body[:size]
	if _, err := io.ReadFull(f.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// ackParser parses the slave→master stream of 8-byte offsets as the stock
// master does: of what one read returned, only the last complete value
// counts (HAConnection.ReadSocketService: pos - pos%8). Bytes of a value
// not complete yet are kept for the next read.
type ackParser struct {
	pend [reportSize]byte
	n    int
}

// feed consumes p, the bytes of one read, and returns the last value it
// completed, if any.
func (a *ackParser) feed(p []byte) (int64, bool) {
	total := a.n + len(p)
	if total < reportSize {
		a.n += copy(a.pend[a.n:], p)
		return 0, false
	}
	k := total - total%reportSize // end of the last complete value
	var v int64
	if k-reportSize >= a.n {
		v = int64(binary.BigEndian.Uint64(p[k-reportSize-a.n:]))
	} else {
		// Only the first value (k == 8) can start in the kept bytes.
		var b [reportSize]byte
		copy(b[:], a.pend[:a.n])
		copy(b[a.n:], p)
		v = int64(binary.BigEndian.Uint64(b[:]))
	}
	a.n = copy(a.pend[:], p[k-a.n:])
	return v, true
}
