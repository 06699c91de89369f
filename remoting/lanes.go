package remoting

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Lanes are the stock broker's per-kind executors (BrokerController:
// sendMessageExecutor with its sendThreadPoolQueue, pullMessageExecutor, …)
// for the request codes whose queueing time the stock broker watches
// (BrokerFastFailure). A lane runs at most Workers of its requests at once on
// the worker pool; a request that finds them all busy waits in the lane's
// FIFO, stamped with ServerOptions.LaneClock when the event loop decoded it, and
// past Capacity waiting it is refused at once with SYSTEM_BUSY [OVERLOAD]
// (stock: the executor's RejectedExecutionException). So is a request whose
// body would take the bodies waiting in all lanes past the server's
// in-flight budget limit (serverMaxInflightBytes): a queue of sends of 4 MiB
// each must not grow without a memory bound, where stock's only bound is
// the count.
//
// What "waited in a queue" means here: the time from the event loop
// decoding the frame to a lane worker starting it. Requests served inline on
// the event loop (InlineHandler) never wait, so they never expire; a pooled
// request of a code with no lane starts at once or is refused [OVERLOAD],
// as before. Nothing here blocks the event loop: queueing is an append under
// the lane's mutex, which no one holds across a handler.
//
// Serving inline is a shortcut for a request the lane would start at once:
// while a lane is full (every worker busy, or requests waiting), a request
// of its codes that the InlineHandler would take goes to the lane instead,
// so that it waits behind the others, expires or is refused [OVERLOAD] as
// on the stock broker, whose every send and pull goes through its
// executor. The event loop tells with one atomic load (lane.full).
//
// The owner expires waiting requests with ExpireWaiting and DrainWaiting
// (the broker runs them every 10 ms, as stock's BrokerFastFailure), and
// reads each lane's length for its metrics (LaneStats).

// Lane configures one lane.
type Lane struct {
	// Name identifies the lane (ExpireWaiting) and labels its length
	// (rocketmq_processor_watermark's processor label).
	Name string
	// Codes are the request codes served on the lane.
	Codes []int32
	// Workers is how many of its requests run at once (at least 1).
	Workers int
	// Capacity is how many may wait; 0 or less is 1.
	Capacity int
}

// LaneStat is a lane's state for metrics.
type LaneStat struct {
	Name    string
	Waiting int           // requests waiting for a worker
	Running int           // requests being served
	Oldest  time.Duration // how long the head has waited (0: none waits)
}

// waiting is a request in a lane's FIFO.
type waiting struct {
	c   *Conn
	cmd *Command
	at  int64 // server clock, unix ns, when the event loop decoded it
}

// lane is a Lane with its state.
type lane struct {
	Lane
	mu      sync.Mutex
	running int
	q       []waiting // q[head:] wait, oldest first
	head    int
	// full is running >= Workers or a request waiting, set under mu by
	// every change of either (sync); the event loop reads it without mu.
	full atomic.Bool
}

func (l *lane) size() int { return len(l.q) - l.head }

// sync refreshes l.full; l.mu is held.
func (l *lane) sync() { l.full.Store(l.running >= l.Workers || l.size() > 0) }

// push appends w; l.mu is held.
func (l *lane) push(w waiting) {
	if l.head > 0 && l.head == len(l.q) {
		l.q, l.head = l.q[:0], 0
	} else if l.head > 64 && l.head*2 >= len(l.q) {
		// Slide the live part down instead of growing forever.
		n := copy(l.q, l.q[l.head:])
		clear(l.q[n:])
		l.q, l.head = l.q[:n], 0
	}
	l.q = append(l.q, w)
}

// pop removes the head; l.mu is held.
func (l *lane) pop() (waiting, bool) {
	if l.head == len(l.q) {
		return waiting{}, false
	}
	w := l.q[l.head]
	l.q[l.head] = waiting{}
	l.head++
	return w, true
}

// newLanes builds the lanes and the code-to-lane table.
func newLanes(specs []Lane) ([]*lane, map[int32]*lane, error) {
	var out []*lane
	byCode := map[int32]*lane{}
	for _, sp := range specs {
		if sp.Workers < 1 {
			sp.Workers = 1
		}
		if sp.Capacity < 1 {
			sp.Capacity = 1
		}
		l := &lane{Lane: sp}
		for _, code := range sp.Codes {
			if _, dup := byCode[code]; dup {
				return nil, nil, fmt.Errorf("remoting: code %d is on two lanes", code)
			}
			byCode[code] = l
		}
		out = append(out, l)
	}
	return out, byCode, nil
}

// overloadRemark is the stock answer of an executor that refuses a task.
const overloadRemark = "[OVERLOAD]system busy, start flow control for a while"

// refuseOverload answers cmd SYSTEM_BUSY [OVERLOAD] and releases it.
func refuseOverload(c *Conn, cmd *Command) {
	if !cmd.IsOneway() {
		c.WriteResponse(NewResponse(cmd, SystemBusy, overloadRemark))
	}
	cmd.release()
}

// enqueue serves cmd on lane l: on a new lane worker when one is free,
// else at the end of its FIFO. It runs on the event loop and never waits.
func (s *Server) enqueue(l *lane, c *Conn, cmd *Command) {
	l.mu.Lock()
	if l.running < l.Workers {
		l.running++
		l.sync()
		l.mu.Unlock()
		if s.pool.Submit(func() { s.runLane(l, c, cmd) }) == nil {
			return
		}
		// The shared pool is full: wait in the lane if a worker of it
		// runs (it takes the FIFO next), else refuse.
		l.mu.Lock()
		l.running--
		l.sync()
		if l.running == 0 {
			l.mu.Unlock()
			refuseOverload(c, cmd)
			return
		}
	}
	full := l.size() >= l.Capacity
	if n := int64(len(cmd.Body)); !full {
		if total := s.waitingBytes.Add(n); s.maxInflight > 0 && total > s.maxInflight {
			s.waitingBytes.Add(-n)
			full = true
		}
	}
	if full {
		l.mu.Unlock()
		refuseOverload(c, cmd)
		return
	}
	l.push(waiting{c: c, cmd: cmd, at: s.opts.LaneClock.Now().UnixNano()})
	l.sync()
	l.mu.Unlock()
}

// unwait is called for each request leaving a lane's FIFO.
func (s *Server) unwait(w waiting) { s.waitingBytes.Add(-int64(len(w.cmd.Body))) }

// runLane serves cmd, then whatever waits in l, until l's FIFO is empty.
func (s *Server) runLane(l *lane, c *Conn, cmd *Command) {
	for {
		s.serve(c, cmd)
		l.mu.Lock()
		w, ok := l.pop()
		if !ok {
			l.running--
		}
		l.sync()
		l.mu.Unlock()
		if !ok {
			return
		}
		s.unwait(w)
		c, cmd = w.c, w.cmd
	}
}

// laneByName returns the lane called name, or nil.
func (s *Server) laneByName(name string) *lane {
	for _, l := range s.lanes {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// ExpireWaiting answers SYSTEM_BUSY, with remark(waited, left), to the
// requests at the head of lane name that have waited maxWait or longer as of
// now, oldest first, stopping at the first younger one (stock
// BrokerFastFailure.cleanExpiredRequestInQueue); left is the number still
// waiting after the request is removed. It returns how many it answered.
func (s *Server) ExpireWaiting(name string, maxWait time.Duration, now time.Time, remark func(waited time.Duration, left int) string) int {
	return s.expire(name, now, remark, func(waited time.Duration) bool { return waited >= maxWait })
}

// DrainWaiting answers SYSTEM_BUSY, with remark(waited, left), to every
// request waiting in lane name (stock: the send queue while the page cache
// is busy, [PCBUSY_CLEAN_QUEUE]).
func (s *Server) DrainWaiting(name string, now time.Time, remark func(waited time.Duration, left int) string) int {
	return s.expire(name, now, remark, func(time.Duration) bool { return true })
}

func (s *Server) expire(name string, now time.Time, remark func(time.Duration, int) string, due func(time.Duration) bool) int {
	l := s.laneByName(name)
	if l == nil {
		return 0
	}
	n := 0
	for {
		l.mu.Lock()
		if l.size() == 0 {
			l.mu.Unlock()
			return n
		}
		waited := max(time.Duration(now.UnixNano()-l.q[l.head].at), 0)
		if !due(waited) {
			l.mu.Unlock()
			return n
		}
		w, _ := l.pop()
		left := l.size()
		l.sync()
		l.mu.Unlock()
		s.unwait(w)
		if !w.cmd.IsOneway() {
			w.c.WriteResponse(NewResponse(w.cmd, SystemBusy, remark(waited, left)))
		}
		w.cmd.release()
		n++
	}
}

// LaneStats reports every lane, in ServerOptions.Lanes order, as of now.
func (s *Server) LaneStats(now time.Time) []LaneStat {
	out := make([]LaneStat, 0, len(s.lanes))
	for _, l := range s.lanes {
		l.mu.Lock()
		st := LaneStat{Name: l.Name, Waiting: l.size(), Running: l.running}
		if st.Waiting > 0 {
			st.Oldest = max(time.Duration(now.UnixNano()-l.q[l.head].at), 0)
		}
		l.mu.Unlock()
		out = append(out, st)
	}
	return out
}
