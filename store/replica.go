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
// record. The slave copies each chunk into its mapping at exactly the
// master's offset, but publishes (maxOffset, which readers, the dispatcher
// and the flushers trust) only up to the end of the last complete record
// or BLANK in it: the published commitlog never ends inside a record, as
// on a master, and the existing dispatcher builds consume queues and the
// index from the replicated records as it does from local puts. replEnd is
// the end of the bytes copied in, published or not; the slave reports it
// to the master and the next chunk must start there.
//
// A crash loses only the unpublished tail (never flushed, so recovery
// zeroes whatever of it reached the disk as a torn record) and the slave
// then reports its recovered end, from which the master streams again.
// A store fed by AppendReplicated must take no puts (a SLAVE refuses
// them): a put would write over the unpublished tail.

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

// ReplicaEnd is where the next replicated bytes must start: the end of the
// bytes AppendReplicated copied in, published or not (at least the
// commitlog end). A slave reports it to its master.
func (s *Store) ReplicaEnd() int64 {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	return max(s.replEnd, s.cl.maxOffset.Load())
}

// AppendReplicated writes b, commitlog bytes a master read at off, at off
// in this store's commitlog and publishes the complete records among what
// is now there (see above). off must be ReplicaEnd, or, on a store with
// no commitlog file yet, the start of any file (a master streams a new
// slave its newest file only). b must not run past the end of the file
// holding off: master and slave files have the same size. It returns the
// new ReplicaEnd.
//
// Like a put, it never waits for the disk while holding the put lock; it
// waits (outside it) for the next file's creation, and is refused, having
// written nothing, on a full disk or a stalled dispatch.
func (s *Store) AppendReplicated(off int64, b []byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if err := s.writeRefused(false); err != nil {
		return 0, err
	}
	for {
		end, err := s.appendReplicatedOnce(off, b)
		if err == nil || !errors.Is(err, ErrWouldBlock) {
			return end, err
		}
		s.cl.awaitWritable(err)
	}
}

func (s *Store) appendReplicatedOnce(off int64, b []byte) (int64, error) {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	c := s.cl
	cur := max(s.replEnd, c.maxOffset.Load())
	empty := c.last() == nil
	switch {
	case empty && cur == 0 && off%c.fileSize == 0:
		// A new slave: its commitlog starts where the master's stream does.
		cur = off
	case off != cur:
		return cur, fmt.Errorf("%w: master offset %d, slave %d", ErrReplicaOffset, off, cur)
	}
	if len(b) == 0 {
		return cur, nil
	}
	f := c.last()
	if f == nil || cur >= f.end() {
		if ok, err := c.segmentReady(cur - cur%c.fileSize); !ok {
			if err == nil {
				err = &waitSegmentError{start: cur - cur%c.fileSize}
			}
			return cur, err
		}
		f = nil
	}
	if int64(len(b)) > c.fileSize-cur%c.fileSize {
		return cur, fmt.Errorf("%w: %d replicated bytes at %d cross a %d-byte commitlog file boundary (master and slave file sizes differ?)",
			ErrCorrupt, len(b), off, c.fileSize)
	}
	direct := s.directAppend()
	if c.warm != nil && !c.warm.tryReserve(cur, cur+int64(len(b)), direct) {
		return cur, errWaitWarm
	}
	if f == nil {
		var err error
		if f, err = c.roll(cur); err != nil {
			return cur, err
		}
		if empty {
			// Nothing below the first file: dispatch starts at it.
			s.dispatchMu.Lock()
			s.cursor = max(s.cursor, cur)
			s.reput.Store(max(s.reput.Load(), cur))
			s.dispatchMu.Unlock()
			c.maxOffset.Store(cur)
			c.flushedOffset.Store(max(c.flushedOffset.Load(), cur))
		}
	}
	rel := cur - f.start
	var err error
	if direct {
		err = pwriteAt(f, b, rel)
	} else {
		err = GuardFault(func() { copy(f.data[rel:], b) })
	}
	if err != nil {
		return cur, err
	}
	s.replEnd = cur + int64(len(b))
	from := c.maxOffset.Load()
	pub := publishableEnd(f, from, s.replEnd)
	if pub > from {
		c.maxOffset.Store(pub)
		s.stats.putBytes.Add(pub - from)
		s.noteWritten(int(pub - from))
		s.wakeDispatcher()
	}
	return s.replEnd, nil
}

// publishableEnd is the end of the complete records and BLANK fillers of
// f from from (a record boundary) up to to (both in f, or to at f's end).
// A record whose header does not frame is published with everything
// after it: the dispatcher skips what does not parse (counted and logged),
// as it would skip it after a restart, instead of holding every later
// record back.
func publishableEnd(f *mappedFile, from, to int64) int64 {
	to = min(to, f.end())
	p := from
	for to-p >= 8 {
		rel := p - f.start
		size := int64(int32(binary.BigEndian.Uint32(f.data[rel:])))
		magic := binary.BigEndian.Uint32(f.data[rel+4:])
		switch {
		case magic == BlankMagicCode:
			if f.end() > to {
				return p // the filler runs to the file end, not here yet
			}
			return f.end()
		case size < message.MinRecordLength || (magic != message.MagicCodeV1 && magic != message.MagicCodeV2) || p+size > f.end():
			return to
		case p+size > to:
			return p
		}
		p += size
	}
	return p
}
