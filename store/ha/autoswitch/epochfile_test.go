package autoswitch

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rmqio/rmq/store"
)

// ents builds entries from (epoch, start) pairs with the end offsets the
// table derives.
func ents(pairs ...int64) []EpochEntry {
	var out []EpochEntry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1], EndOffset: math.MaxInt64})
		if n := len(out); n > 1 {
			out[n-2].EndOffset = pairs[i+1]
		}
	}
	return out
}

// The expected bytes, worked out from the Java code:
// CheckpointFile.write (common/.../utils/CheckpointFile.java:77-96, 5.3.3)
// joins toLine(entry) = String.format("%d-%d", epoch, startOffset)
// (EpochFileCache.java:310) each with System.lineSeparator() ("\n" on
// Linux), takes UtilAll.crc32 of those UTF-8 bytes (CRC32 & 0x7FFFFFFF,
// UtilAll.java:298-302), and writes size, "\n", crc, "\n", entries.
// CRC32("1-0\n2-1024\n5-2048\n") = 0xF83A349C; & 0x7FFFFFFF = 2017126044
// (python3: zlib.crc32(b'1-0\n2-1024\n5-2048\n') & 0x7fffffff).
const goldenEpoch = "3\n2017126044\n1-0\n2-1024\n5-2048\n"

// The class comment's own example (CheckpointFile.java:38-43).
const javadocExample = "2\n773307083\n7-7000\n8-8000\n"

func TestFormatMatchesJavaBytes(t *testing.T) {
	if got := string(FormatEpochFile(ents(1, 0, 2, 1024, 5, 2048))); got != goldenEpoch {
		t.Fatalf("format = %q, want %q", got, goldenEpoch)
	}
	if got := string(FormatEpochFile(ents(7, 7000, 8, 8000))); got != javadocExample {
		t.Fatalf("format = %q, want %q", got, javadocExample)
	}
	e, err := ParseEpochFile([]byte(javadocExample))
	if err != nil || !reflect.DeepEqual(e, ents(7, 7000, 8, 8000)) {
		t.Fatalf("parse javadoc example = %v, %v", e, err)
	}
}

// testdata/java-5.3.3/epoch{,.bak} were written by rocketmq-store 5.3.3's
// EpochFileCache itself (Gen.java.txt beside them: four appends, one
// refused, then truncateSuffixByOffset). rmq reads both and, replaying the
// same calls, writes identical bytes to both files.
func TestJavaWrittenFile(t *testing.T) {
	javaFile, err := os.ReadFile("testdata/java-5.3.3/epoch")
	if err != nil {
		t.Fatal(err)
	}
	javaBak, err := os.ReadFile("testdata/java-5.3.3/epoch.bak")
	if err != nil {
		t.Fatal(err)
	}
	if string(javaFile) != goldenEpoch {
		t.Fatalf("java wrote %q, the hand-computed bytes are %q", javaFile, goldenEpoch)
	}
	bak, err := ParseEpochFile(javaBak)
	if err != nil || !reflect.DeepEqual(bak, ents(1, 0, 2, 1024, 5, 2048, 7, 3000000000)) {
		t.Fatalf("parse java .bak = %v, %v", bak, err)
	}

	dir := t.TempDir()
	javaDir := filepath.Join(dir, "java")
	os.MkdirAll(javaDir, 0o755)
	os.WriteFile(filepath.Join(javaDir, "epochFileCheckpoint"), javaFile, 0o644)
	f, err := OpenEpochFile(nil, filepath.Join(javaDir, "epochFileCheckpoint"))
	if err != nil || !reflect.DeepEqual(f.Entries(), ents(1, 0, 2, 1024, 5, 2048)) {
		t.Fatalf("open java file = %v, %v", f, err)
	}

	path := filepath.Join(dir, "epochFileCheckpoint")
	f, err = OpenEpochFile(nil, path)
	if err != nil || f.Len() != 0 {
		t.Fatalf("open missing = %v, %v", f, err)
	}
	for _, e := range []struct {
		epoch int32
		start int64
	}{{1, 0}, {2, 1024}, {5, 2048}} {
		if err := f.Append(e.epoch, e.start); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Append(5, 4096); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("append of a repeated epoch = %v, want ErrEpochOrder (java returned false)", err)
	}
	if err := f.Append(7, 3000000000); err != nil {
		t.Fatal(err)
	}
	if err := f.TruncateSuffixByOffset(3000000000); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, javaFile) {
		t.Fatalf("rmq file %q, java %q", got, javaFile)
	}
	if got, _ := os.ReadFile(path + ".bak"); !bytes.Equal(got, javaBak) {
		t.Fatalf("rmq .bak %q, java %q", got, javaBak)
	}
	// Java printed findEpochEntryByOffset(5000) = epoch 5.
	if e, ok := f.FindEpochByOffset(5000); !ok || e.Epoch != 5 {
		t.Fatalf("find 5000 = %v %v", e, ok)
	}
}

// The accepted cases, and the two refused ones Java loads or throws on
// (out of order: Java loads a TreeMap with crossed ends; a bad number:
// Java throws NumberFormatException), were read by the 5.3.3 jar too
// (testdata/java-5.3.3/Read.java.txt) with the same entries.
func TestParseEpochFile(t *testing.T) {
	// The files a live 5.3.3 master in controller mode wrote on its first
	// election and after a kill -9 and re-election
	// (integration/java/autoswitch-java-master.sh).
	for name, want := range map[string][]EpochEntry{
		"epoch-live-master":           ents(1, 0),
		"epoch-live-master-restarted": ents(1, 0, 5, 261),
	} {
		live, err := os.ReadFile("testdata/java-5.3.3/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if e, err := ParseEpochFile(live); err != nil || !reflect.DeepEqual(e, want) || !bytes.Equal(FormatEpochFile(e), live) {
			t.Fatalf("%s %q: %v %v", name, live, e, err)
		}
	}
	for _, c := range []struct {
		name, in string
		want     []EpochEntry // nil with ok=false: refused
		ok       bool
	}{
		{"golden", goldenEpoch, ents(1, 0, 2, 1024, 5, 2048), true},
		{"crc 0 skips the check", "2\n0\n1-0\n2-9\n", ents(1, 0, 2, 9), true},
		{"crc mismatch", "2\n1\n1-0\n2-9\n", nil, false},
		{"count mismatch", "3\n0\n1-0\n2-9\n", nil, false},
		{"no final newline (readLine)", "2\n773307083\n7-7000\n8-8000", ents(7, 7000, 8, 8000), true},
		// readLine splits at \r\n; the checksum is over "\n" lines.
		{"crlf", "2\r\n773307083\r\n7-7000\r\n8-8000\r\n", ents(7, 7000, 8, 8000), true},
		// A line that is not two fields is skipped but counted in the CRC.
		{"skipped line", "1\n0\n\n7-7000\nx\n", ents(7, 7000), true},
		{"trailing dash splits to two", "1\n0\n7-7000-\n", ents(7, 7000), true},
		{"leading dash is three fields", "0\n0\n-7-7000\n", nil, true},
		{"bad number", "1\n0\n7-x\n", nil, false},
		{"epoch overflows int", "1\n0\n2147483648-0\n", nil, false},
		{"epochs not increasing", "2\n0\n2-0\n1-9\n", nil, false},
		{"offsets decreasing", "2\n0\n1-9\n2-8\n", nil, false},
		// An empty term: Java's initEntries loads equal starts as they are.
		{"equal starts (an empty term)", "3\n0\n1-0\n2-9\n3-9\n", ents(1, 0, 2, 9, 3, 9), true},
		{"empty", "", nil, false},
		{"one line", "0\n", nil, false},
		{"negative count", "-1\n0\n", nil, false},
		{"count above limit", "40000\n0\n", nil, false},
		{"spaces", " 1\n0\n1-0\n", nil, false},
		{"plus signs (Integer.parseInt takes them)", "+1\n0\n+7-+7000\n", ents(7, 7000), true},
	} {
		got, err := ParseEpochFile([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("%s: got %v, %v; want %v ok=%v", c.name, got, err, c.want, c.ok)
		}
	}
	// Too many lines: refused on the line count, without reading them all.
	big := "1\n0\n" + strings.Repeat("\n", MaxEpochEntries+5) + "1-0\n"
	if _, err := ParseEpochFile([]byte(big)); err == nil {
		t.Error("file with too many lines accepted")
	}
}

func TestOpenFallsBackToBak(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "epochFileCheckpoint")
	write := func(name, s string) {
		if s == "-" {
			os.Remove(name)
			return
		}
		if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file, bak string
		want            []EpochEntry
		ok              bool
	}{
		{"primary good", goldenEpoch, javadocExample, ents(1, 0, 2, 1024, 5, 2048), true},
		{"primary corrupt", "3\n5\n1-0\n2-1024\n5-2048\n", javadocExample, ents(7, 7000, 8, 8000), true},
		{"primary torn", goldenEpoch[:20], javadocExample, ents(7, 7000, 8, 8000), true},
		{"primary empty file", "", javadocExample, ents(7, 7000, 8, 8000), true},
		{"primary no entries", "0\n0\n", javadocExample, ents(7, 7000, 8, 8000), true},
		{"primary missing", "-", javadocExample, ents(7, 7000, 8, 8000), true},
		{"both missing", "-", "-", nil, true},
		{"primary no entries, no bak", "0\n0\n", "-", nil, true},
		// Java would load an empty table (and a slave would then skip
		// truncation); rmq refuses.
		{"primary corrupt, no bak", "3\n5\n1-0\n", "-", nil, false},
		{"both corrupt", "x", "y", nil, false},
		{"oversize primary", "1\n0\n1-0\n" + strings.Repeat("\n", MaxEpochFileSize), javadocExample, ents(7, 7000, 8, 8000), true},
	} {
		write(path, c.file)
		write(path+".bak", c.bak)
		f, err := OpenEpochFile(nil, path)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
			continue
		}
		if c.ok && !reflect.DeepEqual(f.Entries(), c.want) {
			t.Errorf("%s: entries %v, want %v", c.name, f.Entries(), c.want)
		}
	}
}

func TestTableOperations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "epochFileCheckpoint")
	f, err := OpenEpochFile(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if f.LastEpoch() != -1 {
		t.Fatalf("empty last epoch %d", f.LastEpoch())
	}
	for _, p := range [][2]int64{{1, 0}, {3, 100}, {4, 250}, {8, 900}} {
		if err := f.Append(int32(p[0]), p[1]); err != nil {
			t.Fatal(err)
		}
	}
	// appendEntry's checks (:106): the epoch must rise and the start may
	// not fall (stock refuses an equal start too; rmq keeps the empty
	// term, below).
	for _, p := range [][2]int64{{8, 1000}, {7, 1000}, {9, 899}, {9, 10}} {
		if err := f.Append(int32(p[0]), p[1]); !errors.Is(err, ErrEpochOrder) {
			t.Errorf("append %v = %v, want ErrEpochOrder", p, err)
		}
	}
	if e, _ := f.LastEntry(); e != (EpochEntry{8, 900, math.MaxInt64}) {
		t.Fatalf("last = %v", e)
	}
	for off, want := range map[int64]int32{0: 1, 99: 1, 100: 3, 249: 3, 250: 4, 899: 4, 900: 8, 1 << 40: 8, -1: -1} {
		e, ok := f.FindEpochByOffset(off)
		if (want == -1) == ok || (ok && e.Epoch != want) {
			t.Errorf("find %d = %v %v, want epoch %d", off, e, ok, want)
		}
	}
	f.SetLastEndOffset(1200)
	if _, ok := f.FindEpochByOffset(1200); ok {
		t.Error("offset at the bounded end found")
	}
	f.SetLastEndOffset(5) // below the start: ignored (:128)
	if e, _ := f.LastEntry(); e.EndOffset != 1200 {
		t.Fatalf("end = %d", e.EndOffset)
	}
	if e, ok := f.NextEntry(3); !ok || e.Epoch != 4 {
		t.Errorf("next(3) = %v", e)
	}
	if e, ok := f.NextEntry(5); !ok || e.Epoch != 8 {
		t.Errorf("next(5) = %v", e)
	}
	if _, ok := f.NextEntry(8); ok {
		t.Error("next(8) found")
	}
	if e, ok := f.NextEntry(math.MaxInt32); ok {
		t.Errorf("next(max) = %v", e)
	}

	// Prefix: entries that end at or before 250 go (:280-289).
	if err := f.TruncatePrefixByOffset(250); err != nil {
		t.Fatal(err)
	}
	if want := []EpochEntry{{4, 250, 900}, {8, 900, 1200}}; !reflect.DeepEqual(f.Entries(), want) {
		t.Fatalf("after prefix: %v, want %v", f.Entries(), want)
	}
	// Suffix: entries that start at or after 900 go; the last one is open
	// again.
	if err := f.TruncateSuffixByOffset(901); err != nil {
		t.Fatal(err)
	}
	if err := f.TruncateSuffixByOffset(900); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Entries(), ents(4, 250)) {
		t.Fatalf("after suffix: %v", f.Entries())
	}
	g, err := OpenEpochFile(nil, path)
	if err != nil || !reflect.DeepEqual(g.Entries(), f.Entries()) {
		t.Fatalf("reopened: %v %v", g.Entries(), err)
	}
	// Emptied: both files go, so neither rmq nor a Java broker reloads
	// the old entries.
	if err := f.TruncateSuffixByEpoch(4); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".bak"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	g, err = OpenEpochFile(nil, path)
	if err != nil || g.Len() != 0 {
		t.Fatalf("reopened empty: %v %v", g.Entries(), err)
	}
}

// TestFindConsistentPoint follows EpochFileCache.findConsistentPoint
// (:227-245) with both last entries bounded as doTruncate bounds them
// (AutoSwitchHAClient.java:442-448).
func TestFindConsistentPoint(t *testing.T) {
	for _, c := range []struct {
		name                 string
		local                []EpochEntry
		localMax             int64
		master               []EpochEntry
		masterMax, wantPoint int64
	}{
		{"same history, slave behind", ents(1, 0, 2, 100), 150, ents(1, 0, 2, 100), 300, 150},
		{"same history, slave ahead", ents(1, 0, 2, 100), 300, ents(1, 0, 2, 100), 200, 200},
		{"slave wrote in an epoch the master lacks", ents(1, 0, 2, 100, 3, 200), 260, ents(1, 0, 2, 100, 4, 180), 400, 180},
		{"same epoch, different start", ents(1, 0, 2, 100), 300, ents(1, 0, 2, 120), 400, 100},
		{"nothing shared", ents(2, 100), 300, ents(1, 0, 3, 50), 400, -1},
		{"master empty", ents(1, 0), 10, nil, 0, -1},
	} {
		l, err := NewEpochTable(c.local)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewEpochTable(c.master)
		if err != nil {
			t.Fatal(err)
		}
		l.SetLastEndOffset(c.localMax)
		m.SetLastEndOffset(c.masterMax)
		if got := l.FindConsistentPoint(m); got != c.wantPoint {
			t.Errorf("%s: point %d, want %d", c.name, got, c.wantPoint)
		}
	}
}

// TestWriteFaults fails each step of the write in turn (the store's
// ErrorFS): the call fails, the table in memory is unchanged, and the
// files on disk read back as the old table or the new one, never as
// anything else.
func TestWriteFaults(t *testing.T) {
	old := ents(1, 0, 2, 100)
	next := ents(1, 0, 2, 100, 3, 500)
	for _, r := range []store.Rule{
		{Op: store.OpOpen, Path: ".tmp"},
		{Op: store.OpWrite, Path: ".tmp"},
		{Op: store.OpWrite, Path: ".tmp", Partial: true},
		{Op: store.OpSync, Path: ".tmp"},
		{Op: store.OpRename},
		{Op: store.OpSync, Exact: true}, // the directory, after the rename
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "epochFileCheckpoint")
		inj := &store.Injector{}
		f, err := OpenEpochFile(store.NewErrorFS(inj), path)
		if err != nil {
			t.Fatal(err)
		}
		f.Append(1, 0)
		f.Append(2, 100)
		if r.Exact {
			r.Path = dir
		}
		inj.Add(r)
		if err := f.Append(3, 500); err == nil {
			t.Errorf("%v: append succeeded", r)
			continue
		}
		if len(inj.Hits()) == 0 {
			t.Errorf("%v: fault never hit", r)
		}
		if !reflect.DeepEqual(f.Entries(), old) {
			t.Errorf("%v: table changed to %v", r, f.Entries())
		}
		g, err := OpenEpochFile(nil, path)
		if err != nil {
			t.Errorf("%v: reopen: %v", r, err)
			continue
		}
		if got := g.Entries(); !reflect.DeepEqual(got, old) && !reflect.DeepEqual(got, next) {
			t.Errorf("%v: reopened %v", r, got)
		}
	}
}

// TestCrashStates lays out what a crash leaves after each step of write
// and checks that the reader sees the old table or the new one.
func TestCrashStates(t *testing.T) {
	older := string(FormatEpochFile(ents(1, 0)))
	old := string(FormatEpochFile(ents(1, 0, 2, 100)))
	next := string(FormatEpochFile(ents(1, 0, 2, 100, 3, 500)))
	for _, c := range []struct {
		name, file, bak, tmp string
		want                 []EpochEntry
	}{
		{"1: temporary file written", old, older, next[:10], ents(1, 0, 2, 100)},
		{"2: .bak linked", old, old, next, ents(1, 0, 2, 100)},
		{"3: renamed", next, old, "", ents(1, 0, 2, 100, 3, 500)},
		{"emptying: .bak removed", old, "", "", ents(1, 0, 2, 100)},
		{"emptying: both removed", "", "", "", nil},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "epochFileCheckpoint")
		for p, s := range map[string]string{path: c.file, path + ".bak": c.bak, path + ".tmp123": c.tmp} {
			if s != "" {
				os.WriteFile(p, []byte(s), 0o644)
			}
		}
		f, err := OpenEpochFile(nil, path)
		if err != nil || !reflect.DeepEqual(f.Entries(), c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, f, err, c.want)
		}
	}
}

func FuzzParseEpochFile(f *testing.F) {
	for _, s := range []string{goldenEpoch, javadocExample, "2\r\n0\r\n1-0\r\n2-9", "1\n0\n\n7-7000-\n", "0\n0\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseEpochFile(data)
		if err != nil {
			return
		}
		// Whatever parses is a valid table that writes and reads back.
		if _, err := NewEpochTable(entries); err != nil {
			t.Fatalf("parsed table invalid: %v", err)
		}
		again, err := ParseEpochFile(FormatEpochFile(entries))
		if err != nil || !reflect.DeepEqual(again, entries) {
			t.Fatalf("round trip: %v, %v; want %v", again, err, entries)
		}
	})
}

// TestConcurrentUse appends while readers query the table (run with
// -race): every reader sees a table in order, never a half-made one.
func TestConcurrentUse(t *testing.T) {
	f, err := OpenEpochFile(nil, filepath.Join(t.TempDir(), "epochFileCheckpoint"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 2)
	for r := 0; r < 2; r++ {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := NewEpochTable(f.Entries()); err != nil {
					errs <- err
					return
				}
				f.FindEpochByOffset(500)
				f.LastEpoch()
			}
		}()
	}
	for i := int32(1); i <= 30; i++ {
		if err := f.Append(i, int64(i)*100); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for r := 0; r < 2; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if f.Len() != 30 {
		t.Fatalf("len %d", f.Len())
	}
}

// An empty term (see EpochEntry) is appended, written and read back as it
// is; it holds no offset, and the suffix and prefix truncations drop it
// with its neighbours.
func TestEmptyTermEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "epochFileCheckpoint")
	f, err := OpenEpochFile(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int64{{1, 0}, {2, 500}, {3, 500}, {4, 500}} {
		if err := f.Append(int32(p[0]), p[1]); err != nil {
			t.Fatalf("append %v: %v", p, err)
		}
	}
	if err := f.Append(5, 499); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("a falling start: %v", err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, FormatEpochFile(ents(1, 0, 2, 500, 3, 500, 4, 500))) {
		t.Fatalf("file %q", data)
	}
	g, err := OpenEpochFile(nil, path)
	if err != nil || !reflect.DeepEqual(g.Entries(), f.Entries()) {
		t.Fatalf("reopened %v %v, want %v", g.Entries(), err, f.Entries())
	}
	if e, ok := f.FindEpochByOffset(500); !ok || e.Epoch != 4 {
		t.Fatalf("find 500 = %v %v, want epoch 4", e, ok)
	}
	if e, ok := f.FindEpochByOffset(499); !ok || e.Epoch != 1 {
		t.Fatalf("find 499 = %v %v, want epoch 1", e, ok)
	}
	if err := f.TruncatePrefixByOffset(500); err != nil || !reflect.DeepEqual(f.Entries(), ents(4, 500)) {
		t.Fatalf("prefix to 500: %v %v", f.Entries(), err)
	}
	if err := f.Append(5, 500); err != nil {
		t.Fatal(err)
	}
	if err := f.TruncateSuffixByOffset(500); err != nil || f.Len() != 0 {
		t.Fatalf("suffix from 500: %v %v", f.Entries(), err)
	}
}
