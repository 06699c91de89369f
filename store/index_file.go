package store

import (
	"encoding/binary"
	"fmt"

	"github.com/rmqio/rmq/internal/mmap"
	"github.com/rmqio/rmq/message"
)

// Index files: <Dir>/index/<yyyyMMddHHmmssSSS of creation>, Java's IndexFile
// layout (big-endian), sized by IndexOptions (Java defaults: 5 000 000 slots,
// 20 000 000 entries, 420 000 040 bytes, sparse):
//
//	 0 +------------------------------+
//	   | beginTimestamp  int64        |  store time of entry 1
//	 8 | endTimestamp    int64        |  store time of the newest entry
//	16 | beginPhyOffset  int64        |
//	24 | endPhyOffset    int64        |  commitlog offset of the newest entry
//	32 | hashSlotCount   int32        |  slots in use
//	36 | indexCount      int32        |  next entry number (starts at 1)
//	40 +------------------------------+
//	   | slot[HashSlotNum]   int32    |  newest entry number of the bucket, 0 = none
//	   +------------------------------+
//	   | entry[MaxIndexNum]  20 bytes |  entry 0 unused:
//	   |   keyHash   int32            |    abs(Java String.hashCode("topic#key"))
//	   |   phyOffset int64            |    the record
//	   |   timeDiff  int32            |    (store time - beginTimestamp) / 1000
//	   |   prevIndex int32            |    next older entry of the bucket, 0 = end
//	   +------------------------------+
//
// Keys are the UNIQ_KEY and every space-separated KEYS word of a message,
// prefixed with "topic#"; bucket = keyHash % HashSlotNum.
const (
	indexHeaderSize = 40
	indexSlotSize   = 4
	indexEntrySize  = 20

	// Header fields.
	ihBeginTimestamp = 0
	ihEndTimestamp   = 8
	ihBeginPhyOffset = 16
	ihEndPhyOffset   = 24
	ihHashSlotCount  = 32
	ihIndexCount     = 36

	// Entry fields.
	ieKeyHash  = 0
	iePhy      = 4
	ieTimeDiff = 12
	iePrev     = 16

	// indexInvalid is the entry number no entry has: an empty slot, the end
	// of a chain. Entry numbers start at 1.
	indexInvalid = 0
)

// indexFileSize is the byte size of an index file with the given geometry.
func indexFileSize(slots, entries int) int64 {
	return indexHeaderSize + int64(slots)*indexSlotSize + int64(entries)*indexEntrySize
}

// indexFile is one fixed-size hash index over a span of the commitlog. The
// header lives in the mapping and is kept up to date after every entry, so a
// killed process leaves a consistent file behind (entry first, then slot,
// then header: a reader of the header never sees a count covering an entry
// that is not written).
type indexFile struct {
	mf      *mappedFile
	slots   int
	entries int // maximum number of entry numbers, entry 0 included
	// released is where the entries written since the last release begin
	// (0: none released yet); see releaseEntries.
	released int64
	// slotsReady is set once the slot table was handed to populate, and
	// readyTo is where the entries populated ahead end (prefault). Both
	// under the service's mutex.
	slotsReady bool
	readyTo    int64
}

// indexKeep bytes of entries stay mapped behind the newest (an eighth of
// the entries of a smaller file), and the entries are released once that
// much more has been written.
const indexKeep = 4 << 20

func (f *indexFile) keep() int64 { return min(indexKeep, int64(f.entries)*indexEntrySize/8) }

// releaseEntries unmaps the entry pages more than keep behind end, the
// byte after the newest entry, once keep more has been written since
// the last pass (mmap.Release, as the commitlog does behind its writer:
// commitlog_release.go). Entries are appended in order, so without this an
// index file's resident pages grew by 20 bytes per key, 200 MB at ten
// million messages. Each pass sweeps from the first entry, so pages a
// lookup mapped back go again too; the slot table (random writes, at most
// HashSlotNum × 4 bytes) stays mapped. Failure only costs memory.
func (f *indexFile) releaseEntries(end int64) {
	if f.released == 0 {
		f.released = f.entryPos(0)
	}
	keep := f.keep()
	if end-keep-f.released < keep {
		return
	}
	upTo := (end - keep) &^ (pageSize - 1)
	_ = mmap.ReleasePages(f.mf.data, f.entryPos(0), upTo)
	f.released = upTo
}

// Prefaulting: a key writes a slot at random in the slot table (20 MB at
// the default geometry) and an entry after the newest. The first touch of a
// page of this sparse file is a read fault then a write fault that
// reserves its block (page_mkwrite), on the put's path, often the event
// loop: in workload 4 of bench/compare (200 000 keys) the index took 47 % of
// the broker's 25 800 page faults, 2.4 % of its CPU. Once a file has taken
// indexPrefaultAfter entries (a broker with traffic, not a test's handful of
// messages, which keeps its sparse file), the slot table and then up to
// indexPrefaultAhead bytes of entries at a time (a quarter of what
// releaseEntries keeps mapped behind the newest) are mapped writable on a
// goroutine (populateWrite): one system call, no trap per page. The kernel
// still zeroes and reserves each page there (that CPU stays, and the slot
// table is dirty as a whole, 20 MB written back once per file); what leaves
// the put's path is the trap pairs and the wait for the filesystem.
const (
	indexPrefaultAfter = 1024
	indexPrefaultAhead = 1 << 20
)

// prefault returns the ranges of f to populate now that it holds count()
// entries, and marks them handed out: the slot table once, then the
// entries from the newest one's page to prefaultAhead past it whenever
// fewer than half of that lies populated ahead.
func (f *indexFile) prefault() (ranges [][]byte) {
	n := f.count()
	if n-1 < indexPrefaultAfter {
		return nil
	}
	if !f.slotsReady {
		f.slotsReady = true
		ranges = append(ranges, f.mf.data[:f.entryPos(0)])
	}
	end, size, ahead := f.entryPos(n), f.mf.size(), f.prefaultAhead()
	if f.readyTo < size && f.readyTo-end < ahead/2 {
		from := max(f.readyTo, end) &^ (pageSize - 1)
		to := min(from+ahead, size)
		ranges = append(ranges, f.mf.data[from:to])
		f.readyTo = to
	}
	return ranges
}

// prefaultAhead is how many bytes of entries prefault populates at a time.
func (f *indexFile) prefaultAhead() int64 {
	return max(pageSize, min(indexPrefaultAhead, f.keep()/4)&^(pageSize-1))
}

func (f *indexFile) u64(at int64) int64 { return int64(binary.BigEndian.Uint64(f.mf.data[at:])) }
func (f *indexFile) u32(at int64) int32 { return int32(binary.BigEndian.Uint32(f.mf.data[at:])) }
func (f *indexFile) put64(at, v int64)  { binary.BigEndian.PutUint64(f.mf.data[at:], uint64(v)) }
func (f *indexFile) put32(at int64, v int32) {
	binary.BigEndian.PutUint32(f.mf.data[at:], uint32(v))
}

func (f *indexFile) beginTimestamp() int64 { return f.u64(ihBeginTimestamp) }
func (f *indexFile) endTimestamp() int64   { return f.u64(ihEndTimestamp) }
func (f *indexFile) beginPhyOffset() int64 { return f.u64(ihBeginPhyOffset) }
func (f *indexFile) endPhyOffset() int64   { return f.u64(ihEndPhyOffset) }

// count is the header's indexCount: the next entry number. A fresh file has
// count 1 (a zero header reads as 1).
func (f *indexFile) count() int32 { return max(f.u32(ihIndexCount), 1) }

// empty reports whether no entry has been added.
func (f *indexFile) empty() bool { return f.count() <= 1 }

func (f *indexFile) full() bool { return int(f.count()) >= f.entries }

func (f *indexFile) slotPos(hash int32) int64 {
	return indexHeaderSize + int64(int(hash)%f.slots)*indexSlotSize
}

func (f *indexFile) entryPos(n int32) int64 {
	return indexHeaderSize + int64(f.slots)*indexSlotSize + int64(n)*indexEntrySize
}

// indexEntry is one decoded entry.
type indexEntry struct {
	hash     int32
	phy      int64
	timeDiff int32 // seconds after the header's beginTimestamp
	prev     int32
}

func (f *indexFile) entry(n int32) indexEntry {
	p := f.entryPos(n)
	return indexEntry{hash: f.u32(p + ieKeyHash), phy: f.u64(p + iePhy), timeDiff: f.u32(p + ieTimeDiff), prev: f.u32(p + iePrev)}
}

// add appends an entry for a key hash. The caller checked !full().
func (f *indexFile) add(hash int32, phy, storeTimestamp int64) {
	n := f.count()
	sp := f.slotPos(hash)
	head := f.u32(sp)
	if head <= indexInvalid || head >= n {
		head = indexInvalid
	}
	if n == 1 {
		f.put64(ihBeginPhyOffset, phy)
		f.put64(ihBeginTimestamp, storeTimestamp)
	}
	diff := (storeTimestamp - f.beginTimestamp()) / 1000
	if f.beginTimestamp() <= 0 || diff < 0 {
		diff = 0
	} else if diff > 1<<31-1 {
		diff = 1<<31 - 1
	}
	p := f.entryPos(n)
	f.put32(p+ieKeyHash, hash)
	f.put64(p+iePhy, phy)
	f.put32(p+ieTimeDiff, int32(diff))
	f.put32(p+iePrev, head)
	f.put32(sp, n)
	if head == indexInvalid {
		f.put32(ihHashSlotCount, f.u32(ihHashSlotCount)+1)
	}
	f.put64(ihEndPhyOffset, phy)
	f.put64(ihEndTimestamp, storeTimestamp)
	f.put32(ihIndexCount, n+1)
	f.releaseEntries(p + indexEntrySize)
}

// timeMatched reports whether the file's time span overlaps [begin, end].
func (f *indexFile) timeMatched(begin, end int64) bool {
	b, e := f.beginTimestamp(), f.endTimestamp()
	return (begin <= b && b <= end) || (begin <= e && e <= end) || (b <= begin && end <= e)
}

// lookup walks the chain of hash from the newest entry and calls fn with the
// commitlog offset of each entry whose hash matches and whose (second-exact)
// time lies in [begin, end], until fn returns false. Like Java it stops at an
// entry older than begin: entries of a chain are added in store-time order.
func (f *indexFile) lookup(hash int32, begin, end int64, fn func(phy int64) bool) {
	n := f.count()
	next := f.u32(f.slotPos(hash))
	for steps := int32(0); next > indexInvalid && next < n && steps < n; steps++ {
		e := f.entry(next)
		if e.timeDiff < 0 {
			return
		}
		t := f.beginTimestamp() + int64(e.timeDiff)*1000
		if e.hash == hash && t >= begin && t <= end && !fn(e.phy) {
			return
		}
		if e.prev <= indexInvalid || e.prev >= next || t < begin {
			return
		}
		next = e.prev
	}
}

// check validates the header against the entries it claims: the count is in
// range and the newest entry is the one the header's endPhyOffset names.
func (f *indexFile) check() error {
	n := f.u32(ihIndexCount)
	if n < 0 || int(n) > f.entries {
		return fmt.Errorf("%w: index %s: indexCount %d outside [0, %d]", ErrCorrupt, f.mf.path, n, f.entries)
	}
	if n <= 1 {
		return nil
	}
	if e := f.entry(n - 1); e.phy != f.endPhyOffset() {
		return fmt.Errorf("%w: index %s: entry %d points at %d, header endPhyOffset is %d", ErrCorrupt, f.mf.path, n-1, e.phy, f.endPhyOffset())
	}
	if f.beginPhyOffset() > f.endPhyOffset() {
		return fmt.Errorf("%w: index %s: beginPhyOffset %d after endPhyOffset %d", ErrCorrupt, f.mf.path, f.beginPhyOffset(), f.endPhyOffset())
	}
	return nil
}

// truncateFrom drops every entry pointing at or past phyEnd (the commitlog
// was cut there). Entries are appended in commitlog order, so they are the
// newest ones; undoing them newest first restores each slot's chain head to
// what it was before the entry was added. It returns how many were dropped.
func (f *indexFile) truncateFrom(phyEnd int64) int {
	n := f.count()
	keep := n
	for keep > 1 && f.entry(keep-1).phy >= phyEnd {
		keep--
	}
	dropped := int(n - keep)
	for i := n - 1; i >= keep; i-- {
		e := f.entry(i)
		sp := f.slotPos(e.hash)
		if f.u32(sp) == i {
			f.put32(sp, e.prev)
			if e.prev == indexInvalid {
				f.put32(ihHashSlotCount, max(f.u32(ihHashSlotCount)-1, 0))
			}
		}
		p := f.entryPos(i)
		clear(f.mf.data[p : p+indexEntrySize])
	}
	if dropped == 0 {
		return 0
	}
	f.put32(ihIndexCount, keep)
	if keep <= 1 {
		clear(f.mf.data[:ihHashSlotCount])
		return dropped
	}
	last := f.entry(keep - 1)
	f.put64(ihEndPhyOffset, last.phy)
	f.put64(ihEndTimestamp, f.beginTimestamp()+int64(last.timeDiff)*1000)
	return dropped
}

// javaKeyHash is Java's abs(key.hashCode()) as IndexFile computes it: the
// absolute value of the UTF-16 String hash, 0 for Integer.MIN_VALUE.
func javaKeyHash(key string) int32 {
	return indexHash(message.HashAppend(0, key))
}

// topicKeyHash is javaKeyHash(topic + "#" + key), without building the key.
func topicKeyHash(topic, key string) int32 {
	return indexHash(message.HashAppend(message.HashAppend(message.HashAppend(0, topic), "#"), key))
}

// indexHash is the slot hash of a key whose String.hashCode is h:
// Math.abs, with Integer.MIN_VALUE (which stays negative) as 0.
func indexHash(h int32) int32 {
	if h < 0 {
		h = -h // MIN_VALUE stays negative
	}
	if h < 0 {
		return 0
	}
	return h
}
