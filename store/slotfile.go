package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// SlotFile is a small durable record of int64 fields (the store checkpoint,
// the timer checkpoint). It holds two slots written alternately, so a torn
// write can only damage the slot being replaced; the valid slot with the
// higher sequence wins. Each slot:
//
//	+--------------+--------------+-------------------------+---------------+
//	| magic uint64 | seq uint64   | fields int64 × n        | CRC-32 IEEE   |
//	|              |              |                         | of the left   |
//	+--------------+--------------+-------------------------+---------------+
//	0              8              16                        16+8n
type SlotFile struct {
	fs     FS
	f      *os.File
	magic  uint64
	fields int
	seq    uint64
}

// SlotFileSlotSize is the size of one slot; the file holds two.
const SlotFileSlotSize = 512

// OpenSlotFile opens (creating) path and returns the fields of the newest
// valid slot, with its sequence; ok is false when neither slot is valid.
// Its writes and syncs go through fs (nil: the real file system).
func OpenSlotFile(fs FS, path string, magic uint64, fields int) (sf *SlotFile, vals []int64, seq uint64, ok bool, err error) {
	if fields <= 0 || 16+8*fields+4 > SlotFileSlotSize {
		return nil, nil, 0, false, fmt.Errorf("store: slot file %s: %d fields do not fit a slot", path, fields)
	}
	fs = OrOS(fs)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, 0, false, DiskErr(err)
	}
	buf := make([]byte, 2*SlotFileSlotSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, nil, 0, false, err
	}
	sf = &SlotFile{fs: fs, f: f, magic: magic, fields: fields}
	body := 16 + 8*fields
	be := binary.BigEndian
	for slot := 0; slot < 2; slot++ {
		b := buf[slot*SlotFileSlotSize:]
		if slot*SlotFileSlotSize+body+4 > n || be.Uint64(b) != magic ||
			crc32.ChecksumIEEE(b[:body]) != be.Uint32(b[body:]) {
			continue
		}
		if s := be.Uint64(b[8:]); !ok || s > seq {
			seq, ok = s, true
			vals = make([]int64, fields)
			for i := range vals {
				vals[i] = int64(be.Uint64(b[16+8*i:]))
			}
		}
	}
	sf.seq = seq
	return sf, vals, seq, ok, nil
}

// Seq is the sequence of the newest slot (0 before any write).
func (sf *SlotFile) Seq() uint64 { return sf.seq }

// Write stores vals with the next sequence in the slot not holding the newest
// record and fsyncs the file. It writes with pwrite, so a full disk is an
// error wrapping ErrDiskFull (the slot is then as before or torn, and the
// other still holds the newest record), never a fault.
func (sf *SlotFile) Write(vals []int64) error {
	if len(vals) != sf.fields {
		return fmt.Errorf("store: slot file write of %d fields, want %d", len(vals), sf.fields)
	}
	seq := sf.seq + 1
	body := 16 + 8*sf.fields
	b := make([]byte, body+4)
	be := binary.BigEndian
	be.PutUint64(b, sf.magic)
	be.PutUint64(b[8:], seq)
	for i, v := range vals {
		be.PutUint64(b[16+8*i:], uint64(v))
	}
	be.PutUint32(b[body:], crc32.ChecksumIEEE(b[:body]))
	if _, err := sf.fs.WriteAt(sf.f, b, int64(seq%2)*SlotFileSlotSize); err != nil {
		return fmt.Errorf("store: write %s: %w", sf.f.Name(), DiskErr(err))
	}
	if err := sf.fs.Sync(sf.f); err != nil {
		return fmt.Errorf("store: sync %s: %w", sf.f.Name(), DiskErr(err))
	}
	sf.seq = seq
	return nil
}

// Close closes the file.
func (sf *SlotFile) Close() error { return sf.f.Close() }
