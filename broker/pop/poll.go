package pop

import (
	"sync"
	"time"
)

// MaxPolling is popPollingSize: parked pops beyond it answer POLLING_FULL.
const MaxPolling = 1024

// poll is one parked POP_MESSAGE or NOTIFICATION.
type poll struct {
	topics []string // arrivals on any of these wake it
	key    string   // topic@group@qid, for POLLING_INFO
	wake   chan struct{}
	exited chan struct{} // closed once the request is no longer parked
}

// pollTable parks long-polling requests until a message arrives on one of
// their topics (Notify, from the store's dispatch), an orderly queue is
// unblocked, or their poll time ends. Each parked request has a goroutine
// sleeping on the service clock; rerun answers it.
type pollTable struct {
	s       *Service
	mu      sync.Mutex
	byTopic map[string]map[*poll]struct{}
	byKey   map[string]int
	n       int
	stopped bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

func newPollTable(s *Service) *pollTable {
	return &pollTable{s: s, byTopic: make(map[string]map[*poll]struct{}), byKey: make(map[string]int), quit: make(chan struct{})}
}

// park holds a request for at most d. rerun(final) re-runs it and reports
// whether it answered; final=true (time is up) must answer. nil: the table
// is full or shutting down, nothing was parked.
//
// done, when not nil, ends the wait without a re-run (a caller that gave
// up); a re-run already under way finishes first (poll.exited).
func (t *pollTable) park(topics []string, key string, d time.Duration, done <-chan struct{}, rerun func(final bool) bool) *poll {
	p := &poll{topics: topics, key: key, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	// The timer runs from before the request is counted as parked, so a
	// clock that moves once the count shows it (a test's manual clock)
	// cannot slip in before the deadline exists.
	timer := t.s.clock.NewTimer(d)
	t.mu.Lock()
	if t.stopped || t.n >= MaxPolling {
		t.mu.Unlock()
		timer.Stop()
		return nil
	}
	t.n++
	t.byKey[key]++
	for _, topic := range topics {
		m := t.byTopic[topic]
		if m == nil {
			m = make(map[*poll]struct{})
			t.byTopic[topic] = m
		}
		m[p] = struct{}{}
	}
	t.wg.Add(1)
	t.mu.Unlock()
	// A message may have arrived between the caller's read and the parking:
	// look once more.
	p.wake <- struct{}{}
	go func() {
		defer t.wg.Done()
		defer close(p.exited)
		defer t.remove(p)
		for {
			select {
			case <-t.quit:
				timer.Stop()
				return
			case <-done:
				timer.Stop()
				return
			case <-timer.C():
				rerun(true)
				return
			case <-p.wake:
				if rerun(false) {
					timer.Stop()
					return
				}
			}
		}
	}()
	return p
}

func (t *pollTable) remove(p *poll) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, topic := range p.topics {
		if m := t.byTopic[topic]; m != nil {
			delete(m, p)
			if len(m) == 0 {
				delete(t.byTopic, topic)
			}
		}
	}
	t.n--
	if t.byKey[p.key]--; t.byKey[p.key] <= 0 {
		delete(t.byKey, p.key)
	}
}

// arrived wakes every request parked on topic.
func (t *pollTable) arrived(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := range t.byTopic[topic] {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// count is POLLING_INFO's pollingNum for key.
func (t *pollTable) count(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[key]
}

// shutdown drops every parked request unanswered (their connections close
// with the server) and waits for re-runs in progress.
func (t *pollTable) shutdown() {
	t.mu.Lock()
	if !t.stopped {
		t.stopped = true
		close(t.quit)
	}
	t.mu.Unlock()
	t.wg.Wait()
}
