package timer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rmqio/rmq/store"
)

func testUnit(i int64) unit {
	return unit{prevPos: i - 1, magic: magicDefault, writeMs: 1000 * i, delayMs: int32(i), offsetPy: 100 * i, sizePy: int32(i + 1), topicKey: int32(-i)}
}

func TestUnitCodec(t *testing.T) {
	u := unit{prevPos: -1, magic: magicDefault | magicRoll, writeMs: 1_700_000_000_000, delayMs: -5, offsetPy: 1 << 40, sizePy: 300, topicKey: -77}
	var b [unitSize]byte
	u.encode(b[:])
	got, ok := decodeUnit(b[:])
	if !ok || got != u || !got.roll() || got.target() != 1_700_000_000_000-5 {
		t.Fatalf("round trip: %+v ok=%v", got, ok)
	}
	for _, tc := range []struct {
		name   string
		mutate func(b []byte)
	}{
		{name: "zeroed", mutate: func(b []byte) { clear(b) }},
		{name: "flipped bit in offsetPy", mutate: func(b []byte) { b[30] ^= 1 }},
		{name: "wrong size", mutate: func(b []byte) { b[3] = 51 }},
		{name: "torn: second half zero", mutate: func(b []byte) { clear(b[26:]) }},
	} {
		c := b
		tc.mutate(c[:])
		if _, ok := decodeUnit(c[:]); ok {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	bad := u
	bad.magic = 4 // a delete unit of stock: not written by us
	bad.encode(b[:])
	if _, ok := decodeUnit(b[:]); ok {
		t.Error("unknown magic accepted")
	}
}

// TestTimerLog_Issue9947_BlankNearFileEnd fills segments whose tail is
// shorter than a unit plus the filler, so the filler (shorter than a unit) is
// what a scan meets at every file end; scans, reads and truncation must cross
// it (upstream #9947: a BufferUnderflowException on the short BLANK record).
func TestTimerLog_Issue9947_BlankNearFileEnd(t *testing.T) {
	dir := t.TempDir()
	const fileSize = 3*unitSize + blankSize + 20 // room for 3 units, then a 36-byte filler
	l, err := openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	var pos []int64
	for i := int64(1); i <= 10; i++ {
		u := testUnit(i)
		p, err := l.append(&u)
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	if pos[3] != fileSize || pos[6] != 2*fileSize {
		t.Fatalf("positions %v: a unit must start the next file", pos)
	}
	if len(l.segs) != 4 {
		t.Fatalf("%d segments", len(l.segs))
	}
	var seen []int64
	end := l.scan(l.first(), func(p int64, u unit) bool { seen = append(seen, p); return true })
	if len(seen) != 10 || end != l.end {
		t.Fatalf("scan saw %d units, end %d want %d", len(seen), end, l.end)
	}
	for i, p := range pos {
		if u, ok := l.read(p); !ok || u != testUnit(int64(i+1)) {
			t.Fatalf("read %d: %+v %v", p, u, ok)
		}
	}
	if _, ok := l.read(pos[2] + unitSize); ok {
		t.Fatal("the filler read as a unit")
	}
	for _, s := range l.pendingSyncs(l.end) {
		if err := s.seg.msync(s.from, s.to); err != nil {
			t.Fatal(err)
		}
	}
	l.markSynced(l.end)
	l.close()

	l, err = openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	if end := l.scan(l.first(), nil); end != pos[9]+unitSize {
		t.Fatalf("reopened scan end %d", end)
	}
	l.end = pos[9] + unitSize
	// Truncating at a file start removes that file and keeps the previous
	// one with its filler.
	if err := l.truncate(pos[6]); err != nil {
		t.Fatal(err)
	}
	if len(l.segs) != 2 || l.end != pos[6] {
		t.Fatalf("after truncate: %d segments, end %d", len(l.segs), l.end)
	}
	if end := l.scan(l.first(), nil); end != pos[6] {
		t.Fatalf("scan end after truncate %d", end)
	}
	u := testUnit(99)
	if p, err := l.append(&u); err != nil || p != pos[6] {
		t.Fatalf("append after truncate at %d: %v", p, err)
	}
	// Truncating mid-file zeroes the rest of it.
	if err := l.truncate(pos[1]); err != nil {
		t.Fatal(err)
	}
	if end := l.scan(l.first(), nil); end != pos[1] || len(l.segs) != 1 {
		t.Fatalf("scan end %d, %d segments", end, len(l.segs))
	}
	if n, err := l.removeBelow(1 << 40); n != 0 || err != nil {
		t.Fatalf("the last segment must stay: %d %v", n, err)
	}
	l.close()
}

func TestTimerLogGapAndShortSegment(t *testing.T) {
	dir := t.TempDir()
	const fileSize = 4 * unitSize
	l, err := openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 7; i++ {
		u := testUnit(i)
		if _, err := l.append(&u); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	// A segment after a gap cannot be reached and is removed.
	if err := os.WriteFile(filepath.Join(dir, segmentName(10*fileSize)), make([]byte, fileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = openTimerLog(nil, dir, fileSize)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.end = l.scan(l.first(), nil)
	if len(l.segs) != 3 {
		t.Fatalf("%d segments", len(l.segs))
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(10*fileSize))); !os.IsNotExist(err) {
		t.Fatalf("segment after the gap kept: %v", err)
	}
	if n, err := l.removeBelow(fileSize); n != 1 || err != nil || l.first() != fileSize {
		t.Fatalf("removeBelow: %d %v first %d", n, err, l.first())
	}
}

func TestWheelSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timerwheel")
	w, fresh, err := openWheel(nil, path, 10, 100)
	if err != nil || !fresh || w.allDirty {
		t.Fatalf("new wheel: fresh=%v allDirty=%v err=%v", fresh, w.allDirty, err)
	}
	if _, live := w.get(5000); live {
		t.Fatal("empty slot live")
	}
	w.put(5000, slot{first: 1, last: 9, num: 3})
	if s, live := w.get(5000); !live || s != (slot{first: 1, last: 9, num: 3}) {
		t.Fatalf("get: %+v %v", s, live)
	}
	// 5000 + 10 slots × 100 ms is the same index, another lap.
	if _, live := w.get(6000); live {
		t.Fatal("another lap read as live")
	}
	w.put(5100, slot{first: 2, last: 2, num: 1})
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	w.close()

	w, fresh, err = openWheel(nil, path, 10, 100)
	if err != nil || fresh {
		t.Fatalf("reopen: fresh=%v err=%v", fresh, err)
	}
	if s, live := w.get(5100); !live || s.num != 1 {
		t.Fatalf("after reopen: %+v %v", s, live)
	}
	w.clear(5100)
	if _, live := w.get(5100); live {
		t.Fatal("cleared slot live")
	}
	w.close()

	// A corrupt slot makes the whole wheel untrusted.
	b, _ := os.ReadFile(path)
	b[(5000/100%10)*slotSize+10] ^= 0xFF
	os.WriteFile(path, b, 0o644)
	w, fresh, err = openWheel(nil, path, 10, 100)
	if err != nil || !fresh || !w.allDirty {
		t.Fatalf("corrupt: fresh=%v allDirty=%v err=%v", fresh, w.allDirty, err)
	}
	if _, live := w.get(5000); live {
		t.Fatal("corrupt wheel not reset")
	}
	w.close()
	// Another ring size: resized and rebuilt.
	w, fresh, err = openWheel(nil, path, 20, 100)
	if err != nil || !fresh || !w.allDirty {
		t.Fatalf("resize: fresh=%v allDirty=%v err=%v", fresh, w.allDirty, err)
	}
	w.close()
}

func TestWheelWriteCoalesces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timerwheel")
	w, _, err := openWheel(nil, path, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []int64{900, 30, 40, 50, 990, 500} {
		w.put(st, slot{first: st, last: st, num: 1})
	}
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	w.close()
	w, fresh, err := openWheel(nil, path, 100, 10)
	if err != nil || fresh {
		t.Fatal(err, fresh)
	}
	defer w.close()
	for _, st := range []int64{900, 30, 40, 50, 990, 500} {
		if s, live := w.get(st); !live || s.first != st {
			t.Fatalf("slot %d: %+v %v", st, s, live)
		}
	}
}

// TestWheelSparse checks that the ring holds memory only for chunks with a
// set slot, releases a chunk with its last slot, punches released chunks out
// of the file (which stays sparse), and reopens from the data regions alone.
func TestWheelSparse(t *testing.T) {
	const n, p = 8 * chunkSlots, 10
	path := filepath.Join(t.TempDir(), "timerwheel")
	w, _, err := openWheel(nil, path, n, p)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func() (out []int) {
		for c, ch := range w.chunks {
			if ch != nil {
				out = append(out, c)
			}
		}
		return out
	}
	// Slots in chunks 1 and 5 (two in chunk 5).
	times := []int64{(1*chunkSlots + 3) * p, (5*chunkSlots + 7) * p, (5*chunkSlots + 8) * p}
	for _, st := range times {
		w.put(st, slot{first: st, last: st, num: 1})
	}
	if got := allocated(); !slices.Equal(got, []int{1, 5}) {
		t.Fatalf("chunks allocated %v, want [1 5]", got)
	}
	var live []int64
	w.forEachLive(func(st int64) { live = append(live, st) })
	if !slices.Equal(live, times) {
		t.Fatalf("forEachLive %v, want %v", live, times)
	}
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	regions := func() [][2]int64 {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return store.DataRegions(f, 0, n*slotSize)
	}
	dataBytes := func() (sum int64) {
		for _, r := range regions() {
			sum += r[1] - r[0]
		}
		return sum
	}
	if got := dataBytes(); got > 2*chunkSlots*slotSize {
		t.Fatalf("file holds %d data bytes for two chunks (regions %v)", got, regions())
	}

	// Clearing chunk 1's only slot releases it; the next write punches it.
	w.clear(times[0])
	w.clear(times[0]) // clearing an empty slot changes nothing
	if got := allocated(); !slices.Equal(got, []int{5}) {
		t.Fatalf("after clear: chunks %v, want [5]", got)
	}
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	if got := dataBytes(); got > chunkSlots*slotSize && got != n*slotSize {
		t.Fatalf("after release: %d data bytes (regions %v)", got, regions())
	}
	w.close()

	w, fresh, err := openWheel(nil, path, n, p)
	if err != nil || fresh {
		t.Fatalf("reopen: fresh=%v err=%v", fresh, err)
	}
	defer w.close()
	if got := allocated(); !slices.Equal(got, []int{5}) {
		t.Fatalf("after reopen: chunks %v, want [5]", got)
	}
	if _, live := w.get(times[0]); live {
		t.Fatal("released slot live after reopen")
	}
	for _, st := range times[1:] {
		if s, live := w.get(st); !live || s.first != st {
			t.Fatalf("slot %d after reopen: %+v %v", st, s, live)
		}
	}
	if w.used[5] != 2 {
		t.Fatalf("chunk 5 counts %d set slots, want 2", w.used[5])
	}
}

// TestWheelFailedWriteRestored checks that a write that failed is redone by
// the next one, including a chunk released in between.
func TestWheelFailedWriteRestored(t *testing.T) {
	const n, p = 2 * chunkSlots, 10
	path := filepath.Join(t.TempDir(), "timerwheel")
	w, _, err := openWheel(nil, path, n, p)
	if err != nil {
		t.Fatal(err)
	}
	a, b := int64(5*p), int64((chunkSlots+9)*p)
	w.put(a, slot{first: 1, last: 1, num: 1})
	w.put(b, slot{first: 2, last: 2, num: 1})
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	w.clear(a)                                // chunk 0 released
	w.put(b, slot{first: 2, last: 3, num: 2}) // chunk 1 changed
	ww := w.snapshot()
	if len(ww.release) != 1 || len(ww.idx) != 1 {
		t.Fatalf("snapshot: release %v idx %v", ww.release, ww.idx)
	}
	w.restore(ww) // as flush does when the write fails
	if err := w.write(w.snapshot()); err != nil {
		t.Fatal(err)
	}
	w.close()
	w, fresh, err := openWheel(nil, path, n, p)
	if err != nil || fresh {
		t.Fatalf("reopen: fresh=%v err=%v", fresh, err)
	}
	defer w.close()
	if _, live := w.get(a); live {
		t.Fatal("cleared slot came back")
	}
	if s, live := w.get(b); !live || s.num != 2 || s.last != 3 {
		t.Fatalf("changed slot: %+v %v", s, live)
	}
}

func TestCheckpointSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timercheck")
	cf, _, ok, err := openCheckpoint(nil, path)
	if err != nil || ok {
		t.Fatalf("new: ok=%v err=%v", ok, err)
	}
	c1 := checkpoint{readTimeMs: 1000, cursorTarget: 1050, cursorPos: 52, scannedPos: 104, flushPos: 156, queueOffset: 3, precisionMs: 100, wheelSlots: 10}
	if err := cf.write(c1); err != nil {
		t.Fatal(err)
	}
	c2 := c1
	c2.readTimeMs = 1100
	if err := cf.write(c2); err != nil {
		t.Fatal(err)
	}
	cf.close()
	cf, got, ok, err := openCheckpoint(nil, path)
	if err != nil || !ok || got.readTimeMs != 1100 || got.seq != 2 || got.scannedPos != 104 {
		t.Fatalf("reopen: %+v ok=%v err=%v", got, ok, err)
	}
	cf.close()
	// A torn write of the newest slot falls back to the older one.
	b, _ := os.ReadFile(path)
	b[0*checkpointSlotSize+20] ^= 0xFF // seq 2 lives in slot 0
	os.WriteFile(path, b, 0o644)
	cf, got, ok, err = openCheckpoint(nil, path)
	if err != nil || !ok || got.readTimeMs != 1000 || got.seq != 1 {
		t.Fatalf("torn: %+v ok=%v err=%v", got, ok, err)
	}
	cf.close()
	b[checkpointSlotSize+30] ^= 0xFF
	os.WriteFile(path, b, 0o644)
	if cf, _, ok, err = openCheckpoint(nil, path); err != nil || ok {
		t.Fatalf("both slots bad: ok=%v err=%v", ok, err)
	}
	cf.close()
}

func TestDeleteSetFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "timerdelete.json")
	d, err := loadDeleteSet(path)
	if err != nil || len(d.m) != 0 {
		t.Fatal(err)
	}
	slotOf := func(ms int64) int64 { return ms / 100 * 100 }
	d.add("T+U1", 1050, 7)
	d.add("T+U1", 900, 3) // an older marker does not shorten the entry
	d.add("T+U2", 2000, 9)
	if !d.matches("T+U1", 1000, slotOf) || d.matches("T+U1", 1100, slotOf) || d.matches("T+U3", 0, slotOf) {
		t.Fatal("matches")
	}
	b, changed := d.snapshot()
	if !changed {
		t.Fatal("not dirty")
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, changed := d.snapshot(); changed {
		t.Fatal("dirty after snapshot")
	}
	d2, err := loadDeleteSet(path)
	if err != nil || d2.m["T+U1"] != (deleteEntry{AtMs: 1050, QueueOffset: 7}) || d2.m["T+U2"].AtMs != 2000 {
		t.Fatalf("reload %v %v", d2.m, err)
	}
	tests := []struct {
		name        string
		readTime    int64
		queueOffset int64
		wantKept    int
	}{
		{name: "read time not past the marker", readTime: 1000, queueOffset: 100, wantKept: 2},
		// A Java-written record is due up to 1 s after the TIMER_OUT_MS
		// its handle names (markerEnd).
		{name: "read time past the marker, not its end", readTime: 1100, queueOffset: 100, wantKept: 2},
		{name: "read time at the marker's end", readTime: 2000, queueOffset: 100, wantKept: 2},
		{name: "marker not read yet", readTime: 2100, queueOffset: 7, wantKept: 2},
		{name: "both past the first", readTime: 2100, queueOffset: 8, wantKept: 1},
		{name: "both past both", readTime: 3100, queueOffset: 10, wantKept: 0},
	}
	for _, tc := range tests {
		d3, _ := loadDeleteSet(path)
		d3.prune(tc.readTime, tc.queueOffset, slotOf)
		if len(d3.m) != tc.wantKept || d3.dirty != (tc.wantKept != 2) {
			t.Errorf("%s: kept %v dirty %v", tc.name, d3.m, d3.dirty)
		}
	}
	os.WriteFile(path, []byte("{garbage"), 0o644)
	os.Remove(path + ".bak")
	if _, err := loadDeleteSet(path); err == nil {
		t.Fatal("garbage delete set accepted")
	}
}
