package store

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/mmap"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
)

const indexTopic = "IndexTopic"

// keyedMessage is message i of indexTopic with KEYS "<keys>" and UNIQ_KEY uniq.
func keyedMessage(topic string, i int, keys, uniq string) *message.Message {
	m := testMessage(topic, int32(i%2), i)
	m.Properties = map[string]string{"KEYS": keys, "UNIQ_KEY": uniq}
	return m
}

// queryBodies returns the bodies of what QueryMessage found, in result order.
func queryBodies(t *testing.T, s *Store, topic, key string, maxNum int, begin, end int64) []string {
	t.Helper()
	r, err := s.QueryMessage(topic, key, maxNum, begin, end)
	if err != nil {
		t.Fatalf("QueryMessage(%s, %s): %v", topic, key, err)
	}
	var out []string
	last := int64(-1)
	for _, rec := range r.Messages {
		m, err := message.DecodeRecord(rec)
		if err != nil {
			t.Fatalf("QueryMessage returned an undecodable record: %v", err)
		}
		if m.PhysicalOffset <= last {
			t.Fatalf("results not in commitlog order: %d after %d", m.PhysicalOffset, last)
		}
		last = m.PhysicalOffset
		out = append(out, string(m.Body[:len(fmt.Sprintf("%s/%d/msg-%06d", m.Topic, m.QueueID, m.Flag))]))
	}
	return out
}

func bodyName(topic string, i int) string {
	return fmt.Sprintf("%s/%d/msg-%06d", topic, i%2, i)
}

func TestJavaKeyHash(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want int32
	}{
		{name: "empty", key: "", want: 0},
		{name: "ascii", key: "hello", want: 99162322},
		{name: "negative hash is made positive", key: "TopicTest#KEY-0", want: javaAbs(int32(message.TagsHash("TopicTest#KEY-0")))},
		{name: "Integer.MIN_VALUE maps to 0", key: "polygenelubricants", want: 0},
		{name: "supplementary code point hashes as a surrogate pair", key: "\U0001F600", want: javaAbs(31*0xD83D + 0xDE00)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := javaKeyHash(tt.key); got != tt.want {
				t.Fatalf("javaKeyHash(%q) = %d, want %d", tt.key, got, tt.want)
			}
		})
	}
	if message.TagsHash("polygenelubricants") != math.MinInt32 {
		t.Fatalf("test premise: %q should hash to Integer.MIN_VALUE", "polygenelubricants")
	}
}

func javaAbs(h int32) int32 {
	if h < 0 {
		h = -h
	}
	return h
}

func TestQueryMessageByKeysAndUniqKey(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	// "Aa" and "BB" have the same Java hash: the index chains them together
	// and the query must tell them apart.
	keys := []string{"order-1 order-2", "order-2", "Aa", "BB", "", "order-1  spaced"}
	for i, k := range keys {
		mustPut(t, s, keyedMessage(indexTopic, i, k, fmt.Sprintf("UNIQ%04d", i)))
	}
	mustPut(t, s, keyedMessage("OtherTopic", 100, "order-1", "UNIQ0000"))
	waitDispatched(t, s)

	tests := []struct {
		name   string
		topic  string
		key    string
		maxNum int
		want   []string
	}{
		{name: "key in several messages", topic: indexTopic, key: "order-1", maxNum: 32, want: []string{bodyName(indexTopic, 0), bodyName(indexTopic, 5)}},
		{name: "second word of KEYS", topic: indexTopic, key: "order-2", maxNum: 32, want: []string{bodyName(indexTopic, 0), bodyName(indexTopic, 1)}},
		{name: "hash collision Aa", topic: indexTopic, key: "Aa", maxNum: 32, want: []string{bodyName(indexTopic, 2)}},
		{name: "hash collision BB", topic: indexTopic, key: "BB", maxNum: 32, want: []string{bodyName(indexTopic, 3)}},
		{name: "unique key", topic: indexTopic, key: "UNIQ0004", maxNum: 32, want: []string{bodyName(indexTopic, 4)}},
		{name: "same unique key in another topic", topic: "OtherTopic", key: "UNIQ0000", maxNum: 32, want: []string{bodyName("OtherTopic", 100)}},
		{name: "maxNum caps the result (newest first)", topic: indexTopic, key: "order-1", maxNum: 1, want: []string{bodyName(indexTopic, 5)}},
		{name: "unknown key", topic: indexTopic, key: "nope", maxNum: 32, want: nil},
		{name: "unknown topic", topic: "Nope", key: "order-1", maxNum: 32, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := queryBodies(t, s, tt.topic, tt.key, tt.maxNum, 0, math.MaxInt64)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("QueryMessage(%s, %s) = %v, want %v", tt.topic, tt.key, got, tt.want)
			}
		})
	}

	r, err := s.QueryMessage(indexTopic, "order-1", 32, 0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if r.IndexLastUpdatePhyOffset <= 0 || r.IndexLastUpdateTimestamp <= 0 {
		t.Fatalf("index last update = (%d, %d), want the newest indexed message", r.IndexLastUpdateTimestamp, r.IndexLastUpdatePhyOffset)
	}
}

func TestQueryMessageTimeWindow(t *testing.T) {
	o := testOptions(t.TempDir())
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	o.Clock = clk
	s := openStore(t, o)
	for i := 0; i < 4; i++ {
		mustPut(t, s, keyedMessage(indexTopic, i, "k", fmt.Sprintf("U%d", i)))
		clk.Advance(10 * time.Second)
	}
	waitDispatched(t, s)
	base := int64(1_800_000_000_000)
	tests := []struct {
		name       string
		begin, end int64
		want       []string
	}{
		{name: "everything", begin: 0, end: math.MaxInt64, want: []string{bodyName(indexTopic, 0), bodyName(indexTopic, 1), bodyName(indexTopic, 2), bodyName(indexTopic, 3)}},
		{name: "middle two", begin: base + 5_000, end: base + 25_000, want: []string{bodyName(indexTopic, 1), bodyName(indexTopic, 2)}},
		{name: "after the last", begin: base + 31_000, end: math.MaxInt64, want: nil},
		{name: "before the first", begin: 0, end: base - 1, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := queryBodies(t, s, indexTopic, "k", 32, tt.begin, tt.end)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("window [%d, %d] = %v, want %v", tt.begin, tt.end, got, tt.want)
			}
		})
	}
}

// indexFiles lists the index file names of a store directory.
func indexFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, indexDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestIndexRollsOverAndSurvivesRestart(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Index = IndexOptions{HashSlotNum: 7, MaxIndexNum: 10} // 9 entries per file
	s := openStore(t, o)
	const n = 40
	for i := 0; i < n; i++ {
		mustPut(t, s, keyedMessage(indexTopic, i, fmt.Sprintf("key-%d common", i), fmt.Sprintf("U%04d", i)))
	}
	waitDispatched(t, s)
	// 3 keys per message, 9 entries per file.
	if files := indexFiles(t, o.Dir); len(files) != (3*n+8)/9 {
		t.Fatalf("%d index files %v, want %d", len(files), files, (3*n+8)/9)
	}
	check := func(t *testing.T, s *Store, total int) {
		t.Helper()
		for _, i := range []int{0, 17, total - 1} {
			if got := queryBodies(t, s, indexTopic, fmt.Sprintf("key-%d", i), 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
				t.Fatalf("key-%d: %v", i, got)
			}
			if got := queryBodies(t, s, indexTopic, fmt.Sprintf("U%04d", i), 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
				t.Fatalf("U%04d: %v", i, got)
			}
		}
		if got := queryBodies(t, s, indexTopic, "common", 64, 0, math.MaxInt64); len(got) != total {
			t.Fatalf("common: %d results, want %d (every message once)", len(got), total)
		}
	}
	check(t, s, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, o)
	check(t, s2, n)
	mustPut(t, s2, keyedMessage(indexTopic, n, fmt.Sprintf("key-%d common", n), fmt.Sprintf("U%04d", n)))
	waitDispatched(t, s2)
	check(t, s2, n+1)
}

func TestIndexRebuiltAtOpen(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{name: "copy of a running store", damage: func(*testing.T, string) {}},
		{name: "index directory lost", damage: func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, indexDir)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "newest index file lost", damage: func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			if err := os.Remove(filepath.Join(dir, indexDir, files[len(files)-1])); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "header count past the written entries", damage: func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			writeAt(t, filepath.Join(dir, indexDir, files[len(files)-1]), ihIndexCount, []byte{0, 0, 0, 9})
		}},
		{name: "index file of another geometry", damage: func(t *testing.T, dir string) {
			files := indexFiles(t, dir)
			if err := os.Truncate(filepath.Join(dir, indexDir, files[0]), 100); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.Index = IndexOptions{HashSlotNum: 5, MaxIndexNum: 12}
			s := openStore(t, o)
			const n = 30
			for i := 0; i < n; i++ {
				mustPut(t, s, keyedMessage(indexTopic, i, fmt.Sprintf("key-%d", i), fmt.Sprintf("U%04d", i)))
			}
			waitDispatched(t, s)
			crash := testOptions(t.TempDir())
			crash.Index = o.Index
			copyDir(t, o.Dir, crash.Dir)
			tt.damage(t, crash.Dir)

			c := openStore(t, crash)
			for i := 0; i < n; i++ {
				for _, key := range []string{fmt.Sprintf("key-%d", i), fmt.Sprintf("U%04d", i)} {
					if got := queryBodies(t, c, indexTopic, key, 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
						t.Fatalf("%s after reopen: %v, want exactly message %d once", key, got, i)
					}
				}
			}
		})
	}
}

func TestIndexDropsEntriesPastACutCommitLog(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Index = IndexOptions{HashSlotNum: 3, MaxIndexNum: 64}
	s := openStore(t, o)
	var cut int64
	for i := 0; i < 20; i++ {
		r := mustPut(t, s, keyedMessage(indexTopic, i, "shared", fmt.Sprintf("U%04d", i)))
		if i == 12 {
			cut = r.PhysicalOffset
		}
	}
	waitDispatched(t, s)
	crash := testOptions(t.TempDir())
	crash.Index = o.Index
	copyDir(t, o.Dir, crash.Dir)
	// A crash that loses the commitlog from message 12 on: its bytes are gone
	// (zero), but the index still has entries for 12..19.
	os.Remove(filepath.Join(crash.Dir, checkpointName))
	path, rel := segment(crash, cut)
	writeAt(t, path, rel, make([]byte, crash.MappedFileSizeCommitLog-rel))

	c := openStore(t, crash)
	if got := queryBodies(t, c, indexTopic, "shared", 64, 0, math.MaxInt64); len(got) != 12 {
		t.Fatalf("shared: %d results after the cut, want 12: %v", len(got), got)
	}
	// New messages now reuse the offsets the dropped entries pointed at; they
	// must be indexed (not skipped as "already indexed") and found once.
	for i := 100; i < 105; i++ {
		mustPut(t, c, keyedMessage(indexTopic, i, "shared fresh", fmt.Sprintf("U%04d", i)))
	}
	waitDispatched(t, c)
	if got := queryBodies(t, c, indexTopic, "fresh", 64, 0, math.MaxInt64); len(got) != 5 {
		t.Fatalf("fresh: %v, want the 5 new messages", got)
	}
	if got := queryBodies(t, c, indexTopic, "U0015", 64, 0, math.MaxInt64); got != nil {
		t.Fatalf("U0015 was cut off but is found: %v", got)
	}
	if got := queryBodies(t, c, indexTopic, "shared", 64, 0, math.MaxInt64); len(got) != 17 {
		t.Fatalf("shared: %d results, want 17", len(got))
	}
}

func TestIndexDisabled(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Index.Disabled = true
	s := openStore(t, o)
	mustPut(t, s, keyedMessage(indexTopic, 0, "k", "U0"))
	waitDispatched(t, s)
	r, err := s.QueryMessage(indexTopic, "k", 32, 0, math.MaxInt64)
	if err != nil || len(r.Messages) != 0 {
		t.Fatalf("QueryMessage with the index disabled = %v, %v; want nothing", r, err)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, indexDir)); !os.IsNotExist(err) {
		t.Fatalf("index directory exists with the index disabled: %v", err)
	}
}

func TestQueryMessageAfterClose(t *testing.T) {
	o := testOptions(t.TempDir())
	s := openStore(t, o)
	s.Close()
	if _, err := s.QueryMessage(indexTopic, "k", 32, 0, math.MaxInt64); err != ErrClosed {
		t.Fatalf("QueryMessage after Close: %v, want ErrClosed", err)
	}
}

// Index entries far behind the newest leave the broker's resident set (ten
// million messages kept 210 MB of one index file mapped), and lookups of
// released entries still find their messages, before and after a restart.
func TestIndexReleasesOldEntries(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Index = IndexOptions{HashSlotNum: 1024, MaxIndexNum: 100_000} // 2 MB of entries, 256 kB kept
	s := openStore(t, o)
	const n = 25_000 // 3 keys each: 1.5 MB of entries
	for i := 0; i < n; i++ {
		mustPut(t, s, keyedMessage(indexTopic, i, fmt.Sprintf("key-%d common", i), fmt.Sprintf("U%05d", i)))
	}
	waitDispatched(t, s)
	s.index.mu.RLock()
	f := s.index.files[len(s.index.files)-1]
	s.index.mu.RUnlock()
	keep := f.keep()
	// The header and slot table (one page each here), the kept window, up to
	// a step written since the last pass, and the page of the newest entry.
	bound := (2*pageSize + 2*keep + pageSize) >> 10
	if kb := testutil.MappedRSS(t, f.mf.data); kb > bound {
		t.Fatalf("index file has %d kB resident after %d keys, want at most %d", kb, 3*n, bound)
	}
	check := func(t *testing.T, s *Store) {
		t.Helper()
		for _, i := range []int{0, 1, n / 2, n - 1} {
			if got := queryBodies(t, s, indexTopic, fmt.Sprintf("key-%d", i), 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
				t.Fatalf("key-%d: %v", i, got)
			}
			if got := queryBodies(t, s, indexTopic, fmt.Sprintf("U%05d", i), 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
				t.Fatalf("U%05d: %v", i, got)
			}
		}
	}
	check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, openStore(t, o))
}

// FuzzTopicKeyHash: the index hashes "topic#key" from its parts without
// building the string; it must be the hash of the built string, invalid
// UTF-8 and supplementary code points included.
func FuzzTopicKeyHash(f *testing.F) {
	f.Add("TopicTest", "KEY-0")
	f.Add("", "")
	f.Add("t\xe2\x82", "\x82k")
	f.Add("\U0001F600", "\xf0\x9f")
	f.Add("polygenelubricant", "s")
	f.Fuzz(func(t *testing.T, topic, key string) {
		if got, want := topicKeyHash(topic, key), javaKeyHash(topic+"#"+key); got != want {
			t.Fatalf("topicKeyHash(%q, %q) = %d, javaKeyHash of the joined key = %d", topic, key, got, want)
		}
	})
}

// TestIndexPrefaultsAfterTraffic: a file that took indexPrefaultAfter keys
// has its slot table and the entries ahead of the newest mapped before they
// are written (populateWrite), so the puts that follow take no page fault
// there; a file with fewer keys stays sparse (a test's handful of messages
// costs no 20 MB of zeros). Resident (mincore) sees a hole of the sparse file
// only once it was touched or populated.
func TestIndexPrefaultsAfterTraffic(t *testing.T) {
	o := testOptions(t.TempDir())
	if probe, err := createMappedFile(nil, filepath.Join(t.TempDir(), "probe"), 0, pageSize, false); err != nil {
		t.Fatal(err)
	} else if err := populateWrite(probe.data); probe.close() != nil || err != nil {
		t.Skipf("populateWrite unsupported here: %v", err)
	}
	o.Index = IndexOptions{HashSlotNum: 500_000, MaxIndexNum: 1_000_000} // 2 MB of slots, 20 MB of entries
	s := openStore(t, o)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			mustPut(t, s, keyedMessage(indexTopic, i, "", fmt.Sprintf("U%06d", i)))
		}
		waitDispatched(t, s)
		s.index.syncs.Wait()
	}
	file := func() (*indexFile, []byte, []byte) {
		s.index.mu.RLock()
		defer s.index.mu.RUnlock()
		f := s.index.files[len(s.index.files)-1]
		end := f.entryPos(f.count())
		return f, f.mf.data[:f.entryPos(0)], f.mf.data[end : end+f.prefaultAhead()/2]
	}
	put(0, indexPrefaultAfter-1)
	if _, slots, _ := file(); mmap.Resident(slots) {
		t.Fatalf("slot table populated after %d keys", indexPrefaultAfter-1)
	}
	put(indexPrefaultAfter-1, indexPrefaultAfter)
	f, slots, ahead := file()
	if !mmap.Resident(slots) {
		t.Fatalf("slot table not populated after %d keys", indexPrefaultAfter)
	}
	if !mmap.Resident(ahead) {
		t.Fatalf("entries ahead of the newest not populated after %d keys", indexPrefaultAfter)
	}
	// Further entries keep a window populated ahead.
	per := int(f.prefaultAhead() / indexEntrySize)
	put(indexPrefaultAfter, indexPrefaultAfter+2*per)
	if _, _, ahead := file(); !mmap.Resident(ahead) {
		t.Fatalf("entries ahead of the newest not populated after %d keys", indexPrefaultAfter+2*per)
	}
	for _, i := range []int{0, indexPrefaultAfter, indexPrefaultAfter + 2*per - 1} {
		key := fmt.Sprintf("U%06d", i)
		if got := queryBodies(t, s, indexTopic, key, 32, 0, math.MaxInt64); !slices.Equal(got, []string{bodyName(indexTopic, i)}) {
			t.Fatalf("%s: %v", key, got)
		}
	}
}
