package store

import (
	"bytes"
	"encoding/binary"

	"github.com/rmqio/rmq/message"
)

// recKind classifies the bytes at a position of a commitlog file.
type recKind int

const (
	recBad   recKind = iota // not a record we wrote
	recValid                // a message record
	recBlank                // the end-of-file BLANK record
)

// checkRecord verifies the record at data[p:] of a file whose first byte has
// global offset base: framing (message.ParseLayout), PHYSICALOFFSET equal to its own
// position, and body CRC. A BLANK is valid when its TOTALSIZE covers exactly
// the rest of the file (data must then extend to the file end). Requiring the
// record's own offset makes a stray magic number in garbage practically never
// pass, which is what lets resync skip damaged regions.
func checkRecord(data []byte, p int, base int64) (message.Layout, recKind) {
	rest := data[p:]
	if len(rest) < 8 {
		return message.Layout{}, recBad
	}
	be := binary.BigEndian
	if be.Uint32(rest[message.PosMagic:]) == BlankMagicCode {
		if int(int32(be.Uint32(rest))) == len(rest) {
			return message.Layout{Total: len(rest)}, recBlank
		}
		return message.Layout{}, recBad
	}
	l, err := message.ParseLayout(rest)
	if err != nil {
		return l, recBad
	}
	if int64(be.Uint64(rest[message.PosPhysicalOffset:])) != base+int64(p) {
		return l, recBad
	}
	if message.BodyCRC(l.Body(rest)) != int32(be.Uint32(rest[message.PosBodyCRC:])) {
		return l, recBad
	}
	return l, recValid
}

var (
	magicV1Bytes    = []byte{0xDA, 0xA3, 0x20, 0xA7}
	magicV2Bytes    = []byte{0xDA, 0xA3, 0x20, 0xAB}
	magicBlankBytes = []byte{0xCB, 0xD4, 0x31, 0x94}
)

// resync returns the first position q in [from, limit) at which checkRecord
// finds a record or BLANK in data, or -1. Candidates are the places where a
// magic code sits 4 bytes after q.
func resync(data []byte, from, limit int, base int64) int {
	pats := [...][]byte{magicV1Bytes, magicV2Bytes, magicBlankBytes}
	windowEnd := min(len(data), limit+8)
	var next [len(pats)]int // next candidate per pattern; -1 when exhausted, -2 unknown
	for i := range next {
		next[i] = -2
	}
	for q := from; q < limit && q+8 <= len(data); {
		best := -1
		for i, pat := range pats {
			if next[i] == -2 || next[i] != -1 && next[i] < q {
				next[i] = -1
				if j := bytes.Index(data[q+4:windowEnd], pat); j >= 0 {
					next[i] = q + j
				}
			}
			if next[i] >= 0 && (best < 0 || next[i] < best) {
				best = next[i]
			}
		}
		if best < 0 || best >= limit {
			return -1
		}
		if _, k := checkRecord(data, best, base); k != recBad {
			return best
		}
		q = best + 1
	}
	return -1
}

// resyncFile is resync over the data regions of f from byte from on, so that
// holes and never-written preallocated space are not read.
func resyncFile(f *mappedFile, from int) int {
	for _, r := range f.dataRegions(int64(from)) {
		if q := resync(f.data, max(from, int(r[0])), int(r[1]), f.start); q >= 0 {
			return q
		}
	}
	return -1
}

// nonZeroBytes counts the non-zero bytes of f in [from, to), reading only its
// data regions.
func nonZeroBytes(f *mappedFile, from, to int64) int64 {
	var n int64
	for _, r := range f.dataRegions(from) {
		a, b := max(r[0], from), min(r[1], to)
		if a < b {
			n += (b - a) - zeroCount(f.data[a:b])
		}
	}
	return n
}

// zeroData clears f's bytes in [from, to), touching only its data regions.
func zeroData(f *mappedFile, from, to int64) {
	for _, r := range f.dataRegions(from) {
		if a, b := max(r[0], from), min(r[1], to); a < b {
			f.zero(a, b)
		}
	}
}
