package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rmqio/rmq/message"
)

// Replication support (package store/ha): the master reads its commitlog
// as bytes, the slave appends those bytes to its own.
//
// A master streams raw commitlog bytes in chunks that end where its file
// ends or where its batch size does, so a chunk usually ends inside a
// record. The slave keeps the bytes of a record not complete yet in memory
// (replPending, at most one record or BLANK filler) and copies into its
// commitlog, at exactly the master's offsets, only complete records and
// fillers, publishing them as a put does: the commitlog never holds a torn
// record of the master's (a torn record whose missing tail is properties
// passes recovery's checks, which cover the body only), and the existing
// dispatcher builds consume queues and the index from the replicated
// records as it does from local puts. ReplicaEnd is the published end plus
// the pending bytes; the slave reports it and the next chunk must start
// there.
//
// A crash loses only the pending bytes; the slave then reports its
// recovered end, from which the master streams again. A store fed by
// AppendReplicated must take no puts (a SLAVE refuses them).

// ErrReplicaOffset is AppendReplicated's refusal of bytes that do not
// start where the slave's replicated bytes end (stock HAClient's "master
// pushed offset not equal the max phy offset in slave").
var ErrReplicaOffset = errors.New("store: replicated bytes do not start at the slave's commitlog end")

// CommitLogFileSize is the size of every commitlog file (Java
// mappedFileSizeCommitLog); master and slave must agree on it.
func (s *Store) CommitLogFileSize() int64 { return s.cl.fileSize }

// ReadCommitLog copies into p the published commitlog bytes from off up to
// the end of the file holding off (Java CommitLog.getData): at most
// len(p) bytes, never across a file boundary, so a BLANK filler is read as
// the file holds it. It returns 0 and an ErrNotFound when off is not below
// the commitlog end or no longer in a file. The copy is made under the
// commitlog's read lock, which the caller does not hold while it writes the
// bytes to a socket.
func (s *Store) ReadCommitLog(off int64, p []byte) (int, error) {
	n := 0
	err := s.cl.read(off, func(b []byte) error {
		n = copy(p, b)
		return nil
	})
	return n, err
}

// ReplicaEnd is where the next replicated bytes must start: the
// commitlog end plus the bytes AppendReplicated holds of a record not
// complete yet. A slave reports it to its master.
func (s *Store) ReplicaEnd() int64 {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	return s.replicaEndLocked()
}

func (s *Store) replicaEndLocked() int64 {
	if len(s.replPending) > 0 {
		return s.replBase + int64(len(s.replPending))
	}
	return s.cl.maxOffset.Load()
}

// AppendReplicated takes b, commitlog bytes a master read at off, and
// writes the complete records among the bytes it now holds at their
// offsets in this store's commitlog (see above). off must be ReplicaEnd,
// or, on a store with no commitlog file yet, the start of any file (a
// master streams a new slave its newest file only). b must not run past
// the end of the file holding off: master and slave files have the same
// size. It returns the new ReplicaEnd.
//
// Like a put, it never waits for the disk while holding the put lock; it
// waits (outside it) for the next file's creation, and is refused, having
// taken nothing, on a full disk or a stalled dispatch.
func (s *Store) AppendReplicated(off int64, b []byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if err := s.writeRefused(false); err != nil {
		return 0, err
	}
	s.putMu.Lock()
	defer s.putMu.Unlock()
	end, err := s.takeReplicated(off, b)
	if err != nil {
		return end, err
	}
	for {
		err = s.publishReplicated()
		if err == nil || !errors.Is(err, ErrWouldBlock) {
			return end, err
		}
		s.putMu.Unlock()
		s.cl.awaitWritable(err)
		s.putMu.Lock()
		if s.closed.Load() {
			return end, ErrClosed
		}
	}
}

// takeReplicated checks off and appends b to the pending bytes. Store.putMu
// is held.
func (s *Store) takeReplicated(off int64, b []byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	c := s.cl
	cur := s.replicaEndLocked()
	switch {
	case c.last() == nil && cur == 0 && off%c.fileSize == 0:
		// A new slave: its commitlog starts where the master's stream does.
		cur = off
	case off != cur:
		return cur, fmt.Errorf("%w: master offset %d, slave %d", ErrReplicaOffset, off, cur)
	}
	if len(s.replPending) == 0 {
		s.replBase = cur
	}
	if used := s.replBase%c.fileSize + int64(len(s.replPending)); int64(len(b)) > c.fileSize-used {
		return cur, fmt.Errorf("%w: %d replicated bytes at %d cross a %d-byte commitlog file boundary (master and slave file sizes differ?)",
			ErrCorrupt, len(b), off, c.fileSize)
	}
	if limit := s.maxReplicaPending(); len(s.replPending)+len(b) > limit {
		// A record (or filler) this long is no master's: a broken stream
		// must not grow the buffer to a file's size.
		return cur, fmt.Errorf("%w: the replicated record at %d is not complete after %d bytes (limit %d)",
			ErrCorrupt, s.replBase, len(s.replPending)+len(b), limit)
	}
	s.replPending = append(s.replPending, b...)
	return cur + int64(len(b)), nil
}

// maxReplicaPending bounds the bytes of one incomplete replicated record
// or filler: twice the largest message body a put takes, plus room for a
// master configured with a larger one.
func (s *Store) maxReplicaPending() int { return 64<<20 + 2*s.opts.MaxMessageSize }

// publishReplicated writes the complete records and fillers at the head
// of the pending bytes into the commitlog and publishes them. Store.putMu
// is held; an ErrWouldBlock leaves everything as it was.
func (s *Store) publishReplicated() error {
	c := s.cl
	base := s.replBase
	n := publishable(s.replPending, base, c.fileSize)
	if n == 0 {
		return nil
	}
	f := c.last()
	empty := f == nil
	if f == nil || base >= f.end() {
		start := base - base%c.fileSize
		if ok, err := c.segmentReady(start); !ok {
			if err == nil {
				err = &waitSegmentError{start: start}
			}
			return err
		}
		f = nil
	}
	direct := s.directAppend()
	if c.warm != nil && !c.warm.tryReserve(base, base+int64(n), direct) {
		return errWaitWarm
	}
	if f == nil {
		var err error
		if f, err = c.roll(base); err != nil {
			return err
		}
		if empty {
			// Nothing below the first file: dispatch starts at it.
			s.dispatchMu.Lock()
			s.cursor = max(s.cursor, base)
			s.reput.Store(max(s.reput.Load(), base))
			s.dispatchMu.Unlock()
			c.maxOffset.Store(base)
			c.flushedOffset.Store(max(c.flushedOffset.Load(), base))
		}
	}
	p := s.replPending[:n]
	rel := base - f.start
	var err error
	if direct {
		err = pwriteAt(f, p, rel)
	} else {
		err = GuardFault(func() { copyHeadersLast(f.data[rel:], p) })
	}
	if err != nil {
		return err
	}
	if s.opts.afterReplicaCopy != nil {
		s.opts.afterReplicaCopy()
	}
	s.followReplicated(p)
	c.maxOffset.Store(base + int64(n))
	rest := copy(s.replPending, s.replPending[n:])
	s.replPending = s.replPending[:rest]
	s.replBase = base + int64(n)
	s.stats.putBytes.Add(int64(n))
	s.noteWritten(n)
	s.wakeDispatcher()
	if s.opts.FlushDiskType == SyncFlush {
		// Under SYNC_FLUSH nothing else wakes the group-commit flusher for
		// these bytes (no put waits for them); each batch is synced as
		// Java's GroupCommitService syncs what arrives without a request.
		select {
		case s.flushWake <- struct{}{}:
		default:
		}
	}
	return nil
}

// copyHeadersLast copies p, the complete records and fillers publishable
// framed, into dst (the mapping) one record at a time, each record's
// first 8 bytes (size and magic) stored after the rest of it.
//
// One copy of the whole batch is not safe against a kill: Go's memmove
// (amd64, AVX, over 256 bytes) stores the middle of the range first and
// its first 32 and last 128 bytes last. A SIGKILL during that loop left
// the batch's first record without its header and the records after it
// whole; recovery took the headerless record for a damaged span, zeroed
// it and recovered past it, to records never published: the slave came
// back with a record of zeros below its end, and a hole in a queue
// (TestKill9DuringReplicationRecoversToARecord, ~2 runs in 100; recovery
// counted corruptRegions 1, skippedBytes the first record's size). A
// kill between the head and the tail stores could also leave a record
// whose last bytes, properties only, are missing, which recovery's body
// CRC passes. Stored this way, after a kill every record before the one
// being copied is whole, that one either is whole or has no header (a
// torn tail recovery clears), and nothing after it is written.
func copyHeadersLast(dst, p []byte) { copyInOrder(dst, p, copyBytes) }

// copyInOrder is copyHeadersLast with its copy given (a test records the
// calls and models a kill inside each).
func copyInOrder(dst, p []byte, mv func(dst, src []byte)) {
	for i := 0; i < len(p); {
		n := len(p) - i
		if n > 8 {
			size := int(int32(binary.BigEndian.Uint32(p[i:])))
			magic := binary.BigEndian.Uint32(p[i+4:])
			if (magic == message.MagicCodeV1 || magic == message.MagicCodeV2) && size > 8 && size < n {
				n = size
			}
			// A filler runs to the end of p (its file's end), and bytes
			// that do not frame are copied with everything after them.
			mv(dst[i+8:i+n], p[i+8:i+n])
		}
		mv(dst[i:i+min(n, 8)], p[i:i+min(n, 8)])
		i += n
	}
}

func copyBytes(dst, src []byte) { copy(dst, src) }

// publishable is how many bytes at the head of p, commitlog bytes from
// base, are complete records or a BLANK filler that reaches its file's
// end. A record whose header does not frame is published with everything
// after it: the dispatcher skips what does not parse (counted and logged),
// as it would after a restart, instead of holding every later record back.
func publishable(p []byte, base, fileSize int64) int {
	fileEnd := base - base%fileSize + fileSize
	i := 0
	for len(p)-i >= 8 {
		at := base + int64(i)
		size := int64(int32(binary.BigEndian.Uint32(p[i:])))
		magic := binary.BigEndian.Uint32(p[i+4:])
		switch {
		case magic == BlankMagicCode:
			if rest := fileEnd - at; int64(len(p)-i) >= rest {
				return i + int(rest)
			}
			return i // the filler runs to the file end, not here yet
		case size < message.MinRecordLength || (magic != message.MagicCodeV1 && magic != message.MagicCodeV2) || at+size > fileEnd:
			return len(p)
		case int64(len(p)-i) < size:
			return i
		}
		i += int(size)
	}
	return i
}

// followReplicated moves the next queue offsets past the records in p
// (complete records and fillers being published), as the master's puts
// moved its own: each queue's next offset follows the replicated records,
// and those of the queues a record names in INNER_MULTI_DISPATCH follow
// their recorded offsets. Recovery rebuilds the table from the consume
// queues, so without this a slave's table stayed empty until a restart;
// a store that takes puts after replication (SetSlave(false): a slave
// promoted in place) would have given its first message of every queue
// offset 0 again. Prepared and rollback records get no unit and move no
// offset (hasUnit); what does not parse is left, as the dispatcher skips
// it. Store.putMu is held.
func (s *Store) followReplicated(p []byte) {
	be := binary.BigEndian
	if s.replNames == nil {
		s.replNames = make(topicNames)
	}
	for i := 0; len(p)-i >= 8; {
		if be.Uint32(p[i+message.PosMagic:]) == BlankMagicCode {
			return
		}
		l, err := message.ParseLayout(p[i:])
		if err != nil {
			return
		}
		rec := p[i : i+l.Total]
		i += l.Total
		if !hasUnit(l.SysFlag) {
			continue
		}
		k := queueKey{s.replNames.get(rec[l.TopicPos : l.TopicPos+l.TopicLen]), int32(be.Uint32(rec[message.PosQueueID:]))}
		s.queueOffsets[k] = max(s.queueOffsets[k], int64(be.Uint64(rec[message.PosQueueOffset:]))+1)
		if !s.opts.EnableMultiDispatch {
			continue
		}
		names, offs, _ := multiTargets(l.Props(rec))
		for j, name := range names {
			if off, ok := multiOffset(name, offs[j]); ok {
				mk := s.multiKey(name, k.queueID)
				s.queueOffsets[mk] = max(s.queueOffsets[mk], off+1)
			}
		}
	}
}
