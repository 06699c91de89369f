package bench

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

// Long-poll settings of the consumer: the hold the broker may apply, and the
// extra time the request may take on top of it.
const (
	pullSuspend   = 15 * time.Second
	pullSlack     = 5 * time.Second
	pullBatch     = 32
	pullErrorWait = 100 * time.Millisecond
)

// consumer long-polls every queue of the topic from a start offset, one
// goroutine per queue, spread over Connections connections per broker.
type consumer struct {
	o       *Options
	st      *stats
	queues  []admin.QueueAddr
	start   []int64
	clients []*remoting.Client
	runID   string
}

func newConsumer(o *Options, st *stats, queues []admin.QueueAddr, start []int64, runID string) *consumer {
	c := &consumer{o: o, st: st, queues: queues, start: start, runID: runID}
	for range o.Connections {
		c.clients = append(c.clients, remoting.NewClient(remoting.ClientOptions{SerializeType: o.SerializeType, TLS: o.TLS, Logger: o.Logger}))
	}
	return c
}

func (c *consumer) close() {
	for _, cl := range c.clients {
		cl.Close()
	}
}

// run pulls until ctx ends.
func (c *consumer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, q := range c.queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.pullQueue(ctx, c.clients[i%len(c.clients)], q, c.start[i])
		}()
	}
	wg.Wait()
}

func (c *consumer) pullQueue(ctx context.Context, cli *remoting.Client, q admin.QueueAddr, offset int64) {
	for ctx.Err() == nil {
		req := admin.NewPullRequest(&admin.PullSpec{
			Group: c.o.Group, Topic: q.Topic, QueueID: q.QueueID, Offset: offset, MaxNums: pullBatch,
			SysFlag: admin.PullFlagSuspend | admin.PullFlagSubscription, Suspend: pullSuspend, Subscription: "*",
		})
		pctx, cancel := context.WithTimeout(ctx, pullSuspend+pullSlack)
		start := time.Now()
		resp, err := cli.Invoke(pctx, q.Addr, req)
		lat := time.Since(start)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.st.failure(errorKey(0, err))
			c.backoff(ctx)
			continue
		}
		r, ok, perr := admin.ParsePullResponse(resp)
		if !ok || perr != nil {
			c.st.failure(errorKey(resp.Code, nil))
			c.backoff(ctx)
			continue
		}
		if r.Status == admin.PullFound {
			c.record(r.Messages, lat)
		}
		if r.Status != admin.PullNoNewMsg || r.NextBeginOffset > offset {
			offset = r.NextBeginOffset
		}
	}
}

func (c *consumer) backoff(ctx context.Context) {
	t := time.NewTimer(pullErrorWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *consumer) record(msgs []*admin.Message, lat time.Duration) {
	now := c.o.Now()
	var bytes int64
	for _, m := range msgs {
		bytes += int64(len(m.Body))
		if c.o.Mode != ModeTimer || m.Properties[propRun] != c.runID {
			continue
		}
		seq, err := strconv.ParseInt(m.Properties[propSeq], 10, 64)
		if err != nil {
			seq = -1
		}
		due, err := strconv.ParseInt(m.Properties[propDueMs], 10, 64)
		if err != nil {
			continue
		}
		c.st.delivered(seq, now.Sub(time.UnixMilli(due)))
	}
	c.st.recv.add(int64(len(msgs)), bytes, lat, true)
}
