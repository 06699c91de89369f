package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
)

// Wheel slot layout (see doc.go): 32 bytes, big-endian.
const (
	slotSize    = 32
	slotCRCSpan = 28
)

// slot is the chain of TimerLog units due in one precision interval.
type slot struct {
	first, last int64 // TimerLog positions of the oldest and newest unit
	num         int32 // units linked
}

// wheel is the ring of slots: slot time T (a multiple of the precision p) lives
// at index (T/p) mod n. The whole ring is kept in memory; changed slots are
// written back by flush, which the checkpoint protocol calls only after the
// TimerLog units they point at are durable, so the file never runs ahead of the
// log. A slot whose stored time is not T belongs to another lap and reads as
// empty.
type wheel struct {
	path      string
	f         *os.File
	n         int64
	precision int64
	buf       []byte
	dirty     []bool
	dirtyList []int64
	allDirty  bool
}

var errWheelCorrupt = errors.New("timer: wheel slot corrupt")

// openWheel opens (creating) the wheel file. fresh is true when the file had to
// be created or resized, or holds a slot that fails its CRC: its content is
// then zero (and will be written back whole, unless the file was just
// created, when it is already zero) and the caller rebuilds it from the
// TimerLog.
func openWheel(path string, n, precision int64) (w *wheel, fresh bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	size := n * slotSize
	w = &wheel{path: path, f: f, n: n, precision: precision, buf: make([]byte, size), dirty: make([]bool, n)}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	if info.Size() != size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, false, err
		}
		w.allDirty = info.Size() != 0
		return w, true, nil
	}
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), w.buf); err != nil {
		f.Close()
		return nil, false, err
	}
	for i := int64(0); i < n; i++ {
		if _, err := w.at(i); err != nil {
			w.reset()
			return w, true, nil
		}
	}
	return w, false, nil
}

// at decodes slot index i with its stored time (in units of the precision).
func (w *wheel) at(i int64) (slotTimeUnits int64, err error) {
	b := w.buf[i*slotSize : (i+1)*slotSize]
	if allZero(b) {
		return 0, nil
	}
	if binary.BigEndian.Uint32(b[slotCRCSpan:]) != crc32.ChecksumIEEE(b[:slotCRCSpan]) {
		return 0, fmt.Errorf("%w: index %d", errWheelCorrupt, i)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (w *wheel) index(t int64) int64 { return (t / w.precision) % w.n }

// get returns the slot of time t (a multiple of the precision); live is false
// when the slot holds another lap or nothing.
func (w *wheel) get(t int64) (s slot, live bool) {
	i := w.index(t)
	b := w.buf[i*slotSize : (i+1)*slotSize]
	if allZero(b) || int64(binary.BigEndian.Uint64(b)) != t/w.precision {
		return slot{first: -1, last: -1}, false
	}
	be := binary.BigEndian
	return slot{first: int64(be.Uint64(b[8:])), last: int64(be.Uint64(b[16:])), num: int32(be.Uint32(b[24:]))}, true
}

func (w *wheel) put(t int64, s slot) {
	i := w.index(t)
	b := w.buf[i*slotSize : (i+1)*slotSize]
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(t/w.precision))
	be.PutUint64(b[8:], uint64(s.first))
	be.PutUint64(b[16:], uint64(s.last))
	be.PutUint32(b[24:], uint32(s.num))
	be.PutUint32(b[slotCRCSpan:], crc32.ChecksumIEEE(b[:slotCRCSpan]))
	w.markDirty(i)
}

func (w *wheel) markDirty(i int64) {
	if w.allDirty || w.dirty[i] {
		return
	}
	w.dirty[i] = true
	w.dirtyList = append(w.dirtyList, i)
}

// clear empties the slot of time t.
func (w *wheel) clear(t int64) {
	i := w.index(t)
	clear(w.buf[i*slotSize : (i+1)*slotSize])
	w.markDirty(i)
}

// reset empties every slot (for a rebuild).
func (w *wheel) reset() {
	clear(w.buf)
	clear(w.dirty)
	w.dirtyList = w.dirtyList[:0]
	w.allDirty = true
}

// slotTime returns the time of index i if it holds a valid slot.
func (w *wheel) slotTime(i int64) (int64, bool) {
	u, err := w.at(i)
	if err != nil || u == 0 {
		return 0, false
	}
	return u * w.precision, true
}

// wheelWrite is a copy of the changed slots taken under the store lock, written
// to the file without it.
type wheelWrite struct {
	all   []byte // the whole ring, when allDirty
	idx   []int64
	bytes []byte
}

func (w *wheel) snapshot() wheelWrite {
	if w.allDirty {
		w.allDirty = false
		clear(w.dirty)
		w.dirtyList = w.dirtyList[:0]
		return wheelWrite{all: append([]byte(nil), w.buf...)}
	}
	ww := wheelWrite{idx: append([]int64(nil), w.dirtyList...), bytes: make([]byte, 0, len(w.dirtyList)*slotSize)}
	for _, i := range w.dirtyList {
		ww.bytes = append(ww.bytes, w.buf[i*slotSize:(i+1)*slotSize]...)
		w.dirty[i] = false
	}
	w.dirtyList = w.dirtyList[:0]
	return ww
}

// restore marks the slots of a failed write dirty again.
func (w *wheel) restore(ww wheelWrite) {
	if ww.all != nil {
		w.allDirty = true
		return
	}
	for _, i := range ww.idx {
		w.markDirty(i)
	}
}

// write stores a snapshot in the file and syncs it. It touches only the file,
// so it runs without the store lock.
func (w *wheel) write(ww wheelWrite) error {
	if ww.all != nil {
		if _, err := w.f.WriteAt(ww.all, 0); err != nil {
			return fmt.Errorf("timer: write wheel: %w", err)
		}
	} else {
		if len(ww.idx) == 0 {
			return nil
		}
		// Coalesce neighbouring slots into one write each (a flood into
		// consecutive slots dirties long runs).
		order := make([]int, len(ww.idx))
		for k := range order {
			order[k] = k
		}
		sort.Slice(order, func(a, b int) bool { return ww.idx[order[a]] < ww.idx[order[b]] })
		run := make([]byte, 0, 64*slotSize)
		runStart := int64(-1)
		flushRun := func() error {
			if len(run) == 0 {
				return nil
			}
			_, err := w.f.WriteAt(run, runStart*slotSize)
			run = run[:0]
			return err
		}
		for _, k := range order {
			i := ww.idx[k]
			if runStart < 0 || i != runStart+int64(len(run)/slotSize) {
				if err := flushRun(); err != nil {
					return fmt.Errorf("timer: write wheel: %w", err)
				}
				runStart = i
			}
			run = append(run, ww.bytes[k*slotSize:(k+1)*slotSize]...)
		}
		if err := flushRun(); err != nil {
			return fmt.Errorf("timer: write wheel: %w", err)
		}
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("timer: sync wheel: %w", err)
	}
	return nil
}

func (w *wheel) close() error { return w.f.Close() }
