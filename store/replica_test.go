package store

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// replicaSource is a master's commitlog cut into chunks as a master
// streams it: at most batch bytes, never across a file.
func replicaChunks(t *testing.T, m *Store, from int64, batch int) [][2]int64 {
	var out [][2]int64
	rng := rand.New(rand.NewPCG(1, uint64(batch)))
	for off := from; off < m.MaxPhyOffset(); {
		n := int64(1 + rng.IntN(batch))
		n = min(n, m.MaxPhyOffset()-off, m.cl.fileSize-off%m.cl.fileSize)
		out = append(out, [2]int64{off, n})
		off += n
	}
	return out
}

func masterBytes(t *testing.T, m *Store, off, n int64) []byte {
	b := make([]byte, n)
	k, err := m.ReadCommitLog(off, b)
	if err != nil || int64(k) != n {
		t.Fatalf("ReadCommitLog(%d, %d) = %d, %v", off, n, k, err)
	}
	return b
}

// isBoundary reports whether off is a record (or BLANK) boundary of m's
// commitlog: the start of a file, the end, or where a record starts.
func isBoundary(t *testing.T, m *Store, off int64) bool {
	if off%m.cl.fileSize == 0 || off == m.MaxPhyOffset() {
		return true
	}
	if _, err := m.LookMessageByOffset(off); err == nil {
		return true
	}
	var b [8]byte
	_, err := m.ReadCommitLog(off, b[:])
	return err == nil && binary.BigEndian.Uint32(b[4:]) == BlankMagicCode // a filler starts here

}

func sameBytes(t *testing.T, m, s *Store, from, to int64) {
	t.Helper()
	for off := from; off < to; {
		a := make([]byte, 4096)
		n, err := m.ReadCommitLog(off, a[:min(int64(len(a)), to-off)])
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		if k, err := s.ReadCommitLog(off, b); err != nil || k != n || string(a[:n]) != string(b) {
			for i := range b {
				if a[i] != b[i] {
					t.Fatalf("slave differs at %d: %d bytes, %v: first at %d: %x vs %x", off, k, err, off+int64(i), a[i:i+16], b[i:i+16])
				}
			}
			t.Fatalf("slave differs at %d: %d bytes, %v", off, k, err)
		}
		off += int64(n)
	}
}

// AppendReplicated copies chunks that end inside records but publishes
// only whole records: the commitlog a reader or the dispatcher sees never
// ends inside one, and the queues end up as the master's.
func TestAppendReplicatedPublishesWholeRecords(t *testing.T) {
	for _, flush := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(fmt.Sprint(flush), func(t *testing.T) {
			m := openStore(t, testOptions(t.TempDir()))
			for i := 0; i < 300; i++ {
				mustPut(t, m, testMessage("R", int32(i%2), i/2))
			}
			o := testOptions(t.TempDir())
			o.FlushDiskType = flush
			s := openStore(t, o)
			for _, c := range replicaChunks(t, m, 0, 3000) {
				end, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1]))
				if err != nil || end != c[0]+c[1] || s.ReplicaEnd() != end {
					t.Fatalf("AppendReplicated(%d, %d) = %d, %v", c[0], c[1], end, err)
				}
				if pub := s.MaxPhyOffset(); pub > end || !isBoundary(t, m, pub) {
					t.Fatalf("published %d after a chunk ending at %d: not a record boundary", pub, end)
				}
			}
			if _, err := s.AppendReplicated(5, []byte("x")); err == nil {
				t.Fatal("bytes at the wrong offset accepted")
			}
			waitDispatched(t, s)
			sameBytes(t, m, s, 0, m.MaxPhyOffset())
			for q := int32(0); q < 2; q++ {
				checkQueue(t, s, "R", q, 150)
			}
		})
	}
}

// A slave killed at any step of an append (bytes copied, not published;
// published) recovers to a record boundary at or below what it had
// copied, reports that, and replication from there ends identical.
func TestReplicaCrashAtEachStep(t *testing.T) {
	m := openStore(t, testOptions(t.TempDir()))
	for i := 0; i < 200; i++ {
		mustPut(t, m, testMessage("C", int32(i%2), i/2))
	}
	chunks := replicaChunks(t, m, 0, 2500)
	root := t.TempDir()
	sdir := filepath.Join(root, "slave")
	step := 0
	var snaps []string
	snapshot := func() {
		dst := filepath.Join(root, fmt.Sprintf("crash-%03d", step))
		copyDir(t, sdir, dst)
		snaps = append(snaps, dst)
		step++
	}
	o := testOptions(sdir)
	o.afterReplicaCopy = snapshot
	s := openStore(t, o)
	for _, c := range chunks {
		if _, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
			t.Fatal(err)
		}
		snapshot()
	}
	for i, dir := range snaps {
		o := testOptions(dir)
		os := openStore(t, o)
		end := os.ReplicaEnd()
		if end != os.MaxPhyOffset() || !isBoundary(t, m, end) {
			t.Fatalf("crash %d: recovered end %d (published %d) is not a record boundary", i, end, os.MaxPhyOffset())
		}
		// Replicate the rest from the recovered end, as the master would.
		for _, c := range replicaChunks(t, m, end, 4000) {
			if _, err := os.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
				t.Fatalf("crash %d: append at %d: %v", i, c[0], err)
			}
		}
		waitDispatched(t, os)
		t.Logf("crash %d: recovered end %d", i, end)
		sameBytes(t, m, os, os.MinPhyOffset(), m.MaxPhyOffset())
		if os.MinPhyOffset() != 0 {
			t.Fatalf("crash %d: commitlog starts at %d", i, os.MinPhyOffset())
		}
		for q := int32(0); q < 2; q++ {
			checkQueue(t, os, "C", q, 100)
		}
		os.Close()
	}
}

// Under SYNC_FLUSH a slave's replicated records are synced without a put
// asking: the flusher is woken by the append.
func TestReplicaSyncFlushSyncs(t *testing.T) {
	m := openStore(t, testOptions(t.TempDir()))
	for i := 0; i < 20; i++ {
		mustPut(t, m, testMessage("F", 0, i))
	}
	o := testOptions(t.TempDir())
	o.FlushDiskType = SyncFlush
	s := openStore(t, o)
	for _, c := range replicaChunks(t, m, 0, 3000) {
		if _, err := s.AppendReplicated(c[0], masterBytes(t, m, c[0], c[1])); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(testWait)
	for s.cl.flushedOffset.Load() < m.MaxPhyOffset() {
		if time.Now().After(deadline) {
			t.Fatalf("flushed %d of %d", s.cl.flushedOffset.Load(), m.MaxPhyOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
