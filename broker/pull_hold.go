package broker

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// heldPull is a parked long-polling pull.
type heldPull struct {
	conn    *remoting.Conn
	req     *remoting.Command
	topic   string
	queueID int32
	// offset is the queue offset the client asked for: any message at or past
	// it that passes match ends the wait.
	offset int64
	match  func(tagsCode int64) bool
	// matchProps, when set, also decides on the new message's properties
	// (a SQL92 filter; Java's isMatchedByCommitLog in notifyMessageArriving).
	matchProps func(message.Props) bool
	deadline   time.Time
	heapIdx    int
}

type queueKey struct {
	topic   string
	queueID int32
}

// PullRequestHoldService parks pulls that found nothing until a message for
// their queue arrives or their hold time ends. Arrivals come from the store's
// dispatch (notify); one goroutine sleeps until the earliest deadline. Every
// held pull is in exactly one per-queue waiter list and in the deadline heap,
// and leaves both together, so it is answered at most once.
type PullRequestHoldService struct {
	clock clock.Clock
	log   zerolog.Logger
	// wake re-runs a pull; it is called on a waker goroutine (or a fresh
	// one), never under mu.
	wake func(*heldPull)
	// wakeq feeds the wakers, long-lived goroutines that run wake: a
	// goroutine per re-run costs its creation and the growth of its new
	// stack, as deep as a pull's read (morestack and copystack took 3 % of
	// the broker's CPU delivering timers). wakersOn is set while they run
	// (from start to shutdown).
	wakeq    chan *heldPull
	wakersOn atomic.Bool
	wakers   sync.WaitGroup

	mu      sync.Mutex
	queues  map[queueKey][]*heldPull
	byDue   holdHeap
	stopped bool

	kick    chan struct{} // capacity 1: the earliest deadline changed
	quit    chan struct{}
	done    chan struct{}
	running bool
}

func newPullRequestHoldService(clk clock.Clock, log zerolog.Logger, wake func(*heldPull)) *PullRequestHoldService {
	return &PullRequestHoldService{
		clock: clk, log: log, wake: wake,
		queues: make(map[queueKey][]*heldPull),
		kick:   make(chan struct{}, 1),
		wakeq:  make(chan *heldPull, holdWakeQLen),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// Wakers and the queue they take re-runs from. A waker runs one re-run at
// a time, and a re-run may read the disk, so there are a few; when all are
// busy and the queue is full, a re-run gets a goroutine of its own.
const (
	holdWakers   = 4
	holdWakeQLen = 256
)

// start runs the deadline goroutine and the wakers.
func (s *PullRequestHoldService) start() {
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	for range holdWakers {
		s.wakers.Add(1)
		go s.waker()
	}
	s.wakersOn.Store(true)
	go s.run()
}

// waker re-runs the pulls queued by wakeOne until shutdown.
func (s *PullRequestHoldService) waker() {
	defer s.wakers.Done()
	for {
		select {
		case hp := <-s.wakeq:
			s.wake(hp)
		case <-s.quit:
			return
		}
	}
}

// wakeOne hands hp, taken out of the service, to a waker, or to a
// goroutine of its own when none runs or all are busy and their queue is
// full.
func (s *PullRequestHoldService) wakeOne(hp *heldPull) {
	if s.wakersOn.Load() {
		select {
		case s.wakeq <- hp:
			return
		default:
		}
	}
	go s.wake(hp)
}

// shutdown stops the deadline goroutine and drops every held pull unanswered
// (their connections are closing with the server).
func (s *PullRequestHoldService) shutdown() {
	s.mu.Lock()
	running := s.running
	s.running = false
	s.stopped = true
	s.queues = make(map[queueKey][]*heldPull)
	s.byDue = nil
	s.mu.Unlock()
	if running {
		s.wakersOn.Store(false)
		close(s.quit)
		<-s.done
		s.wakers.Wait()
	}
}

// suspend parks hp. A message may have been dispatched between the pull's
// read of the store and this call, with nobody waiting for it yet; so after
// parking, maxOffset is read again and a queue already past hp.offset wakes
// hp at once (the re-run then finds the message, or skips filtered ones).
func (s *PullRequestHoldService) suspend(hp *heldPull, maxOffset func(topic string, queueID int32) int64) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	key := queueKey{hp.topic, hp.queueID}
	s.queues[key] = append(s.queues[key], hp)
	heap.Push(&s.byDue, hp)
	earliest := s.byDue[0] == hp
	s.mu.Unlock()
	if earliest {
		s.poke()
	}
	if maxOffset(hp.topic, hp.queueID) > hp.offset && s.take(hp) {
		s.wakeOne(hp)
	}
}

func (s *PullRequestHoldService) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// notify reports that the queue now holds messages below maxOffset, the
// newest with tagsCode and props. Waiters behind maxOffset whose filter
// accepts the tag (and the properties) wake; the rest keep waiting. Called in the store's dispatcher
// (possibly on an event loop): it only takes the lock briefly and never runs a pull itself.
func (s *PullRequestHoldService) notify(topic string, queueID int32, maxOffset, tagsCode int64, props message.Props) {
	s.wakeAll(s.collect(topic, queueID, maxOffset, tagsCode, props, nil))
}

// collect is notify without the wake-up: the waiters notify would wake are
// taken out of the service and appended to woken, for wakeAll to wake later
// (the broker does so once per dispatch batch). A taken waiter is answered
// only by whoever holds it, so it must be passed to wakeAll.
func (s *PullRequestHoldService) collect(topic string, queueID int32, maxOffset, tagsCode int64, props message.Props, woken []*heldPull) []*heldPull {
	key := queueKey{topic, queueID}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.queues[key]
	if len(list) == 0 {
		return woken
	}
	n := len(woken)
	var keep []*heldPull
	for _, hp := range list {
		if maxOffset > hp.offset && hp.match(tagsCode) && (hp.matchProps == nil || hp.matchProps(props)) {
			heap.Remove(&s.byDue, hp.heapIdx)
			woken = append(woken, hp)
		} else {
			keep = append(keep, hp)
		}
	}
	if len(woken) > n {
		s.setQueueLocked(key, keep)
	}
	return woken
}

// wakeAll re-runs each pull collect took (wakeOne).
func (s *PullRequestHoldService) wakeAll(woken []*heldPull) {
	for _, hp := range woken {
		s.wakeOne(hp)
	}
}

// dropConn forgets every pull held for c (the client is gone).
func (s *PullRequestHoldService) dropConn(c *remoting.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, list := range s.queues {
		keep := list[:0:0]
		for _, hp := range list {
			if hp.conn == c {
				heap.Remove(&s.byDue, hp.heapIdx)
			} else {
				keep = append(keep, hp)
			}
		}
		if len(keep) != len(list) {
			s.setQueueLocked(key, keep)
		}
	}
}

// take removes hp if it is still held; false means someone else woke it.
func (s *PullRequestHoldService) take(hp *heldPull) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeLocked(hp)
}

func (s *PullRequestHoldService) takeLocked(hp *heldPull) bool {
	key := queueKey{hp.topic, hp.queueID}
	list := s.queues[key]
	for i, x := range list {
		if x == hp {
			keep := make([]*heldPull, 0, len(list)-1)
			keep = append(keep, list[:i]...)
			keep = append(keep, list[i+1:]...)
			s.setQueueLocked(key, keep)
			heap.Remove(&s.byDue, hp.heapIdx)
			return true
		}
	}
	return false
}

func (s *PullRequestHoldService) setQueueLocked(key queueKey, list []*heldPull) {
	if len(list) == 0 {
		delete(s.queues, key)
		return
	}
	s.queues[key] = list
}

// held is the number of parked pulls.
func (s *PullRequestHoldService) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byDue)
}

// run wakes pulls whose hold time ended. It sleeps until the earliest
// deadline, or until suspend parks a pull due earlier than that.
func (s *PullRequestHoldService) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		now := s.clock.Now()
		var expired []*heldPull
		for len(s.byDue) > 0 && !s.byDue[0].deadline.After(now) {
			hp := s.byDue[0]
			s.takeLocked(hp)
			expired = append(expired, hp)
		}
		wait := time.Duration(-1)
		if len(s.byDue) > 0 {
			wait = s.byDue[0].deadline.Sub(now)
		}
		s.mu.Unlock()
		for _, hp := range expired {
			s.wakeOne(hp)
		}

		var timer clock.Timer
		var fire <-chan time.Time
		if wait >= 0 {
			timer = s.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-fire:
		case <-s.kick:
		case <-s.quit:
			if timer != nil {
				timer.Stop()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// holdHeap orders held pulls by deadline.
type holdHeap []*heldPull

func (h holdHeap) Len() int           { return len(h) }
func (h holdHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h holdHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *holdHeap) Push(x any) {
	hp := x.(*heldPull)
	hp.heapIdx = len(*h)
	*h = append(*h, hp)
}
func (h *holdHeap) Pop() any {
	old := *h
	n := len(old)
	hp := old[n-1]
	old[n-1] = nil
	hp.heapIdx = -1
	*h = old[:n-1]
	return hp
}
