package bench

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Properties the timer mode adds so its consumer can tell this run's
// messages apart and compute lateness.
const (
	propRun   = "BENCH_RUN"
	propSeq   = "BENCH_SEQ"
	propDueMs = "BENCH_DUE_MS"
)

// producer keeps InFlight sends outstanding on each of Connections
// connections to every broker (closed loop: a slot sends again as soon as
// its answer arrives).
type producer struct {
	o       *Options
	st      *stats
	queues  []admin.QueueAddr
	clients []*remoting.Client
	body    []byte
	runID   string
	levels  []time.Duration
	next    atomic.Uint64
	seq     atomic.Int64
}

func newProducer(o *Options, st *stats, queues []admin.QueueAddr, runID string) *producer {
	p := &producer{o: o, st: st, queues: queues, runID: runID, body: make([]byte, o.MessageSize)}
	for i := range p.body {
		p.body[i] = 'a' + byte(i%26)
	}
	if o.DelayLevel > 0 {
		p.levels, _ = ParseDelayLevels(o.DelayLevels)
	}
	for range o.Connections {
		p.clients = append(p.clients, remoting.NewClient(remoting.ClientOptions{SerializeType: o.SerializeType, TLS: o.TLS, Logger: o.Logger}))
	}
	return p
}

func (p *producer) close() {
	for _, c := range p.clients {
		c.Close()
	}
}

// run sends until ctx ends or Count sends were started; sends in flight
// when ctx ends still complete (they have their own timeout).
func (p *producer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, cli := range p.clients {
		for range p.o.InFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					seq := p.seq.Add(1) - 1
					if p.o.Count > 0 && seq >= p.o.Count {
						return
					}
					p.sendOne(cli, seq)
				}
			}()
		}
	}
	wg.Wait()
}

func (p *producer) sendOne(cli *remoting.Client, seq int64) {
	q := p.queues[p.next.Add(1)%uint64(len(p.queues))]
	now := p.o.Now()
	props := map[string]string{message.PropUniqKey: admin.NewUniqID(now), message.PropWait: "true"}
	if p.o.Mode == ModeTimer {
		var due time.Time
		if p.o.DelayLevel > 0 {
			props[message.PropDelay] = strconv.Itoa(p.o.DelayLevel)
			due = now.Add(p.levels[p.o.DelayLevel-1])
		} else {
			due = now.Add(p.o.TimerDelay)
			if p.o.TimerSpread > 0 {
				due = due.Add(rand.N(p.o.TimerSpread))
			}
			props[message.PropTimerDeliverMs] = strconv.FormatInt(due.UnixMilli(), 10)
		}
		props[propRun] = p.runID
		props[propSeq] = strconv.FormatInt(seq, 10)
		props[propDueMs] = strconv.FormatInt(due.UnixMilli(), 10)
	}
	req := admin.NewSendRequest(&admin.SendSpec{
		Topic: p.o.Topic, QueueID: q.QueueID, Body: p.body, Properties: props,
		BornTimestamp: now.UnixMilli(), V1Header: p.o.V1Header,
	})
	ctx, cancel := context.WithTimeout(context.Background(), p.o.SendTimeout)
	start := time.Now()
	resp, err := cli.Invoke(ctx, q.Addr, req)
	lat := time.Since(start)
	cancel()
	if err != nil {
		p.st.sendFailed.Add(1)
		p.st.failure(errorKey(0, err))
		return
	}
	if _, ok := admin.SendStatus(resp.Code); !ok {
		p.st.sendFailed.Add(1)
		p.st.failure(errorKey(resp.Code, nil))
		return
	}
	p.st.sent.add(1, int64(len(p.body)), lat, true)
}
