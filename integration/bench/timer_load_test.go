package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Load generator and raw pull consumer of BenchmarkTimerWheel.

// Properties every benchmark timer message carries besides TIMER_DELIVER_MS:
// its sequence number and its due time (which the delivered copy must also
// carry as TIMER_OUT_MS).
// The message that creates the topic carries timerCreateProp instead.
const (
	timerSeqProp    = "tbseq"
	timerDueProp    = "tbdue"
	timerCreateProp = "tbcreate"
)

// timerPlan spreads n due times over [first, first+window): the window is cut
// into blocks equal slices and message seq falls in slice seq*blocks/n,
// uniformly inside it. Sends go in sequence order, so a slice's messages are
// all sent before the slice begins as long as the send rate exceeds
// n/(blocks·lead) for the first slice and n/(lead+window) overall; inside a
// slice the wheel sees due times in random order.
type timerPlan struct {
	n      int
	first  time.Time
	window time.Duration
	blocks int
}

func (p timerPlan) dueMs(seq int) int64 {
	slice := p.window / time.Duration(p.blocks)
	b := seq * p.blocks / p.n
	return p.first.Add(time.Duration(b)*slice + rand.N(slice)).UnixMilli()
}

// timerSender keeps inFlight SEND_MESSAGE_V2 requests outstanding on each of
// its connections (closed loop) until every sequence number was sent. A
// failed send is retried with the same UNIQ_KEY up to timerSendAttempts
// times; a message that still fails is counted in lost.
type timerSender struct {
	plan     timerPlan
	addr     string
	topic    string
	queues   int32
	clients  []*remoting.Client
	inFlight int
	body     []byte

	next     atomic.Int64
	acked    atomic.Int64
	retried  atomic.Int64
	lost     atomic.Int64
	sentLate atomic.Int64 // acknowledged only after the due time had passed

	errMu sync.Mutex
	errs  map[string]int64
}

const (
	timerSendAttempts = 3
	timerSendTimeout  = 10 * time.Second
)

func newTimerSender(plan timerPlan, addr, topic string, queues int32, conns, inFlight, bodySize int) *timerSender {
	s := &timerSender{plan: plan, addr: addr, topic: topic, queues: queues, inFlight: inFlight,
		body: make([]byte, bodySize), errs: map[string]int64{}}
	for i := range s.body {
		s.body[i] = 'a' + byte(i%26)
	}
	for range conns {
		s.clients = append(s.clients, remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ}))
	}
	return s
}

func (s *timerSender) close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// run returns once every message was acknowledged or given up.
func (s *timerSender) run() {
	var wg sync.WaitGroup
	for _, c := range s.clients {
		for range s.inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					seq := s.next.Add(1) - 1
					if seq >= int64(s.plan.n) {
						return
					}
					s.send(c, int(seq))
				}
			}()
		}
	}
	wg.Wait()
}

func (s *timerSender) send(c *remoting.Client, seq int) {
	now := time.Now()
	due := strconv.FormatInt(s.plan.dueMs(seq), 10)
	props := map[string]string{
		message.PropUniqKey: admin.NewUniqID(now), message.PropWait: "true",
		message.PropTimerDeliverMs: due, timerDueProp: due, timerSeqProp: strconv.Itoa(seq),
	}
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: "bench_timer_pg", Topic: s.topic, QueueID: int32(seq) % s.queues, Body: s.body,
		Properties: props, BornTimestamp: now.UnixMilli(),
	})
	for attempt := range timerSendAttempts {
		if attempt > 0 {
			s.retried.Add(1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timerSendTimeout)
		resp, err := c.Invoke(ctx, s.addr, req)
		cancel()
		if err == nil {
			if _, ok := admin.SendStatus(resp.Code); ok {
				s.acked.Add(1)
				if due, _ := strconv.ParseInt(props[timerDueProp], 10, 64); time.Now().UnixMilli() >= due {
					s.sentLate.Add(1)
				}
				return
			}
			err = fmt.Errorf("code %d %s", resp.Code, admin.ResponseName(resp.Code))
		}
		s.errMu.Lock()
		s.errs[err.Error()]++
		s.errMu.Unlock()
	}
	s.lost.Add(1)
}

func (s *timerSender) errorSummary() string {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if len(s.errs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(s.errs))
	for k, v := range s.errs {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// timerSink records what the pull consumer receives, by sequence number.
// Lateness is kept per message (µs, receive − due; negative = early) so the
// percentiles are exact; the arrays are allocated before the run so they do
// not count as growth.
type timerSink struct {
	n           int
	lateUs      []int32
	storeLateMs []int32 // store time of the delivered copy − due (broker clock)
	arrivals    []atomic.Int32

	received    atomic.Int64 // distinct sequence numbers
	dups        atomic.Int64
	foreign     atomic.Int64 // records without a valid sequence number
	brokerEarly atomic.Int64 // stored on the topic before TIMER_OUT_MS
	outMismatch atomic.Int64 // TIMER_OUT_MS differs from the requested time
}

func newTimerSink(n int) *timerSink {
	return &timerSink{n: n, lateUs: make([]int32, n), storeLateMs: make([]int32, n), arrivals: make([]atomic.Int32, n)}
}

func (k *timerSink) record(msgs []*admin.Message, at time.Time) {
	for _, m := range msgs {
		if m.Properties[timerCreateProp] != "" {
			continue
		}
		seq, err := strconv.Atoi(m.Properties[timerSeqProp])
		due, derr := strconv.ParseInt(m.Properties[timerDueProp], 10, 64)
		if err != nil || derr != nil || seq < 0 || seq >= k.n {
			k.foreign.Add(1)
			continue
		}
		if k.arrivals[seq].Add(1) > 1 {
			k.dups.Add(1)
			continue
		}
		out, err := strconv.ParseInt(m.Properties[message.PropTimerOutMs], 10, 64)
		if err != nil || out != due {
			k.outMismatch.Add(1)
		}
		if m.StoreTimestamp < due {
			k.brokerEarly.Add(1)
		}
		late := at.Sub(time.UnixMilli(due)).Microseconds()
		k.lateUs[seq] = int32(max(math.MinInt32, min(math.MaxInt32, late)))
		k.storeLateMs[seq] = int32(m.StoreTimestamp - due)
		k.received.Add(1)
	}
}

// Long-poll settings of the pull consumer.
const (
	timerPullSuspend = 15 * time.Second
	timerPullBatch   = 32
)

// pullTimerQueues long-polls every queue from its start offset until ctx
// ends, one goroutine per queue, and returns the number of failed pulls.
func pullTimerQueues(ctx context.Context, cl *remoting.Client, queues []admin.QueueAddr, start []int64, k *timerSink) int64 {
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := start[i]
			for ctx.Err() == nil {
				req := admin.NewPullRequest(&admin.PullSpec{
					Group: "bench_timer_cg", Topic: q.Topic, QueueID: q.QueueID, Offset: offset, MaxNums: timerPullBatch,
					SysFlag: admin.PullFlagSuspend | admin.PullFlagSubscription, Suspend: timerPullSuspend, Subscription: "*",
				})
				pctx, cancel := context.WithTimeout(ctx, timerPullSuspend+5*time.Second)
				resp, err := cl.Invoke(pctx, q.Addr, req)
				at := time.Now()
				cancel()
				if ctx.Err() != nil {
					return
				}
				var r *admin.PullResult
				ok := false
				if err == nil {
					r, ok, err = admin.ParsePullResponse(resp)
				}
				if err != nil || !ok {
					failed.Add(1)
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond): // back off after a failed pull
					}
					continue
				}
				if r.Status == admin.PullFound {
					k.record(r.Messages, at)
				}
				if r.Status != admin.PullNoNewMsg || r.NextBeginOffset > offset {
					offset = r.NextBeginOffset
				}
			}
		}()
	}
	wg.Wait()
	return failed.Load()
}
