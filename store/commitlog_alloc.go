package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// Ahead allocation of commitlog segments (Java's AllocateMappedFileService).
//
// Creating a segment truncates it to full size, fallocates it, fsyncs it and
// its directory: milliseconds of disk waits that no writer should take,
// least of all one serving a send on a remoting event loop. So when a
// segment becomes the newest, the allocator goroutine is asked for the one
// after it; a roll then only takes the ready file. A writer that finds the
// next segment not ready yet (a burst faster than the disk) gets
// ErrWouldBlock from appendLocked and waits in awaitWritable, outside
// Store.putMu; an inline put gives up there instead (PutMessageInline).
//
// The allocator also zeroes and syncs the first bytes of the new file, as
// the warmer would after the roll (commitlog_warm.go), so that the writer's
// first records there do not wait for the warmer. It does so only once the
// writer comes within the warmer's reach of the new file (or waits for it):
// zeros written into a file that is never used (the store closes first) are
// work the warmer alone would not have done. A writer already waiting for
// the file (the first put of a new store, or a burst that outran the
// allocator) waits for one warm-up chunk only, not for the warmer's whole
// reach (warmer.prewarm).
//
// The ready file already carries its final name, so a crash at any step of
// its creation leaves at most one file past the newest segment in use:
// empty, short or full of zeros. Loading accepts such a newest file
// (checkSegments), and recovery removes it because it starts past the end
// (dropFilesAfter after a clean shutdown, truncateTail otherwise).
type segmentAllocator struct {
	cl   *commitLog
	reqs chan *allocRequest
	stop chan struct{}

	mu  sync.Mutex
	cur *allocRequest // the segment after the newest one; nil: none asked for

	// beforeCreate, when set (Options.BeforeSegmentCreate), runs on the
	// allocator goroutine before it creates the segment starting at start.
	beforeCreate func(start int64)
	// zeros is the buffer of warmer.prewarm, made on first use.
	zeros []byte
}

// allocRequest is one segment asked for; f and err are set before done is
// closed and never change afterwards.
type allocRequest struct {
	start  int64
	done   chan struct{}
	f      *mappedFile
	err    error
	warmed int64 // bytes from f's start past which the warmer has nothing to do (warmer.prewarm)

	// wanted is closed (under segmentAllocator.mu, once: isWanted) when
	// the writer waits for the segment: its warm-up starts at once then.
	wanted   chan struct{}
	isWanted bool
}

func newSegmentAllocator(cl *commitLog, beforeCreate func(int64)) *segmentAllocator {
	return &segmentAllocator{cl: cl, reqs: make(chan *allocRequest, 1), stop: make(chan struct{}), beforeCreate: beforeCreate}
}

// request asks for the segment starting at start unless that is already
// asked for, and returns the request. The previous request, if it is for
// another start, must have been taken (ready) or failed.
func (a *segmentAllocator) request(start int64) *allocRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur != nil && a.cur.start == start {
		return a.cur
	}
	r := &allocRequest{start: start, done: make(chan struct{}), wanted: make(chan struct{})}
	a.cur = r
	// Requests are made one at a time by the put path (or Open) after the
	// previous one completed, so the buffered slot is free while the
	// allocator runs.
	select {
	case a.reqs <- r:
	case <-a.stop:
	}
	return r
}

// ready reports whether the segment starting at start can be taken without
// waiting, asking for it if nobody has. A failed allocation is forgotten
// (the next call asks again) and its error returned. Store.putMu must be held.
func (a *segmentAllocator) ready(start int64) (bool, error) {
	r := a.request(start)
	select {
	case <-r.done:
	default:
		a.want(r)
		return false, nil
	}
	if r.err != nil {
		a.mu.Lock()
		if a.cur == r {
			a.cur = nil
		}
		a.mu.Unlock()
		return false, r.err
	}
	return true, nil
}

// take returns the segment starting at start, which ready reported, and
// asks for the one after it. Store.putMu must be held.
func (a *segmentAllocator) take(start int64) (*mappedFile, error) {
	a.mu.Lock()
	r := a.cur
	a.mu.Unlock()
	if r == nil || r.start != start {
		return nil, fmt.Errorf("store: commitlog file %s taken before it was ready", segmentName(start))
	}
	<-r.done // closed: ready said so
	if r.err != nil {
		return nil, r.err
	}
	if a.cl.warm != nil {
		a.cl.warm.took(start, r.warmed)
	}
	a.request(start + a.cl.fileSize)
	return r.f, nil
}

// wait returns once the segment starting at start is created (or its
// creation failed), or the allocator stopped. It returns at once when the
// pending request is for another segment: the one asked for was taken
// meanwhile (requests are made one after the other), and the writer finds
// it listed when it tries again.
func (a *segmentAllocator) wait(start int64) {
	a.mu.Lock()
	r := a.cur
	a.mu.Unlock()
	if r == nil || r.start != start {
		return
	}
	a.want(r)
	select {
	case <-r.done:
	case <-a.stop:
	}
}

// want marks r as waited for by the writer.
func (a *segmentAllocator) want(r *allocRequest) {
	a.mu.Lock()
	if !r.isWanted {
		r.isWanted = true
		close(r.wanted)
	}
	a.mu.Unlock()
}

// run creates the requested segments until stop is closed.
func (a *segmentAllocator) run() {
	for {
		select {
		case r := <-a.reqs:
			if a.beforeCreate != nil {
				a.beforeCreate(r.start)
			}
			began := time.Now() // real time: the slow-step log below
			r.f, r.err = a.cl.createSegment(r.start)
			a.logSlow("create", r.start, began)
			if r.err == nil && a.cl.warm != nil {
				if !a.cl.warm.awaitNear(r.start, r.wanted, a.stop) {
					close(r.done) // stopping: close unmaps r.f
					return
				}
				if a.zeros == nil {
					a.zeros = make([]byte, min(warmWriteMapped, a.cl.fileSize))
				}
				waited := false
				select {
				case <-r.wanted:
					waited = true
				default:
				}
				began = time.Now()
				r.warmed = a.cl.warm.prewarm(r.f, a.zeros, waited)
				a.logSlow("warm up", r.start, began)
			}
			close(r.done)
		case <-a.stop:
			return
		}
	}
}

// logSlow logs a step of a segment's creation that took longer than
// slowWriterWait: a writer reaching the segment meanwhile waits for it.
func (a *segmentAllocator) logSlow(step string, start int64, began time.Time) {
	if took := time.Since(began); took > slowWriterWait {
		a.cl.log.Warn().Dur("took", took).Str("file", segmentName(start)).Str("step", step).
			Msg("commitlog: slow creation of the next file")
	}
}

// close unmaps a created segment nobody took (it stays on disk; the next
// Open's recovery keeps or removes it). The goroutine must have stopped.
func (a *segmentAllocator) close() error {
	a.mu.Lock()
	r := a.cur
	a.cur = nil
	a.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
		if r.f != nil {
			return r.f.close()
		}
	default:
	}
	return nil
}

// createSegment creates and maps the segment file starting at start.
func (c *commitLog) createSegment(start int64) (*mappedFile, error) {
	f, err := createMappedFile(c.fs, filepath.Join(c.dir, segmentName(start)), start, c.fileSize, c.prealloc)
	if err != nil {
		return nil, fmt.Errorf("store: create commitlog file %s: %w", segmentName(start), err)
	}
	c.log.Info().Str("file", f.path).Msg("commitlog file created")
	return f, nil
}
