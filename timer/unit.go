package timer

import (
	"encoding/binary"
	"hash/crc32"
)

// TimerLog unit layout (see doc.go). All fields big-endian.
const (
	unitSize     = 52
	unitCRCSpan  = 44 // bytes covered by the unit CRC
	blankSize    = 16 // end-of-file filler: int32 remaining, int64 0, int32 blankMagic
	blankMagic   = 0xCBD43194
	magicDefault = 1
	magicRoll    = 2
)

// unit is one decoded TimerLog entry.
type unit struct {
	prevPos  int64 // TimerLog position of the previous unit of the same slot, -1 if none
	magic    int32
	writeMs  int64 // wheel write time when appended (a multiple of the precision)
	delayMs  int32 // target - writeMs
	offsetPy int64 // commitlog offset of the message
	sizePy   int32 // its record size
	topicKey int32 // Java hashCode of REAL_TOPIC (informational)
}

func (u *unit) target() int64 { return u.writeMs + int64(u.delayMs) }
func (u *unit) roll() bool    { return u.magic&magicRoll != 0 }

func (u *unit) encode(b []byte) {
	be := binary.BigEndian
	be.PutUint32(b[0:], unitSize)
	be.PutUint64(b[4:], uint64(u.prevPos))
	be.PutUint32(b[12:], uint32(u.magic))
	be.PutUint64(b[16:], uint64(u.writeMs))
	be.PutUint32(b[24:], uint32(u.delayMs))
	be.PutUint64(b[28:], uint64(u.offsetPy))
	be.PutUint32(b[36:], uint32(u.sizePy))
	be.PutUint32(b[40:], uint32(u.topicKey))
	be.PutUint32(b[44:], crc32.ChecksumIEEE(b[:unitCRCSpan]))
	be.PutUint32(b[48:], 0)
}

// decodeUnit parses b[:52]; ok is false for anything but an intact unit
// (zeros, a torn write, a filler, garbage).
func decodeUnit(b []byte) (u unit, ok bool) {
	if len(b) < unitSize {
		return unit{}, false
	}
	be := binary.BigEndian
	if be.Uint32(b[0:]) != unitSize || be.Uint32(b[44:]) != crc32.ChecksumIEEE(b[:unitCRCSpan]) || be.Uint32(b[48:]) != 0 {
		return unit{}, false
	}
	u = unit{
		prevPos:  int64(be.Uint64(b[4:])),
		magic:    int32(be.Uint32(b[12:])),
		writeMs:  int64(be.Uint64(b[16:])),
		delayMs:  int32(be.Uint32(b[24:])),
		offsetPy: int64(be.Uint64(b[28:])),
		sizePy:   int32(be.Uint32(b[36:])),
		topicKey: int32(be.Uint32(b[40:])),
	}
	if u.magic&magicDefault == 0 || u.magic&^(magicDefault|magicRoll) != 0 {
		return unit{}, false
	}
	return u, true
}

// isBlank reports whether b (the rest of a segment) starts with the filler.
func isBlank(b []byte) bool {
	if len(b) < blankSize {
		return false
	}
	be := binary.BigEndian
	return int(be.Uint32(b[0:])) == len(b) && be.Uint64(b[4:]) == 0 && be.Uint32(b[12:]) == blankMagic
}

func putBlank(b []byte) {
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(len(b)))
	be.PutUint64(b[4:], 0)
	be.PutUint32(b[12:], blankMagic)
}
