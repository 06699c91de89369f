package timer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"github.com/rmqio/rmq/store"
)

// Wheel slot layout (see doc.go): 32 bytes, big-endian.
const (
	slotSize    = 32
	slotCRCSpan = 28
)

// chunkSlots slots make one chunk of the in-memory ring (32 KiB, a multiple
// of the file system block, so a chunk can be punched out of the file).
const chunkSlots = 1024

var zeroChunk [chunkSlots * slotSize]byte

// slot is the chain of TimerLog units due in one precision interval.
type slot struct {
	first, last int64 // TimerLog positions of the oldest and newest unit
	num         int32 // units linked
}

// wheel is the ring of slots: slot time T (a multiple of the precision p) lives
// at index (T/p) mod n. The ring is held in memory sparsely, as chunks of
// chunkSlots slots allocated when a slot in them is first set and released
// when their last slot is cleared, so memory follows the slots in use, not the
// ring's span (1 209 600 slots would be 38.7 MB). Changed slots are written
// back by flush, which the checkpoint protocol calls only after the TimerLog
// units they point at are durable, so the file never runs ahead of the log; a
// chunk that became empty is punched out of the file, which therefore stays
// sparse and opens by reading only its data. A slot whose stored time is not T
// belongs to another lap and reads as empty.
//
// The file is written with pwrite (never through a mapping), so a full disk
// is an ENOSPC error, answered as store.ErrDiskFull: the flush fails and
// restores the slots it took, and the next flush writes them again. Its
// operations go through Options.FS (the store's FS seam, store/vfs.go).
type wheel struct {
	path      string
	fs        store.FS
	f         *os.File
	n         int64
	precision int64
	chunks    [][]byte // nil: every slot of the chunk is zero
	used      []int32  // non-zero slots per chunk
	dirty     []uint64 // bit i: slot i differs from the file
	dirtyList []int64
	allDirty  bool
}

var errWheelCorrupt = errors.New("timer: wheel slot corrupt")

func newWheel(fs store.FS, path string, f *os.File, n, precision int64) *wheel {
	nc := (n + chunkSlots - 1) / chunkSlots
	return &wheel{path: path, fs: fs, f: f, n: n, precision: precision,
		chunks: make([][]byte, nc), used: make([]int32, nc), dirty: make([]uint64, (n+63)/64)}
}

// openWheel opens (creating) the wheel file. fresh is true when the file had to
// be created or resized, or holds a slot that fails its CRC: its content is
// then zero (and will be written back whole, unless the file was just
// created, when it is already zero) and the caller rebuilds it from the
// TimerLog. Only the file's data regions are read: holes are empty chunks.
func openWheel(fs store.FS, path string, n, precision int64) (w *wheel, fresh bool, err error) {
	fs = store.OrOS(fs)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, store.DiskErr(err)
	}
	size := n * slotSize
	w = newWheel(fs, path, f, n, precision)
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	if info.Size() != size {
		if err := w.fs.Truncate(f, size); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("timer: truncate wheel: %w", store.DiskErr(err))
		}
		w.allDirty = info.Size() != 0
		return w, true, nil
	}
	buf := make([]byte, chunkSlots*slotSize)
	for _, r := range store.DataRegions(f, 0, size) {
		for c := r[0] / int64(len(buf)); c*int64(len(buf)) < r[1]; c++ {
			b := buf[:w.chunkLen(c)]
			if _, err := io.ReadFull(io.NewSectionReader(f, c*int64(len(buf)), int64(len(b))), b); err != nil {
				f.Close()
				return nil, false, err
			}
			if bytes.Equal(b, zeroChunk[:len(b)]) {
				continue
			}
			if err := w.loadChunk(c, b); err != nil {
				w.reset()
				return w, true, nil
			}
		}
	}
	return w, false, nil
}

// chunkLen is the byte length of chunk c (the last one may be short).
func (w *wheel) chunkLen(c int64) int {
	return int(min(chunkSlots, w.n-c*chunkSlots)) * slotSize
}

// loadChunk keeps a copy of chunk c read from the file after checking every
// non-zero slot's CRC.
func (w *wheel) loadChunk(c int64, b []byte) error {
	if w.chunks[c] != nil {
		return nil // regions can share a chunk
	}
	used := int32(0)
	for j := 0; j < len(b); j += slotSize {
		s := b[j : j+slotSize]
		if allZero(s) {
			continue
		}
		if binary.BigEndian.Uint32(s[slotCRCSpan:]) != crc32.ChecksumIEEE(s[:slotCRCSpan]) {
			return fmt.Errorf("%w: index %d", errWheelCorrupt, c*chunkSlots+int64(j/slotSize))
		}
		used++
	}
	w.chunks[c] = slices.Clone(b)
	w.used[c] = used
	return nil
}

func allZero(b []byte) bool {
	for len(b) > len(zeroChunk) {
		if !bytes.Equal(b[:len(zeroChunk)], zeroChunk[:]) {
			return false
		}
		b = b[len(zeroChunk):]
	}
	return bytes.Equal(b, zeroChunk[:len(b)])
}

func (w *wheel) index(t int64) int64 { return (t / w.precision) % w.n }

// slotBytes returns the 32 bytes of slot i, nil when its chunk is empty.
func (w *wheel) slotBytes(i int64) []byte {
	ch := w.chunks[i/chunkSlots]
	if ch == nil {
		return nil
	}
	j := (i % chunkSlots) * slotSize
	return ch[j : j+slotSize]
}

// get returns the slot of time t (a multiple of the precision); live is false
// when the slot holds another lap or nothing.
func (w *wheel) get(t int64) (s slot, live bool) {
	b := w.slotBytes(w.index(t))
	if b == nil || allZero(b) || int64(binary.BigEndian.Uint64(b)) != t/w.precision {
		return slot{first: -1, last: -1}, false
	}
	be := binary.BigEndian
	return slot{first: int64(be.Uint64(b[8:])), last: int64(be.Uint64(b[16:])), num: int32(be.Uint32(b[24:]))}, true
}

func (w *wheel) put(t int64, s slot) {
	i := w.index(t)
	c := i / chunkSlots
	if w.chunks[c] == nil {
		w.chunks[c] = make([]byte, w.chunkLen(c))
	}
	b := w.slotBytes(i)
	if allZero(b) {
		w.used[c]++
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(t/w.precision))
	be.PutUint64(b[8:], uint64(s.first))
	be.PutUint64(b[16:], uint64(s.last))
	be.PutUint32(b[24:], uint32(s.num))
	be.PutUint32(b[slotCRCSpan:], crc32.ChecksumIEEE(b[:slotCRCSpan]))
	w.markDirty(i)
}

func (w *wheel) markDirty(i int64) {
	if w.allDirty || w.dirty[i/64]&(1<<(i%64)) != 0 {
		return
	}
	w.dirty[i/64] |= 1 << (i % 64)
	w.dirtyList = append(w.dirtyList, i)
}

// clear empties the slot of time t, releasing its chunk with its last slot.
func (w *wheel) clear(t int64) {
	i := w.index(t)
	b := w.slotBytes(i)
	if b == nil || allZero(b) {
		return // already zero in memory, and so in the file unless dirty
	}
	clear(b)
	c := i / chunkSlots
	if w.used[c]--; w.used[c] == 0 {
		w.chunks[c] = nil
	}
	w.markDirty(i)
}

// reset empties every slot (for a rebuild).
func (w *wheel) reset() {
	clear(w.chunks)
	clear(w.used)
	clear(w.dirty)
	w.dirtyList = w.dirtyList[:0]
	w.allDirty = true
}

// forEachLive calls fn with the time of every non-empty slot, in index
// order. fn may put or clear the slot it is given. Every slot in memory has a
// valid CRC (loadChunk checked the file's, put writes its own).
func (w *wheel) forEachLive(fn func(slotTime int64)) {
	for c := range w.chunks {
		for j := int64(0); ; j++ {
			ch := w.chunks[c]
			if ch == nil || j*slotSize >= int64(len(ch)) {
				break
			}
			b := ch[j*slotSize : (j+1)*slotSize]
			if u := int64(binary.BigEndian.Uint64(b)); u != 0 {
				fn(u * w.precision)
			}
		}
	}
}

// wheelWrite is a copy of the changed slots taken under the store lock, written
// to the file without it.
type wheelWrite struct {
	all     bool
	chunks  map[int64][]byte // with all: copies of the non-empty chunks
	idx     []int64          // changed slots (sorted)
	bytes   []byte           // their content, slotSize each
	release []int64          // chunks that became empty: punched out
}

func (w *wheel) snapshot() wheelWrite {
	if w.allDirty {
		w.allDirty = false
		clear(w.dirty)
		w.dirtyList = w.dirtyList[:0]
		ww := wheelWrite{all: true, chunks: make(map[int64][]byte)}
		for c, ch := range w.chunks {
			if ch != nil {
				ww.chunks[int64(c)] = slices.Clone(ch)
			}
		}
		return ww
	}
	slices.Sort(w.dirtyList)
	ww := wheelWrite{idx: make([]int64, 0, len(w.dirtyList)), bytes: make([]byte, 0, len(w.dirtyList)*slotSize)}
	for _, i := range w.dirtyList {
		w.dirty[i/64] &^= 1 << (i % 64)
		c := i / chunkSlots
		if w.chunks[c] == nil {
			if n := len(ww.release); n == 0 || ww.release[n-1] != c {
				ww.release = append(ww.release, c)
			}
			continue
		}
		ww.idx = append(ww.idx, i)
		ww.bytes = append(ww.bytes, w.slotBytes(i)...)
	}
	w.dirtyList = w.dirtyList[:0]
	return ww
}

// restore marks the slots of a failed write dirty again.
func (w *wheel) restore(ww wheelWrite) {
	if ww.all {
		w.allDirty = true
		return
	}
	for _, i := range ww.idx {
		w.markDirty(i)
	}
	for _, c := range ww.release {
		// The chunk may have been set again since: its slots are rewritten
		// (or, still empty, released) by the next snapshot.
		for i := c * chunkSlots; i < c*chunkSlots+int64(w.chunkLen(c)/slotSize); i++ {
			w.markDirty(i)
		}
	}
}

// write stores a snapshot in the file and syncs it. It touches only the file,
// so it runs without the store lock.
func (w *wheel) write(ww wheelWrite) error {
	if ww.all {
		for c := int64(0); c < int64(len(w.chunks)); c++ {
			if err := w.writeChunk(c, ww.chunks[c]); err != nil {
				return err
			}
		}
	} else {
		if ww.empty() {
			return nil
		}
		for _, c := range ww.release {
			if err := w.writeChunk(c, nil); err != nil {
				return err
			}
		}
		// Coalesce neighbouring slots into one write each (a flood into
		// consecutive slots dirties long runs); idx is sorted.
		for k := 0; k < len(ww.idx); {
			e := k + 1
			for e < len(ww.idx) && ww.idx[e] == ww.idx[e-1]+1 {
				e++
			}
			if _, err := w.fs.WriteAt(w.f, ww.bytes[k*slotSize:e*slotSize], ww.idx[k]*slotSize); err != nil {
				return fmt.Errorf("timer: write wheel: %w", store.DiskErr(err))
			}
			k = e
		}
	}
	if err := w.fs.Sync(w.f); err != nil {
		return fmt.Errorf("timer: sync wheel: %w", store.DiskErr(err))
	}
	return nil
}

// writeChunk writes chunk c whole; a nil chunk is punched out (or zeroed
// where holes are not supported).
func (w *wheel) writeChunk(c int64, b []byte) error {
	off, n := c*chunkSlots*slotSize, w.chunkLen(c)
	if b == nil {
		if store.PunchHole(w.f, off, int64(n)) {
			return nil
		}
		b = zeroChunk[:n]
	}
	if _, err := w.fs.WriteAt(w.f, b, off); err != nil {
		return fmt.Errorf("timer: write wheel: %w", store.DiskErr(err))
	}
	return nil
}

func (w *wheel) close() error { return w.f.Close() }

// empty reports whether the snapshot changes nothing in the file.
func (ww wheelWrite) empty() bool { return !ww.all && len(ww.idx) == 0 && len(ww.release) == 0 }
