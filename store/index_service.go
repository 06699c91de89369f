package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
)

// Index defaults (Java MessageStoreConfig maxHashSlotNum, maxIndexNum,
// DefaultMessageStore maxMsgsNumBatch): a 420 000 040-byte sparse file.
const (
	DefaultIndexHashSlotNum = 5_000_000
	DefaultIndexMaxNum      = 20_000_000
	// MaxQueryMessages caps the messages one QueryMessage call returns.
	MaxQueryMessages = 64
)

const indexDir = "index"

// indexNameLayout is Java's yyyyMMddHHmmssSSS file name.
const indexNameLayout = "20060102150405.000"

// IndexOptions configures the message index (Java messageIndexEnable,
// maxHashSlotNum, maxIndexNum). Zero values take the defaults.
type IndexOptions struct {
	Disabled    bool
	HashSlotNum int // hash slots per file
	MaxIndexNum int // entries per file
}

func (o IndexOptions) normalized() IndexOptions {
	if o.HashSlotNum <= 0 {
		o.HashSlotNum = DefaultIndexHashSlotNum
	}
	if o.MaxIndexNum <= 1 {
		o.MaxIndexNum = DefaultIndexMaxNum
	}
	return o
}

// indexService keeps the index files under <Dir>/index: the dispatch
// goroutine adds every message's keys (after recovery, see catchUp), queries
// read concurrently.
type indexService struct {
	fs   FS // Options.FS
	dir  string
	opts IndexOptions
	log  zerolog.Logger
	now  func() time.Time

	mu     sync.RWMutex
	files  []*indexFile // oldest first; only the last one takes entries
	closed bool
	// failures counts keys that could not be written (disk full faults).
	failures int64

	// syncs counts the background work on mapped files (msyncs of files
	// that filled up, prefault's populates): unmapping waits for it.
	syncs sync.WaitGroup
}

// openIndex loads the index files, dropping the first damaged file and every
// file after it (catchUp rebuilds what they held).
func openIndex(fs FS, root string, opts IndexOptions, now func() time.Time, log zerolog.Logger) (*indexService, error) {
	x := &indexService{fs: fs, dir: filepath.Join(root, indexDir), opts: opts.normalized(), log: log, now: now}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		return nil, err
	}
	size := indexFileSize(x.opts.HashSlotNum, x.opts.MaxIndexNum)
	var names []string
	for _, e := range ents {
		if _, err := parseIndexName(e.Name()); err == nil && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for i, name := range names {
		path := filepath.Join(x.dir, name)
		var f *indexFile
		st, err := os.Stat(path)
		if err == nil && st.Size() == size {
			var mf *mappedFile
			if mf, err = openMappedFile(x.fs, path, 0, size, false); err == nil {
				mf.adviseRandom()
				f = &indexFile{mf: mf, slots: x.opts.HashSlotNum, entries: x.opts.MaxIndexNum}
				// A header page left a hole (a crash right after the file
				// was made) faults when read on a full tmpfs: the file is
				// then dropped like a damaged one.
				var cerr error
				if err = GuardFault(func() { cerr = f.check() }); err == nil {
					err = cerr
				}
			}
		} else if err == nil {
			err = fmt.Errorf("%w: index %s has %d bytes, want %d (index geometry changed?)", ErrCorrupt, path, st.Size(), size)
		}
		if err != nil {
			x.log.Warn().Err(err).Int("dropped", len(names)-i).Msg("index: dropping damaged index files; they are rebuilt from the commitlog")
			if f != nil {
				f.mf.close()
			}
			for _, n := range names[i:] {
				if rerr := os.Remove(filepath.Join(x.dir, n)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
					x.closeFiles()
					return nil, rerr
				}
			}
			break
		}
		x.files = append(x.files, f)
	}
	return x, nil
}

func parseIndexName(name string) (time.Time, error) {
	if len(name) != 17 {
		return time.Time{}, fmt.Errorf("store: %q is not an index file name", name)
	}
	return time.ParseInLocation(indexNameLayout, name[:14]+"."+name[14:], time.Local)
}

func formatIndexName(t time.Time) string {
	return strings.Replace(t.Format(indexNameLayout), ".", "", 1)
}

func (x *indexService) last() *indexFile {
	if len(x.files) == 0 {
		return nil
	}
	return x.files[len(x.files)-1]
}

// resumeFrom repairs the index against a commitlog spanning [minPhy, maxPhy)
// and returns where indexing must resume: entries at or past maxPhy (a cut
// commitlog) are dropped, files left empty are deleted, and the scan resumes
// at the newest indexed record or, with no index at all, at minPhy.
func (x *indexService) resumeFrom(minPhy, maxPhy int64) (int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for f := x.last(); f != nil; f = x.last() {
		if !f.empty() && f.endPhyOffset() >= maxPhy {
			n := f.truncateFrom(maxPhy)
			x.log.Warn().Str("file", f.mf.path).Int("entries", n).Int64("commitlogEnd", maxPhy).Msg("index: dropped entries past the commitlog end")
		}
		if !f.empty() {
			return max(f.endPhyOffset(), minPhy), nil
		}
		if err := f.mf.remove(); err != nil {
			return 0, err
		}
		x.files = x.files[:len(x.files)-1]
	}
	return minPhy, nil
}

// writable returns the file new entries go to, rolling over to a new one
// when the newest is full. Holds x.mu.
func (x *indexService) writable() (*indexFile, error) {
	if f := x.last(); f != nil && !f.full() {
		return f, nil
	}
	t := x.now()
	name := formatIndexName(t)
	if f := x.last(); f != nil {
		// Names must sort in creation order even when two files are made
		// within one millisecond (or the clock stepped back).
		prev, _ := parseIndexName(filepath.Base(f.mf.path))
		for name <= filepath.Base(f.mf.path) {
			prev = prev.Add(time.Millisecond)
			name = formatIndexName(prev)
		}
	}
	size := indexFileSize(x.opts.HashSlotNum, x.opts.MaxIndexNum)
	mf, err := createMappedFile(x.fs, filepath.Join(x.dir, name), 0, size, false)
	if err != nil {
		return nil, err
	}
	mf.adviseRandom() // hash slots are hit at random, entries appended
	nf := &indexFile{mf: mf, slots: x.opts.HashSlotNum, entries: x.opts.MaxIndexNum}
	if old := x.last(); old != nil {
		// The header of a fresh file starts where the previous one ended
		// (overwritten by the first entry), as Java's does.
		// The header page is a hole of a sparse file: on a full disk the
		// first write to it faults, which is an error here, not a crash.
		if err := GuardFault(func() {
			nf.put64(ihBeginPhyOffset, old.endPhyOffset())
			nf.put64(ihEndPhyOffset, old.endPhyOffset())
			nf.put64(ihBeginTimestamp, old.endTimestamp())
			nf.put64(ihEndTimestamp, old.endTimestamp())
		}); err != nil {
			_ = mf.close()
			_ = os.Remove(mf.path)
			return nil, err
		}
		// A full file takes no more writes; it is flushed off the dispatch
		// goroutine and without the lock. close waits for the flush before it
		// unmaps, and only the dispatch goroutine (stopped before close) rolls.
		x.syncs.Add(1)
		go func() {
			defer x.syncs.Done()
			if err := old.mf.sync(0, old.mf.size()); err != nil {
				x.log.Error().Err(err).Str("file", old.mf.path).Msg("index: flush full index file")
			}
		}()
	}
	x.files = append(x.files, nf)
	x.log.Info().Str("file", mf.path).Msg("index: new index file")
	return nf, nil
}

// addRecord indexes one dispatched record: its UNIQ_KEY and each
// space-separated KEYS word, as "topic#key". Rolled-back transaction records
// and records before the newest indexed one are skipped. The newest indexed
// record itself is indexed again when catch-up resumes there: its keys may
// have been split across a file that was lost; queries drop the duplicates.
//
// A key that cannot be written (no disk space, an index file that could
// not be created) ends the call with its error: the dispatcher retries the
// record later, and the retry adds its keys again (the newest indexed
// record is not skipped). held says the caller holds x.mu already (a put
// dispatching its own records: holdFor); otherwise addRecord takes it.
func (x *indexService) addRecord(d *pendingDispatch, held bool) error {
	uniq, keys := recordKeys(d)
	if uniq == "" && strings.TrimSpace(keys) == "" {
		return nil
	}
	if !held {
		x.mu.Lock()
		defer x.mu.Unlock()
	}
	if x.closed {
		return nil
	}
	if f := x.last(); f != nil && !f.empty() && d.PhysicalOffset < f.endPhyOffset() {
		return nil
	}
	return eachKey(uniq, keys, func(k string) error {
		return x.addKey(d.Topic, k, d.PhysicalOffset, d.StoreTimestamp)
	})
}

// recordKeys is what addRecord indexes of d: its UNIQ_KEY and its KEYS
// text; none for a rolled-back transaction record.
func recordKeys(d *pendingDispatch) (uniq, keys string) {
	if message.TransactionType(d.SysFlag) == message.TransactionRollbackType {
		return "", ""
	}
	return d.Props.Get(message.PropUniqKey), d.Props.Get(message.PropKeys)
}

// eachKey calls fn with uniq, when set, then each KEYS word, until fn fails.
func eachKey(uniq, keys string, fn func(string) error) error {
	if uniq != "" {
		if err := fn(uniq); err != nil {
			return err
		}
	}
	for rest := keys; rest != ""; {
		var k string
		k, rest, _ = strings.Cut(rest, message.KeySeparator)
		if k != "" {
			if err := fn(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdFor is for a put dispatching its own records (dispatchOwn), which
// must not wait: ok reports that the keys of batch can be added now, held
// that x.mu is taken for them (the caller adds them with addRecord(d, true),
// then unlocks). Not ok leaves batch to the dispatcher goroutine: x.mu is
// taken (a lookup may be reading the disk under it), or the keys do not
// fit in the newest file and a roll-over would create one (writable).
func (x *indexService) holdFor(batch []pendingDispatch) (ok, held bool) {
	n := 0
	for i := range batch {
		uniq, keys := recordKeys(&batch[i])
		_ = eachKey(uniq, keys, func(string) error { n++; return nil })
	}
	if n == 0 {
		return true, false
	}
	if !x.mu.TryLock() {
		return false, false
	}
	if f := x.last(); !x.closed && (f == nil || int(f.count())+n > f.entries) {
		x.mu.Unlock()
		return false, false
	}
	return true, true
}

// addKey adds the key "topic#key" (hashed as one string, never built). A
// failure (a full disk, an index file that could not be created) is
// counted, logged and returned: the dispatcher stops at the record and
// retries it, as it does for its consume-queue unit.
func (x *indexService) addKey(topic, key string, phy, storeTimestamp int64) error {
	f, err := x.writable()
	if err == nil {
		err = GuardFault(func() { f.add(topicKeyHash(topic, key), phy, storeTimestamp) })
	}
	if err == nil {
		for _, b := range f.prefault() {
			x.populate(b)
		}
	}
	if err != nil {
		x.failures++
		x.log.Error().Err(err).Str("key", topic+"#"+key).Int64("phyOffset", phy).Msg("index: cannot add key")
		return fmt.Errorf("index key %q: %w", topic+"#"+key, err)
	}
	return nil
}

// lookup collects the commitlog offsets of up to maxNum entries for key
// stored within [begin, end], newest file first, and also returns the newest
// file's end timestamp and offset (the response header fields).
func (x *indexService) lookup(key string, maxNum int, begin, end int64, accept func(phy int64) bool) (lastTS, lastPhy int64, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return 0, 0, ErrClosed
	}
	if f := x.last(); f != nil {
		lastTS, lastPhy = f.endTimestamp(), f.endPhyOffset()
	}
	hash := javaKeyHash(key)
	n := 0
	for i := len(x.files) - 1; i >= 0 && n < maxNum; i-- {
		f := x.files[i]
		if f.empty() {
			continue
		}
		if f.timeMatched(begin, end) {
			// The key's hash slot may lie in a hole page, and on tmpfs a
			// read of one faults when the disk is full: such a slot holds
			// no entry, so the fault only ends this file's lookup.
			_ = GuardFault(func() {
				f.lookup(hash, begin, end, func(phy int64) bool {
					if accept(phy) {
						n++
					}
					return n < maxNum
				})
			})
		}
		if f.beginTimestamp() < begin {
			break
		}
	}
	return lastTS, lastPhy, nil
}

// deleteBelow takes off the list the index files (never the newest) whose
// entries all point below minPhy (Java IndexService.deleteExpiredFile), once
// background flushes are done. The caller unmaps and removes them.
func (x *indexService) deleteBelow(minPhy int64) []*mappedFile {
	x.syncs.Wait()
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*mappedFile
	for len(x.files) > 1 && x.files[0].endPhyOffset() < minPhy {
		out = append(out, x.files[0].mf)
		x.files = slices.Clone(x.files[1:])
	}
	return out
}

// populate maps b writable (populateWrite) on a goroutine counted in
// x.syncs, in steps of indexPrefaultAhead, each a short hold of the
// mapping's lock; a refused step ends it.
func (x *indexService) populate(b []byte) {
	x.syncs.Add(1)
	go func() {
		defer x.syncs.Done()
		for len(b) > 0 {
			n := min(len(b), indexPrefaultAhead)
			if populateWrite(b[:n]) != nil {
				return
			}
			b = b[n:]
		}
	}()
}

// close waits for background flushes, then flushes and unmaps every file.
func (x *indexService) close() error {
	if x == nil {
		return nil
	}
	x.syncs.Wait()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	var errs []error
	if f := x.last(); f != nil {
		errs = append(errs, f.mf.sync(0, f.mf.size()))
	}
	errs = append(errs, x.closeFiles())
	return errors.Join(errs...)
}

func (x *indexService) closeFiles() error {
	var errs []error
	for _, f := range x.files {
		errs = append(errs, f.mf.close())
	}
	x.files = nil
	return errors.Join(errs...)
}

// openIndexAndCatchUp opens the index after recovery and indexes every record
// between where the index ends and the dispatch position, so that later
// records go through addRecord in the dispatcher. Recovery itself
// does not index: the index may lag the consume queues (it is not part of
// the checkpoint) and must be filled in commitlog order.
func (s *Store) openIndexAndCatchUp() error {
	if s.opts.Index.Disabled {
		return nil
	}
	x, err := openIndex(s.opts.FS, s.opts.Dir, s.opts.Index, s.opts.Clock.Now, s.log)
	if err != nil {
		return err
	}
	to := s.reput.Load()
	from, err := x.resumeFrom(s.cl.minOffset(), s.cl.maxOffset.Load())
	if err != nil {
		x.close()
		return err
	}
	var records int64
	for from < to {
		batch, next, err := s.readRecords(from, to, nil, false)
		if err != nil {
			s.log.Error().Err(err).Int64("from", from).Msg("index: catch-up cannot read the commitlog")
			break
		}
		for i := range batch {
			if err := x.addRecord(&batch[i], false); err != nil {
				// The consume queues are ahead of the index; it takes the
				// records from here on and lacks the keys of the rest of
				// the catch-up span (queries by key miss them).
				s.log.Error().Err(err).Int64("phyOffset", batch[i].PhysicalOffset).Msg("index: catch-up stopped, disk full")
				from = to
				break
			}
		}
		records += int64(len(batch))
		if next <= from || from >= to {
			break
		}
		from = next
	}
	if records > 0 {
		s.log.Info().Int64("records", records).Int64("to", to).Msg("index: caught up with the commitlog")
	}
	s.index = x
	return nil
}

// QueryResult is what QueryMessage found.
type QueryResult struct {
	// Messages are raw stored records in commitlog order (a QUERY_MESSAGE
	// response body is their concatenation).
	Messages [][]byte
	// IndexLastUpdateTimestamp and IndexLastUpdatePhyOffset are the store
	// time and commitlog offset of the newest indexed message.
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64
}

// QueryMessage finds up to maxNum (at most MaxQueryMessages) messages of
// topic whose UNIQ_KEY or one of whose KEYS words is key, stored within
// [begin, end] (ms; the index keeps store times to the second). Unlike Java,
// hash collisions are filtered here: every returned record really has the
// topic and key.
func (s *Store) QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	res := &QueryResult{}
	if s.index == nil {
		return res, nil
	}
	maxNum = min(max(maxNum, 1), MaxQueryMessages)
	seen := make(map[int64]bool)
	lastTS, lastPhy, err := s.index.lookup(topic+"#"+key, maxNum, begin, end, func(phy int64) bool {
		if seen[phy] {
			return false
		}
		seen[phy] = true
		rec, err := s.LookMessageByOffset(phy)
		if err != nil || !recordHasKey(rec, topic, key) {
			return false
		}
		res.Messages = append(res.Messages, rec)
		return true
	})
	if err != nil {
		return nil, err
	}
	res.IndexLastUpdateTimestamp, res.IndexLastUpdatePhyOffset = lastTS, lastPhy
	slices.SortFunc(res.Messages, func(a, b []byte) int {
		pa, pb := recordPhyOffset(a), recordPhyOffset(b)
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	return res, nil
}

// recordHasKey reports whether the record is of topic and has key as its
// UNIQ_KEY or as one of its KEYS words.
func recordHasKey(rec []byte, topic, key string) bool {
	l, err := message.ParseLayout(rec)
	if err != nil || l.Topic(rec) != topic {
		return false
	}
	props := l.Props(rec)
	if u, ok := props.Lookup(message.PropUniqKey); ok && u == key {
		return true
	}
	keys, _ := props.Lookup(message.PropKeys)
	for _, k := range strings.Split(keys, message.KeySeparator) {
		if k == key {
			return true
		}
	}
	return false
}

func recordPhyOffset(rec []byte) int64 {
	return int64(binary.BigEndian.Uint64(rec[message.PosPhysicalOffset:]))
}

// IndexStats reports the number of index files and of keys that could not
// be indexed.
func (s *Store) IndexStats() (files int, failures int64) {
	if s.index == nil {
		return 0, 0
	}
	s.index.mu.RLock()
	defer s.index.mu.RUnlock()
	return len(s.index.files), s.index.failures
}

// truncateDurably is TruncateTo's step 4: it drops every entry at or above
// off (resumeFrom's repair, which Open also runs against the commitlog
// end), msyncs the newest file left, deletes files left empty and syncs
// the directory. The dispatcher must not run (TruncateTo holds its lock).
func (x *indexService) truncateDurably(off int64) error {
	x.syncs.Wait() // no background flush or populate works on a file that goes
	x.mu.Lock()
	defer x.mu.Unlock()
	removed := false
	for f := x.last(); f != nil; f = x.last() {
		if f.empty() || f.endPhyOffset() >= off {
			if err := GuardFault(func() { f.truncateFrom(off) }); err != nil {
				return err
			}
		} else {
			break
		}
		if !f.empty() {
			if err := f.mf.sync(0, f.mf.size()); err != nil {
				return err
			}
			break
		}
		if err := f.mf.remove(); err != nil {
			return err
		}
		x.files = x.files[:len(x.files)-1]
		removed = true
	}
	if removed {
		return syncDir(x.fs, x.dir)
	}
	return nil
}

// syncAll msyncs every index file (Open, after the repair of an
// interrupted truncation, before the marker goes).
func (x *indexService) syncAll() error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.files {
		if err := f.mf.sync(0, f.mf.size()); err != nil {
			return err
		}
	}
	return syncDir(x.fs, x.dir)
}
