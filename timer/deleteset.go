package timer

import (
	"encoding/json"
	"errors"
	"io/fs"

	"rmq/store"
)

// deleteSet holds the live delete markers: "<realTopic>+<uniqKey>" → the
// marker's time. A message due at D with key k is dropped at delivery when
// the set holds k with slot(D) <= slot(marker time). Entries are kept until the
// durable read time has passed their slot, so a replay after a crash from the
// previous checkpoint still sees them.
type deleteSet struct {
	m     map[string]int64
	dirty bool
}

type deleteFile struct {
	Deletes map[string]int64 `json:"deletes"`
}

func loadDeleteSet(path string) (*deleteSet, error) {
	d := &deleteSet{m: map[string]int64{}}
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

func (d *deleteSet) add(key string, atMs int64) {
	if old, ok := d.m[key]; !ok || old < atMs {
		d.m[key] = atMs
		d.dirty = true
	}
}

// matches reports whether a message with key due in slot dueSlot is deleted.
func (d *deleteSet) matches(key string, dueSlot int64, slotOf func(int64) int64) bool {
	at, ok := d.m[key]
	return ok && dueSlot <= slotOf(at)
}

// prune drops entries whose slot is before readTime.
func (d *deleteSet) prune(readTime int64, slotOf func(int64) int64) {
	for k, at := range d.m {
		if slotOf(at) < readTime {
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
