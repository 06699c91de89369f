package autoswitch

import (
	"context"
	"errors"
	"sync"
)

// fakeStore is an in-memory commitlog with files of fileSize bytes: the
// service's Store without records (it moves bytes, it does not parse
// them). Its dispatch is immediate; SetConfirmOffset only records the gate.
type fakeStore struct {
	fileSize int64

	mu      sync.Mutex
	base    int64 // the first offset held
	data    []byte
	gate    int64 // the last SetConfirmOffset
	gates   int   // SetConfirmOffset calls
	truncs  []int64
	changed chan struct{}
}

func newFakeStore(fileSize int64) *fakeStore {
	return &fakeStore{fileSize: fileSize, gate: -1, changed: make(chan struct{})}
}

var errFakeOffset = errors.New("fake: offset")

func (f *fakeStore) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// put appends b as local writes do.
func (f *fakeStore) put(b []byte) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = append(f.data, b...)
	f.signal()
	return f.base + int64(len(f.data))
}

func (f *fakeStore) bytes() (int64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.base, append([]byte(nil), f.data...)
}

func (f *fakeStore) gateValue() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gate
}

func (f *fakeStore) MaxPhyOffset() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.base + int64(len(f.data))
}

func (f *fakeStore) MinPhyOffset() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.base
}

func (f *fakeStore) CommitLogFileSize() int64 { return f.fileSize }

func (f *fakeStore) ReadCommitLog(off int64, p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.base + int64(len(f.data))
	if off < f.base || off >= end {
		return 0, errFakeOffset
	}
	fileEnd := off - off%f.fileSize + f.fileSize
	n := copy(p, f.data[off-f.base:min(end, fileEnd)-f.base])
	return n, nil
}

func (f *fakeStore) WaitDispatched(ctx context.Context, off int64) error {
	for {
		f.mu.Lock()
		end, ch := f.base+int64(len(f.data)), f.changed
		f.mu.Unlock()
		if end >= off {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeStore) ReplicaEnd() int64 { return f.MaxPhyOffset() }

func (f *fakeStore) AppendReplicated(off int64, b []byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.base + int64(len(f.data))
	if len(f.data) == 0 && off%f.fileSize == 0 {
		f.base, end = off, off
	}
	if off != end || (off%f.fileSize)+int64(len(b)) > f.fileSize {
		return end, errFakeOffset
	}
	f.data = append(f.data, b...)
	f.signal()
	return end + int64(len(b)), nil
}

func (f *fakeStore) TruncateTo(off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= f.base+int64(len(f.data)) {
		return nil // nothing to cut (the master's end-of-log call)
	}
	f.truncs = append(f.truncs, off)
	if off < f.base {
		return errFakeOffset
	}
	if off < f.base+int64(len(f.data)) {
		f.data = f.data[:off-f.base]
	}
	return nil
}

func (f *fakeStore) ConfirmOffset() int64 { return f.gateValue() }

func (f *fakeStore) SetConfirmOffset(off int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = off
	f.gates++
}
