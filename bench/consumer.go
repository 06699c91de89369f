package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/message"
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
		r, ok, perr := c.parse(resp)
		if ok && perr == nil && r.Status == admin.PullFound {
			perr = c.record(r, resp.Body, lat)
		}
		if !ok || perr != nil {
			c.st.failure(errorKey(resp.Code, nil))
			c.backoff(ctx)
			continue
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

// parse decodes a pull response: every message in timer mode, which reads
// their properties; only the header otherwise, leaving the records to
// countRecords.
func (c *consumer) parse(resp *remoting.Command) (*admin.PullResult, bool, error) {
	if c.o.Mode == ModeTimer {
		return admin.ParsePullResponse(resp)
	}
	return admin.ParsePullHeader(resp)
}

// record counts what a pull found (r, its records in body). Outside timer
// mode the records are walked, not decoded (countRecords): the load
// generator shares the machine with the broker it measures, and decoding
// every message into a properties map, as an application's consumer does,
// made it the bound of a drain (the stock Consumer of bench-compare's
// workload f measures a full client).
func (c *consumer) record(r *admin.PullResult, body []byte, lat time.Duration) error {
	if c.o.Mode != ModeTimer {
		n, bytes, err := countRecords(body)
		if err != nil {
			return err
		}
		c.st.recv.add(n, bytes, lat, true)
		return nil
	}
	now := c.o.Now()
	var bytes int64
	for _, m := range r.Messages {
		bytes += int64(len(m.Body))
		if m.Properties[propRun] != c.runID {
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
	c.st.recv.add(int64(len(r.Messages)), bytes, lat, true)
	return nil
}

// countRecords checks the framing of the concatenated records of a pull
// body (message.ParseLayout) and returns how many there are and the sum of
// their bodies' lengths as stored (a compressed body counts compressed).
func countRecords(b []byte) (n, bodyBytes int64, err error) {
	for len(b) > 0 {
		l, err := message.ParseLayout(b)
		if err != nil {
			return n, bodyBytes, fmt.Errorf("%w: record %d: %v", admin.ErrBadBody, n, err)
		}
		n++
		bodyBytes += int64(l.BodyLen)
		b = b[l.Total:]
	}
	return n, bodyBytes, nil
}
