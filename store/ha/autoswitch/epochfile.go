package autoswitch

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rmqio/rmq/store"
)

// Limits of the epoch file reader. A stock broker appends one entry per
// election it takes part in and its master handshake carries at most
// MaxHandshakeEntries of them, so a real file is a few hundred bytes; the
// limits only stop a corrupt or hostile file from costing memory.
const (
	// MaxEpochFileSize bounds the bytes read from the file (or its .bak).
	MaxEpochFileSize = 1 << 20
	// MaxEpochEntries bounds the entry count line and the lines read.
	MaxEpochEntries = 1 << 15
)

// EpochEntry is one line of the epoch file: from StartOffset on, the
// commitlog was written by the master of Epoch. EndOffset is not stored: it
// is the next entry's StartOffset, or math.MaxInt64 for the last entry
// until SetLastEndOffset bounds it (5.3.3 EpochEntry.endOffset defaults to
// Long.MAX_VALUE, EpochEntry.java:26).
//
// An entry whose next one starts at the same offset is an empty term: its
// master wrote nothing. Epochs strictly increase along a table; start
// offsets only never decrease, so that a master elected after an empty
// term keeps that term's entry next to its own. Stock's appendEntry
// (:104-109) refuses the equal start instead, so a stock master keeps the
// empty term and never records its own epoch; its old master, rejoining
// as a slave, then still finds the empty entry in the handshake table
// (findConsistentPoint matches on epoch and start). An rmq master gives
// such a slave the same match and records its own epoch too. Stock reads
// equal starts as they are (initEntries, :83-92, checks no order).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
	EndOffset   int64
}

// ErrEpochOrder is an append whose epoch is not above the last entry's or
// whose start offset is below the last entry's (EpochFileCache.appendEntry
// :104-109 refuses these, returning false, and an equal start too).
var ErrEpochOrder = errors.New("autoswitch: epoch entry not above the last one")

// errEpochFile marks a file the reader refuses; the caller falls back to
// the .bak.
var errEpochFile = errors.New("autoswitch: bad epoch file")

// EpochFile is the broker's epoch table (5.3.3 EpochFileCache) and the
// file it is kept in, <storePathRootDir>/epochFileCheckpoint. Every change
// rewrites the whole file before the call returns. Its methods are safe
// for concurrent use.
type EpochFile struct {
	mu      sync.RWMutex
	path    string // "" for a table held only in memory (a master's copy)
	fsys    store.FS
	entries []EpochEntry // strictly increasing epochs, non-decreasing starts
}

// NewEpochTable returns a table held only in memory, as a slave builds
// from its master's handshake (EpochFileCache() without a checkpoint).
// Epochs must strictly increase and start offsets never decrease; the
// last one's EndOffset is math.MaxInt64.
func NewEpochTable(entries []EpochEntry) (*EpochFile, error) {
	t := &EpochFile{}
	for _, e := range entries {
		if err := t.check(e.Epoch, e.StartOffset); err != nil {
			return nil, err
		}
		t.push(e.Epoch, e.StartOffset)
	}
	return t, nil
}

// OpenEpochFile loads path (falling back to path.bak, as CheckpointFile.read
// :115-125 does) and returns the table, empty when neither file exists.
// Writes go through fsys (nil: the real file system). Only when both files
// exist and both are refused does it fail.
func OpenEpochFile(fsys store.FS, path string) (*EpochFile, error) {
	f := &EpochFile{path: path, fsys: store.OrOS(fsys)}
	entries, err := readEpochFile(path)
	if err != nil || len(entries) == 0 {
		// Java reads the .bak when the primary throws an IOException or
		// holds no entry (:117-123). rmq also reads it when the primary
		// fails to parse, where Java's NumberFormatException escapes.
		bak, berr := readEpochFile(path + ".bak")
		primaryBad := err != nil && !errors.Is(err, fs.ErrNotExist)
		switch {
		case berr == nil && len(bak) > 0:
			entries = bak
		case berr != nil && !errors.Is(berr, fs.ErrNotExist):
			if primaryBad {
				return nil, errors.Join(err, berr)
			}
			return nil, berr
		case primaryBad:
			// Java would load an empty table here (the .bak is
			// missing or empty), and a slave with an empty table
			// skips truncation: refuse the file instead.
			return nil, err
		default:
			entries = nil // neither file holds an entry
		}
	}
	for _, e := range entries {
		f.push(e.Epoch, e.StartOffset)
	}
	return f, nil
}

// readEpochFile reads one file; a missing file is fs.ErrNotExist.
func readEpochFile(path string) ([]EpochEntry, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxEpochFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxEpochFileSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, errEpochFile, MaxEpochFileSize)
	}
	entries, err := ParseEpochFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, nil
}

// ParseEpochFile parses the bytes of an epoch file as CheckpointFile.read
// (:98-139) and EpochEntrySerializer.fromLine (EpochFileCache.java:317-325)
// do, on a platform whose line separator is "\n":
//   - lines end at "\n", "\r\n" or "\r" (BufferedReader.readLine), and the
//     last line needs no terminator;
//   - line 1 is the entry count, line 2 the checksum (Integer.parseInt);
//   - every further line counts in the checksum, recomputed over the lines
//     each followed by "\n"; a line that does not split on "-" into exactly
//     two fields (String.split drops trailing empty fields) is skipped, but
//     two fields that are not an int and a long make the file unreadable
//     (Java throws);
//   - the entries found must number the count line, and the checksum must
//     match unless it is 0.
//
// rmq also refuses what Java would load into its TreeMap out of order:
// entries whose epochs do not strictly increase or whose start offsets
// decrease (equal starts are empty terms, see EpochEntry).
func ParseEpochFile(data []byte) ([]EpochEntry, error) {
	lines := splitLines(data)
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: %d lines, want the count and checksum", errEpochFile, len(lines))
	}
	count, err := strconv.ParseInt(string(lines[0]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: count line: %v", errEpochFile, err)
	}
	sum, err := strconv.ParseInt(string(lines[1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: checksum line: %v", errEpochFile, err)
	}
	if count < 0 || count > MaxEpochEntries || len(lines)-2 > MaxEpochEntries {
		return nil, fmt.Errorf("%w: %d entries, %d lines (at most %d)", errEpochFile, count, len(lines)-2, MaxEpochEntries)
	}
	crc := crc32.NewIEEE()
	var entries []EpochEntry
	for _, l := range lines[2:] {
		crc.Write(l)
		crc.Write(newline)
		e, ok, err := parseEntry(l)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if n := len(entries); n > 0 && (entries[n-1].Epoch >= e.Epoch || entries[n-1].StartOffset > e.StartOffset) {
			return nil, fmt.Errorf("%w: entry %d-%d not after %d-%d", errEpochFile, e.Epoch, e.StartOffset, entries[n-1].Epoch, entries[n-1].StartOffset)
		}
		entries = append(entries, e)
	}
	if int64(len(entries)) != count {
		return nil, fmt.Errorf("%w: expect %d entries, found %d", errEpochFile, count, len(entries))
	}
	if truth := int64(crc.Sum32() & math.MaxInt32); sum != 0 && sum != truth {
		return nil, fmt.Errorf("%w: checksum %d, entries give %d", errEpochFile, sum, truth)
	}
	for i := range entries {
		entries[i].EndOffset = math.MaxInt64
		if i+1 < len(entries) {
			entries[i].EndOffset = entries[i+1].StartOffset
		}
	}
	return entries, nil
}

var newline = []byte{'\n'}

// splitLines splits data as BufferedReader.readLine does.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
		if len(lines) > MaxEpochEntries+2 {
			break // ParseEpochFile refuses it on the count
		}
	}
	return lines
}

// parseEntry parses one entry line; ok is false for a line Java skips.
func parseEntry(l []byte) (EpochEntry, bool, error) {
	// String.split("-") then drops trailing empty fields.
	fields := bytes.Split(l, []byte{'-'})
	for len(fields) > 0 && len(fields[len(fields)-1]) == 0 {
		fields = fields[:len(fields)-1]
	}
	if len(fields) != 2 {
		return EpochEntry{}, false, nil
	}
	epoch, err := strconv.ParseInt(string(fields[0]), 10, 32)
	if err != nil {
		return EpochEntry{}, false, fmt.Errorf("%w: entry %q: %v", errEpochFile, l, err)
	}
	start, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return EpochEntry{}, false, fmt.Errorf("%w: entry %q: %v", errEpochFile, l, err)
	}
	return EpochEntry{Epoch: int32(epoch), StartOffset: start}, true, nil
}

// FormatEpochFile returns the bytes CheckpointFile.write (:77-96) writes
// for entries on Linux: the count, CRC32 of the entry text & 0x7FFFFFFF
// (UtilAll.crc32, UtilAll.java:298-302), then "epoch-startOffset" per line
// (EpochEntrySerializer.toLine, :308-314), every line ended by "\n".
func FormatEpochFile(entries []EpochEntry) []byte {
	var body []byte
	for _, e := range entries {
		body = strconv.AppendInt(body, int64(e.Epoch), 10)
		body = append(body, '-')
		body = strconv.AppendInt(body, e.StartOffset, 10)
		body = append(body, '\n')
	}
	out := strconv.AppendInt(nil, int64(len(entries)), 10)
	out = append(out, '\n')
	out = strconv.AppendInt(out, int64(crc32.ChecksumIEEE(body)&math.MaxInt32), 10)
	out = append(out, '\n')
	return append(out, body...)
}

// Path is the file the table is kept in ("" for a table in memory).
func (f *EpochFile) Path() string { return f.path }

// check refuses an entry whose epoch is not above the last one's or
// whose start is below it.
func (f *EpochFile) check(epoch int32, start int64) error {
	if n := len(f.entries); n > 0 && (f.entries[n-1].Epoch >= epoch || f.entries[n-1].StartOffset > start) {
		return fmt.Errorf("%w: %d-%d after %d-%d", ErrEpochOrder, epoch, start, f.entries[n-1].Epoch, f.entries[n-1].StartOffset)
	}
	return nil
}

func (f *EpochFile) push(epoch int32, start int64) {
	if n := len(f.entries); n > 0 {
		f.entries[n-1].EndOffset = start
	}
	f.entries = append(f.entries, EpochEntry{Epoch: epoch, StartOffset: start, EndOffset: math.MaxInt64})
}

// Append adds (epoch, startOffset) and rewrites the file (appendEntry
// :101-118). It refuses, with ErrEpochOrder, an epoch not above the last
// entry's or a start offset below it; an equal start leaves the last
// entry as an empty term (see EpochEntry). When the write fails the table
// is unchanged.
func (f *EpochFile) Append(epoch int32, startOffset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(epoch, startOffset); err != nil {
		return err
	}
	next := append(f.clone(), EpochEntry{Epoch: epoch, StartOffset: startOffset, EndOffset: math.MaxInt64})
	if n := len(next); n > 1 {
		next[n-2].EndOffset = startOffset
	}
	return f.commit(next)
}

// clone copies the entries so that a failed write leaves them unchanged.
func (f *EpochFile) clone() []EpochEntry {
	return append(make([]EpochEntry, 0, len(f.entries)+1), f.entries...)
}

// commit writes next and, once it is durable, makes it the table.
func (f *EpochFile) commit(next []EpochEntry) error {
	if err := f.write(next); err != nil {
		return err
	}
	f.entries = next
	return nil
}

// write makes the file hold entries. The durability order:
//
//  1. store.WriteFileAtomic writes the new content to a temporary file
//     and fsyncs it; a crash here leaves the file and its .bak as they
//     were.
//  2. It hard-links the current file as .bak (MixAll.string2File copies it,
//     :218-227: the .bak holds the previous content either way); a crash
//     here leaves the current file, with a .bak equal to it.
//  3. It renames the temporary file over the file and fsyncs the
//     directory: from here the new content is the file and the old one
//     the .bak.
//
// An empty table is the exception: CheckpointFile.write (:78-80) skips an
// empty list, so a Java broker would reload the entries it truncated. rmq
// removes the .bak and then the file (a crash between the two leaves the
// old table, never an older one) and fsyncs the directory; a Java broker
// reads no file as an empty table.
func (f *EpochFile) write(entries []EpochEntry) error {
	if f.path == "" {
		return nil
	}
	if len(entries) > 0 {
		return store.WriteFileAtomic(f.fsys, f.path, FormatEpochFile(entries))
	}
	for _, p := range []string{f.path + ".bak", f.path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	d, err := os.Open(filepath.Dir(f.path))
	if err != nil {
		return err
	}
	err = f.fsys.Sync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Entries returns a copy of the table, oldest first.
func (f *EpochFile) Entries() []EpochEntry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return append([]EpochEntry(nil), f.entries...)
}

// Len is the number of entries.
func (f *EpochFile) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.entries)
}

// FirstEntry returns the oldest entry; ok is false for an empty table.
func (f *EpochFile) FirstEntry() (EpochEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.entries) == 0 {
		return EpochEntry{}, false
	}
	return f.entries[0], true
}

// LastEntry returns the newest entry; ok is false for an empty table.
func (f *EpochFile) LastEntry() (EpochEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.entries) == 0 {
		return EpochEntry{}, false
	}
	return f.entries[len(f.entries)-1], true
}

// LastEpoch is the newest epoch, -1 for an empty table (lastEpoch :161-167).
func (f *EpochFile) LastEpoch() int32 {
	if e, ok := f.LastEntry(); ok {
		return e.Epoch
	}
	return -1
}

// Entry returns the entry of epoch (getEntry :169-180).
func (f *EpochFile) Entry(epoch int32) (EpochEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, e := range f.entries {
		if e.Epoch == epoch {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// FindEpochByOffset returns the entry with StartOffset <= offset <
// EndOffset (findEpochEntryByOffset :182-196).
func (f *EpochFile) FindEpochByOffset(offset int64) (EpochEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, e := range f.entries {
		if e.StartOffset <= offset && offset < e.EndOffset {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// NextEntry returns the first entry whose epoch is above epoch (nextEntry
// :198-209, TreeMap.ceilingEntry(epoch+1)).
func (f *EpochFile) NextEntry(epoch int32) (EpochEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, e := range f.entries {
		if int64(e.Epoch) > int64(epoch) {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// SetLastEndOffset bounds the last entry at end, the commitlog's max
// offset, unless end is below its start (setLastEpochEntryEndOffset
// :123-135). It changes only memory, as stock.
func (f *EpochFile) SetLastEndOffset(end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 && f.entries[n-1].StartOffset <= end {
		f.entries[n-1].EndOffset = end
	}
}

// TruncateSuffixByOffset removes the entries with StartOffset >= offset and
// rewrites the file (truncateSuffixByOffset :258-275). The new last entry's
// EndOffset is math.MaxInt64: stock means the same (:267-270) but sets it
// on a copy, so its table keeps the removed entry's start as the end until
// the next append; the file is the same either way.
func (f *EpochFile) TruncateSuffixByOffset(offset int64) error {
	return f.truncateSuffix(func(e EpochEntry) bool { return e.StartOffset >= offset })
}

// TruncateSuffixByEpoch removes the entries with Epoch >= epoch
// (truncateSuffixByEpoch :250-253).
func (f *EpochFile) TruncateSuffixByEpoch(epoch int32) error {
	return f.truncateSuffix(func(e EpochEntry) bool { return e.Epoch >= epoch })
}

// truncateSuffix removes the newest entries while drop holds and reopens
// the new last entry (both orders are monotone along the table, so the
// dropped entries are a suffix).
func (f *EpochFile) truncateSuffix(drop func(EpochEntry) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.entries)
	for n > 0 && drop(f.entries[n-1]) {
		n--
	}
	if n == len(f.entries) {
		return nil
	}
	next := append(make([]EpochEntry, 0, n+1), f.entries[:n]...)
	if n > 0 {
		next[n-1].EndOffset = math.MaxInt64
	}
	return f.commit(next)
}

// TruncatePrefixByOffset removes the entries with EndOffset <= offset, the
// epochs whose data the commitlog no longer holds (truncatePrefixByOffset
// :280-289).
func (f *EpochFile) TruncatePrefixByOffset(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for i < len(f.entries) && f.entries[i].EndOffset <= offset {
		i++
	}
	if i == 0 {
		return nil
	}
	return f.commit(append([]EpochEntry(nil), f.entries[i:]...))
}

// FindConsistentPoint returns the offset up to which this table and
// master's agree, -1 when they share no epoch with one start offset
// (findConsistentPoint :227-245): from this table's newest entry back, the
// first epoch master holds with the same start offset gives the smaller of
// the two end offsets. Callers bound both last entries first
// (SetLastEndOffset with each side's max offset), as doTruncate does.
func (f *EpochFile) FindConsistentPoint(master *EpochFile) int64 {
	local := f.Entries()
	for i := len(local) - 1; i >= 0; i-- {
		m, ok := master.Entry(local[i].Epoch)
		if ok && m.StartOffset == local[i].StartOffset {
			return min(local[i].EndOffset, m.EndOffset)
		}
	}
	return -1
}
