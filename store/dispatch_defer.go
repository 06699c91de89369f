package store

import (
	"errors"
	"math"
	"sync"
	"time"
)

// Records whose consume-queue file does not exist yet.
//
// A queue's first unit, and the first unit of each later file, needs a new
// file: a directory and a file created, sized and mapped. Java creates it on
// the reput thread (ConsumeQueue.putMessagePositionInfo →
// MappedFileQueue.getLastMappedFile), so every other queue waits meanwhile;
// on a disk whose metadata operations are slow (a journal commit discarding
// a deleted segment's blocks) the first messages of a 1 024-queue topic
// stalled all dispatch here for up to 1.9 s, the timer queue's included:
// every timer due meanwhile was delivered that late.
//
// The running dispatcher hands the creation to the creator goroutine and
// goes on with the records after it. The record waits in its queue's
// deferral, with every later record of the same queue (units are written in
// queue order), until the file exists; it is then written and OnDispatch
// called, in the same dispatcher pass order as any record. Its keys are
// indexed when it is read, in commitlog order as the index requires.
//
//	commitlog:  ... | A0 | B7 | A1 | T3 | B8 | ...      (A: new queue)
//	                  ^deferred  ^deferred
//	dispatched:       B7, T3, B8 at once; A0, A1 once A's file exists
//	reput:            stays at A0 until then
//
// reput (every record below it is dispatched: the checkpoint, WaitDispatched,
// retention and the page release read it) stays at the oldest deferred
// record; the dispatcher reads on from its own cursor. A file that cannot be
// created stalls dispatch as any failed unit does (puts are refused), and is
// tried again every dispatchRetryInterval. Open's recovery pass, which runs
// before the creator, creates files in place.

// defaultMaxDeferred bounds the records waiting for files (a store's
// Options.maxDeferred, lowered by tests): past it the dispatcher waits for
// the creations, as it did before there was a creator (a queue taking
// 100 000 msg/s while its file takes seconds to create would otherwise
// hold them all in memory).
const defaultMaxDeferred = 1 << 16

// deferral is a queue's records waiting for its file.
type deferral struct {
	q     *consumeQueue
	start int64 // byte offset of the file asked for
	recs  []pendingDispatch
	// asked: the creator has the request; err: its last attempt failed, at
	// failedAt.
	asked    bool
	err      error
	failedAt time.Time
}

// fileCreator creates consume-queue files for the dispatcher, one at a time
// (files of one topic share a parent directory, whose updates the kernel
// serialises anyway).
type fileCreator struct {
	wake func() // the dispatcher's

	mu    sync.Mutex
	reqs  []*deferral
	done  []createResult
	busy  bool
	idle  *sync.Cond
	kick  chan struct{}
	stop  chan struct{}
	ended chan struct{}
}

type createResult struct {
	d   *deferral
	err error
}

func newFileCreator(wake func()) *fileCreator {
	c := &fileCreator{wake: wake, kick: make(chan struct{}, 1), stop: make(chan struct{}), ended: make(chan struct{})}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// ask queues the creation of d's file.
func (c *fileCreator) ask(d *deferral) {
	d.asked = true
	c.mu.Lock()
	c.reqs = append(c.reqs, d)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// results takes the outcomes of finished creations.
func (c *fileCreator) results() []createResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.done
	c.done = nil
	return out
}

// waitIdle waits until every request asked so far has its outcome.
func (c *fileCreator) waitIdle() {
	c.mu.Lock()
	for c.busy || len(c.reqs) > 0 {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

func (c *fileCreator) run() {
	defer close(c.ended)
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		for {
			c.mu.Lock()
			if len(c.reqs) == 0 {
				c.busy = false
				c.idle.Broadcast()
				c.mu.Unlock()
				break
			}
			d := c.reqs[0]
			c.reqs = c.reqs[1:]
			c.busy = true
			c.mu.Unlock()
			err := d.q.addFile(d.start)
			c.mu.Lock()
			c.done = append(c.done, createResult{d: d, err: err})
			c.mu.Unlock()
			c.wake()
		}
	}
}

func (c *fileCreator) close() {
	close(c.stop)
	<-c.ended
}

// deferRecord adds d to df, its queue's deferral: its keys are indexed now,
// in commitlog order; its unit and OnDispatch wait for the file.
func (s *Store) deferRecord(df *deferral, d *pendingDispatch) error {
	if err := s.indexRecord(d); err != nil {
		return err
	}
	df.recs = append(df.recs, *d)
	s.deferredRecs++
	return nil
}

// askFile opens a deferral for queue k (q) and asks the creator for the
// file of its unit idx.
func (s *Store) askFile(k queueKey, q *consumeQueue, idx int64) *deferral {
	df := &deferral{q: q, start: q.fileStart(idx)}
	s.deferred[k] = df
	s.creator.ask(df)
	return df
}

// resolveDeferred writes the units of every queue whose file now exists and
// calls OnDispatch for them, asks again for files whose creation failed
// dispatchRetryInterval ago, and returns the error of a deferral still
// failing (nil when none is).
func (s *Store) resolveDeferred() (failing error) {
	if s.creator == nil {
		return nil
	}
	if s.deferredRecs >= s.opts.maxDeferred {
		s.creator.waitIdle()
	}
	for _, r := range s.creator.results() {
		r.d.asked = false
		r.d.err = nil
		if r.err != nil && !errors.Is(r.err, errQueueDestroyed) {
			// Kept until an attempt succeeds: dispatch stays stalled.
			r.d.err, r.d.failedAt = r.err, time.Now()
			s.stats.dispatchErrors.Add(1)
			s.log.Error().Err(r.err).Str("topic", r.d.q.topic).Int32("queueId", r.d.q.queueID).Msg("dispatch: cannot create a consume queue file; its records wait")
		}
	}
	resolved := false
	for k, df := range s.deferred {
		if df.err != nil && (df.asked || time.Since(df.failedAt) < dispatchRetryInterval) {
			// Still failing; its retry comes later. A deferral retried now
			// reports only what this attempt finds: one whose records all
			// went through must not stall dispatch (it then stayed stalled
			// with nothing left to dispatch, and puts refused for good).
			failing = df.err
			continue
		} else if df.asked {
			continue
		}
		n := 0
		for ; n < len(df.recs); n++ {
			d := &df.recs[n]
			skipped := false
			if hasUnit(d.SysFlag) {
				q, err := s.putUnit(&d.DispatchRequest, false)
				if err == errMultiSkipped {
					skipped, err = true, nil
				}
				if err == errNoFile {
					// The first file, one after a roll, or a retry.
					df.q, df.start = q, q.fileStart(d.QueueOffset)
					s.creator.ask(df)
					break
				}
				if err != nil {
					df.err, df.failedAt = err, time.Now()
					failing = err
					break
				}
			}
			df.err = nil
			if s.opts.OnDispatch != nil && !skipped {
				s.opts.OnDispatch(d.DispatchRequest)
			}
			resolved = true
		}
		df.recs = df.recs[n:]
		s.deferredRecs -= n
		if len(df.recs) == 0 && !df.asked {
			delete(s.deferred, k)
		}
	}
	if resolved {
		s.dispatchBatchDone()
	}
	return failing
}

// dispatchBounded dispatches d unless maxDeferred records wait already: it
// then waits for the creations asked for first, and when a file still
// cannot be created and as many records still wait, it returns that error
// without dispatching d: the dispatcher stalls there, as it did before
// there was a creator, instead of holding every record behind in memory.
// at is the commitlog offset of the record that failed.
func (s *Store) dispatchBounded(d *pendingDispatch) (at int64, err error) {
	if s.deferredRecs >= s.opts.maxDeferred {
		if err := s.resolveDeferred(); err != nil && s.deferredRecs >= s.opts.maxDeferred {
			return s.oldestDeferred(), err
		}
	}
	return d.PhysicalOffset, s.dispatch(d)
}

// oldestDeferred is the commitlog offset of the oldest record waiting for a
// file (MaxInt64 when none is).
func (s *Store) oldestDeferred() int64 {
	oldest := int64(math.MaxInt64)
	for _, df := range s.deferred {
		if len(df.recs) > 0 {
			oldest = min(oldest, df.recs[0].PhysicalOffset)
		}
	}
	return oldest
}

// publishDispatched moves reput to the cursor, or to the oldest deferred
// record below it.
func (s *Store) publishDispatched() {
	s.reput.Store(min(s.cursor, s.oldestDeferred()))
}

// settleDeferred is the dispatcher's last act: it waits for the creations
// asked for and writes what they allow. Records whose file could not be
// created stay below reput, so the checkpoint keeps them for recovery.
func (s *Store) settleDeferred() {
	if s.creator == nil {
		return
	}
	for len(s.deferred) > 0 {
		s.creator.waitIdle()
		if err := s.resolveDeferred(); err != nil {
			s.log.Error().Err(err).Int64("reput", s.oldestDeferred()).Msg("dispatch: stopping with records whose consume queue file could not be created; recovery dispatches them at the next start")
			break
		}
		asked := false
		for _, df := range s.deferred {
			asked = asked || df.asked
		}
		if !asked {
			break
		}
	}
	s.publishDispatched()
	s.creator.close()
}
