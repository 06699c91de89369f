//go:build linux

package store

import (
	"syscall"
	"testing"
	"unsafe"
)

// cachedPages counts the pages of b that are in the page cache (mincore).
func cachedPages(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (int64(len(b))+pageSize-1)/pageSize)
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		t.Skipf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// The first unit of a new consume queue file and the first key of a new
// index file fault in the pages they write, not a read-ahead window of holes
// around them (8 MiB on the project's test machine, zero-filled while the
// dispatcher waits).
func TestNewQueueAndIndexFilesFaultNoReadAhead(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MappedFileSizeConsumeQueue = 300000 * cqUnitSize
	s := openStore(t, o)
	m := testMessage("Advice", 0, 1)
	m.Properties["KEYS"] = "k1"
	mustPut(t, s, m)
	waitDispatched(t, s)
	const most = 4 // the written page, the header page, slack for fault-around
	if n := cachedPages(t, s.cqs["Advice"][0].files[0].data); n > most {
		t.Errorf("new consume queue file: %d pages cached after one unit, want <= %d", n, most)
	}
	if s.index == nil || s.index.last() == nil {
		t.Fatal("no index file")
	}
	if n := cachedPages(t, s.index.last().mf.data); n > most {
		t.Errorf("new index file: %d pages cached after one key, want <= %d", n, most)
	}
}
