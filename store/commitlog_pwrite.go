package store

import (
	"encoding/binary"
	"fmt"
)

// Appending through the file descriptor (SYNC_FLUSH).
//
// Under SYNC_FLUSH every few dozen records are synced on their own. Had they
// been copied into the shared mapping, each sync would have to write-protect
// the dirty pages again (page-table walks, TLB shoot-downs on every core the
// broker runs on) and the next record copied into each of those pages would
// fault to make it writable again, which together cost more broker CPU than
// the records themselves. With direct set the writer encodes a record into
// wbuf and pwrites it instead: the page cache is the same one the mapping
// shows, so readers (dispatch, pulls, lookups) keep reading the mapping below
// maxOffset and see every byte pwrite stored before maxOffset moved, and a
// killed process loses nothing pwrite returned for, as with the mapping.
// The pages are never dirty in any page table, so a sync is pure writeback.
//
//	put:   encode ──> wbuf ──pwrite──> page cache <──mmap (read)── dispatch, pulls
//	flush: msync(range) / fdatasync ──> disk
//
// The warmer, release behind the writer and recovery are the same in both
// modes: the warmer already zero-fills with pwrite, release drops the readers'
// page-table entries, and recovery repairs through the mapping before any
// writer starts (and syncs what it repaired).

// wbufKeep bounds the scratch buffer kept between appends; a bigger batch
// gets a buffer of its own once.
const wbufKeep = 1 << 20

// scratch returns a buffer of n bytes for the record(s) being appended;
// Store.putMu must be held.
func (c *commitLog) scratch(n int) []byte {
	if n > wbufKeep {
		return make([]byte, n)
	}
	if cap(c.wbuf) < n {
		c.wbuf = make([]byte, max(n, 64<<10))
	}
	return c.wbuf[:n]
}

// pwriteAt stores b at f's byte rel through the file descriptor. A short
// write leaves bytes past the published end, which the next append
// overwrites (recovery clears them after a crash), so nothing is published
// then.
func pwriteAt(f *mappedFile, b []byte, rel int64) error {
	if _, err := f.fs.WriteAt(f.file, b, rel); err != nil {
		return fmt.Errorf("store: write commitlog %s at %d: %w", f.path, rel, DiskErr(err))
	}
	return nil
}

// pwriteBlank writes the BLANK record that fills f from rel to its end.
func pwriteBlank(f *mappedFile, rel, rest int64) error {
	var b [blankRecordLength]byte
	binary.BigEndian.PutUint32(b[:], uint32(rest))
	binary.BigEndian.PutUint32(b[4:], BlankMagicCode)
	return pwriteAt(f, b[:], rel)
}

// directAppend reports whether appends go through the file descriptor:
// under SYNC_FLUSH. Under ASYNC_FLUSH a flush every FlushInterval covers
// megabytes, so write-protecting them costs little per record, and copying
// into the mapping is cheaper than a pwrite each (workload 1 of
// bench/compare: 85-89k msg per broker CPU-second through the mapping,
// 81-83k with pwrite).
func (s *Store) directAppend() bool {
	return s.opts.FlushDiskType == SyncFlush
}
