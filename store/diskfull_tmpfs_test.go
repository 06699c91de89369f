//go:build linux

package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// tmpfsStoreDir mounts a tmpfs of size bytes for the test (root only).
func tmpfsStoreDir(t *testing.T, size int64) string { return testutil.Tmpfs(t, size) }

// A disk that fills in the middle of a sparse segment (no fallocate, no
// reserve to stop puts earlier): the put that does not fit is refused with
// ErrDiskFull, every acknowledged message stays readable, a crash copy of
// that state recovers, and puts resume once space is freed, without a
// restart. Whichever write meets the full disk first (the commitlog's, or
// a consume-queue or index page: the warm-up zeroes the commitlog ahead),
// the outcome must be the same.
func TestDiskFillsMidSegment(t *testing.T) {
	for _, flush := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(flush.String(), func(t *testing.T) { testDiskFillsMidSegment(t, flush) })
	}
}

func testDiskFillsMidSegment(t *testing.T, flush FlushDiskType) {
	root := tmpfsStoreDir(t, 6<<20)
	ballast := filepath.Join(root, "ballast")
	if err := os.WriteFile(ballast, bytes.Repeat([]byte("b"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions(filepath.Join(root, "store"))
	o.MappedFileSizeCommitLog = 1 << 20
	o.NoPreallocate = true
	o.FlushDiskType = flush
	o.Retention = RetentionOptions{DiskReserve: 1, DiskSpaceWarningLevelRatio: 0.9999, noLoop: true}
	s := openStore(t, o)
	var acked []*PutResult
	var full error
	for i := 0; i < 20000 && full == nil; i++ {
		r, err := s.PutMessage(testMessage("T", int32(i%2), i))
		switch {
		case err == nil:
			acked = append(acked, r)
		case errors.Is(err, ErrDiskFull):
			full = err
		default:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if full == nil {
		t.Fatal("the disk never filled")
	}
	t.Logf("%d puts acknowledged, then: %v", len(acked), full)
	checkAcked := func(s *Store) {
		t.Helper()
		ctx := 10 * time.Second
		testutil.WaitFor(t, ctx, func() bool { return s.DispatchBehind() == 0 }, "dispatch")
		got := len(readQueue(t, s, "T", 0)) + len(readQueue(t, s, "T", 1))
		if got < len(acked) {
			t.Fatalf("%d messages readable, %d acknowledged", got, len(acked))
		}
	}

	// kill -9 in the full state: a copy of the files as they are.
	if err := s.cl.flush(); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Logf("flush on the full disk: %v", err)
	}
	crash := testOptions(t.TempDir())
	crash.MappedFileSizeCommitLog = o.MappedFileSizeCommitLog
	copyDir(t, o.Dir, crash.Dir)
	c := openStore(t, crash)
	checkAcked(c)
	mustPut(t, c, testMessage("T", 0, 99999))
	c.Close()

	// An operator frees space: puts resume on the running store.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		s.checkDisk()
		_, err := s.PutMessage(testMessage("T", 1, 100000))
		return err == nil
	}, "puts accepted again")
	checkAcked(s)
}

// WriteFileAtomic on a full disk fails and leaves the previous content in
// place (config files written at shutdown on a full disk: consumer offsets,
// topics, subscription groups).
func TestWriteFileAtomicOnFullDiskKeepsOldContent(t *testing.T) {
	root := tmpfsStoreDir(t, 1<<20)
	path := filepath.Join(root, "config", "consumerOffset.json")
	old := []byte(`{"offsetTable":{"T@G":{0:5}}}`)
	if err := WriteFileAtomic(nil, path, old); err != nil {
		t.Fatal(err)
	}
	// Fill the rest of the file system.
	f, err := os.Create(filepath.Join(root, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	f.Close()
	if err := WriteFileAtomic(nil, path, bytes.Repeat([]byte("n"), 256<<10)); err == nil {
		t.Fatal("WriteFileAtomic succeeded on a full disk")
	}
	var got []byte
	if err := ReadFileWithBackup(path, func(b []byte) error { got = b; return nil }); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("after a failed write: %q, %v; want the old content", got, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if e.Name() != "consumerOffset.json" && e.Name() != "consumerOffset.json.bak" {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

// A store closed on a full disk opens again there, again and again (a
// broker restarted while the disk stays full): recovery reads and writes
// nothing that needs a block (on tmpfs even reading a hole page of a shared
// mapping allocates it), every acknowledged message is readable, and puts
// resume once space is freed. The files meet the full disk in the middle of
// sparse commitlog, consume-queue and index pages.
func TestStoreReopensOnFullDisk(t *testing.T) {
	for _, prealloc := range []bool{false, true} {
		t.Run(fmt.Sprintf("prealloc=%v", prealloc), func(t *testing.T) { testStoreReopensOnFullDisk(t, prealloc) })
	}
}

func testStoreReopensOnFullDisk(t *testing.T, prealloc bool) {
	root := tmpfsStoreDir(t, 6<<20)
	ballast := filepath.Join(root, "ballast")
	o := testOptions(filepath.Join(root, "store"))
	o.MappedFileSizeCommitLog = 1 << 20
	o.NoPreallocate = !prealloc
	o.Retention = RetentionOptions{DiskReserve: 1, DiskSpaceWarningLevelRatio: 0.9999, noLoop: true}
	o.Index.HashSlotNum = 1 << 16 // a slot table of 64 pages, most of them holes
	s := openStore(t, o)
	acked := map[string]int{}
	put := func(s *Store, i int) error {
		m := testMessage("T", int32(i%3), i)
		_, err := s.PutMessage(m)
		if err == nil {
			acked[m.Properties["UNIQ_KEY"]]++
		} else if !errors.Is(err, ErrDiskFull) {
			t.Fatalf("put %d: %v", i, err)
		}
		return err
	}
	for i := 0; i < 300; i++ {
		if err := put(s, i); err != nil {
			t.Fatalf("put %d before the disk is full: %v", i, err)
		}
	}
	waitDispatched(t, s)
	testutil.FillDisk(t, ballast)
	i := 300
	for ; i < 20000 && put(s, i) == nil; i++ {
	}
	t.Logf("%d puts acknowledged", len(acked))
	check := func(s *Store) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, func() bool { return s.DispatchBehind() == 0 || s.dispatchStalled.Load() }, "dispatch")
		got := map[string]int{}
		for q := int32(0); q < 3; q++ {
			for _, m := range readQueue(t, s, "T", q) {
				got[m.Properties["UNIQ_KEY"]]++
			}
		}
		for k := range acked {
			if got[k] == 0 && !s.dispatchStalled.Load() {
				t.Fatalf("acknowledged %s not readable", k)
			}
		}
		// Keys never sent hash to slots in hole pages of the index file,
		// which fault when read on the full tmpfs; keys sent are found.
		for k := 0; k < 64; k++ {
			if _, err := s.QueryMessage("T", fmt.Sprintf("absent-%d", k), 4, 0, math.MaxInt64); err != nil {
				t.Fatalf("query on the full disk: %v", err)
			}
		}
		if r, err := s.QueryMessage("T", "k7", 4, 0, math.MaxInt64); err != nil || len(r.Messages) == 0 {
			t.Fatalf("query of a sent key: %v, %v", r, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Logf("Close on the full disk: %v", err)
	}
	for n := 0; n < 3; n++ {
		s, err := Open(o)
		if err != nil {
			t.Fatalf("Open %d on the full disk: %v", n, err)
		}
		check(s)
		if err := put(s, i); err == nil {
			t.Logf("a put fitted after reopen %d", n)
		}
		i++
		if err := s.Close(); err != nil {
			t.Logf("Close on the full disk: %v", err)
		}
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, o)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		s.checkDisk()
		return put(s, i) == nil
	}, "puts accepted again")
	waitDispatched(t, s)
	check(s)
}
