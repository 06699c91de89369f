package timer

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"

	"github.com/rmqio/rmq/store"
)

// deleteSet holds the live delete markers: "<realTopic>+<uniqKey>" → the
// marker's time and its offset in the timer consume queue. A message with
// TIMER_OUT_MS O and key k is dropped at delivery when the set holds k with
// slot(O) <= slot(marker time): the recall handle names O.
//
// An entry may be dropped once the durable checkpoint has both read past the
// marker in the consume queue and moved its read time past markerEnd's
// slot: a recalled message is stored before its recall marker (its handle
// comes from its send response), so by then it has been read and, being due
// no later than markerEnd, dropped. Keeping entries that long also lets a
// replay after a crash, from that checkpoint, see them.
type deleteSet struct {
	m     map[string]deleteEntry
	dirty bool
}

type deleteEntry struct {
	AtMs        int64 `json:"at"`   // marker time (TIMER_OUT_MS of the marker)
	QueueOffset int64 `json:"qoff"` // marker's timer consume-queue offset
}

type deleteFile struct {
	Deletes map[string]deleteEntry `json:"deletes"`
}

func loadDeleteSet(path string) (*deleteSet, error) {
	d := &deleteSet{m: map[string]deleteEntry{}}
	err := store.ReadFileWithBackup(path, func(b []byte) error {
		var f deleteFile
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		for k, v := range f.Deletes {
			d.m[k] = v
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return d, nil
}

func (d *deleteSet) add(key string, atMs, queueOffset int64) {
	old, ok := d.m[key]
	if ok && old.AtMs >= atMs && old.QueueOffset >= queueOffset {
		return
	}
	if ok {
		atMs, queueOffset = max(atMs, old.AtMs), max(queueOffset, old.QueueOffset)
	}
	d.m[key] = deleteEntry{AtMs: atMs, QueueOffset: queueOffset}
	d.dirty = true
}

// matches reports whether a message with key due in slot dueSlot is deleted.
func (d *deleteSet) matches(key string, dueSlot int64, slotOf func(int64) int64) bool {
	e, ok := d.m[key]
	return ok && dueSlot <= slotOf(e.AtMs)
}

// markerEnd is the last time a marker at atMs can match a pending message:
// a Java-written record is due up to one Java precision after the
// TIMER_OUT_MS its recall handle names (recordDue; at most
// javaPrecisions[0]), so a marker is kept, and taken when read, that much
// past its own time.
func markerEnd(atMs int64) int64 {
	if end, ok := addExact(atMs, javaPrecisions[0]); ok {
		return end
	}
	return math.MaxInt64
}

// nextEndSlot is the earliest slot at or after readTime in which a
// marker's markerEnd falls, ok false when none does. The dequeue, idle
// until a later slot, wakes just past it so that its read time (and with
// it the next checkpoint, which prunes) moves past the marker: without
// that, a marker kept a precision beyond its own time would stay live
// until the next due message, however far. O(markers), on the idle path
// only; recalls pending at once are few.
func (d *deleteSet) nextEndSlot(readTime int64, slotOf func(int64) int64) (slot int64, ok bool) {
	slot = math.MaxInt64
	for _, e := range d.m {
		if s := slotOf(markerEnd(e.AtMs)); s >= readTime && s < slot {
			slot, ok = s, true
		}
	}
	return slot, ok
}

// prune drops the entries a checkpoint with this read time and queue offset
// no longer needs.
func (d *deleteSet) prune(readTime, queueOffset int64, slotOf func(int64) int64) {
	for k, e := range d.m {
		if slotOf(markerEnd(e.AtMs)) < readTime && e.QueueOffset < queueOffset {
			delete(d.m, k)
			d.dirty = true
		}
	}
}

// snapshot returns the file content when the set changed since the last one.
func (d *deleteSet) snapshot() ([]byte, bool) {
	if !d.dirty {
		return nil, false
	}
	d.dirty = false
	b, _ := json.Marshal(deleteFile{Deletes: d.m})
	return b, true
}
