package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Properties the driver puts on every message so that its consumer finds
// this run's messages, their sequence numbers and due times.
const (
	propRun   = "CMP_RUN"
	propSeq   = "CMP_SEQ"
	propDueUs = "CMP_DUE_US"
)

// Driver settings.
const (
	driverConns   = 2
	pullBatch     = 32
	pullSuspend   = 5 * time.Second
	pullSlack     = 5 * time.Second
	pullErrorWait = 100 * time.Millisecond
	sendTimeout   = 5 * time.Second
	pacedMaxOpen  = 4096 // sends outstanding at once in paced mode
)

// loadSpec is one load the in-process driver applies: count messages sent
// either paced at rate or as fast as inflight concurrent sends allow, each
// due at the time mark returns; a consumer long-polls the topic from its
// current end and records how late each message arrived.
type loadSpec struct {
	topic    string
	count    int64
	rate     float64 // messages per second; 0 saturates
	inflight int
	size     int
	// mark returns the extra properties of message seq about to be sent at
	// now (DELAY, TIMER_DELIVER_MS) and the time it is due.
	mark func(seq int64, now time.Time) (map[string]string, time.Time)
	// afterSend runs once every send has been answered (a broker restart).
	afterSend func(ctx context.Context) error
	// grace bounds the wait for deliveries after the last due time.
	grace time.Duration
	// sendOnly skips the consumer: runLoad returns once every send is
	// answered (timers left pending on purpose).
	sendOnly bool
}

// loadResult is what one load measured.
type loadResult struct {
	Sent, SendFailed int64
	SendElapsed      time.Duration // first send to last answer
	SendLat          *bench.Histogram
	Late             *bench.Histogram // receive - due; early arrivals count as 0
	Early            int64
	MaxEarly         time.Duration
	Received, Dups   int64
	Lost             int64
	FirstDue         time.Time
	LastDue          time.Time
	LastReceive      time.Time
	Errors           map[string]int64
}

// SendRate is the answered sends per second of the send phase.
func (r *loadResult) SendRate() float64 {
	if r.SendElapsed <= 0 {
		return 0
	}
	return float64(r.Sent) / r.SendElapsed.Seconds()
}

// Drain is the time from the first due time to the last delivery.
func (r *loadResult) Drain() time.Duration {
	if r.LastReceive.IsZero() || r.FirstDue.IsZero() {
		return 0
	}
	return r.LastReceive.Sub(r.FirstDue)
}

type driver struct {
	spec    loadSpec
	runID   string
	clients []*remoting.Client
	body    []byte
	res     *loadResult

	errMu   sync.Mutex
	dueMu   sync.Mutex
	seenMu  sync.Mutex
	seen    []uint64
	recvd   atomic.Int64
	sentOK  atomic.Int64
	lastRcv atomic.Int64 // unix µs
	early   atomic.Int64
	maxEarl atomic.Int64 // µs
}

func newRunID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runLoad applies spec to the cluster's broker and returns the measurements.
func runLoad(ctx context.Context, c *cluster, spec loadSpec) (*loadResult, error) {
	queues, err := c.route(ctx, spec.topic)
	if err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		return nil, fmt.Errorf("compare: topic %s has no queue", spec.topic)
	}
	start := make([]int64, len(queues))
	for i, q := range queues {
		if spec.sendOnly {
			break
		}
		if start[i], err = c.adm.MaxOffset(ctx, q); err != nil {
			return nil, err
		}
	}
	d := &driver{
		spec: spec, runID: newRunID(), body: make([]byte, spec.size),
		seen: make([]uint64, (spec.count+63)/64),
		res:  &loadResult{SendLat: &bench.Histogram{}, Late: &bench.Histogram{}, Errors: map[string]int64{}},
	}
	for i := range d.body {
		d.body[i] = 'a' + byte(i%26)
	}
	for range driverConns {
		d.clients = append(d.clients, remoting.NewClient(remoting.ClientOptions{SerializeType: serialize}))
	}
	defer func() {
		for _, cl := range d.clients {
			cl.Close()
		}
	}()

	cctx, stopConsume := context.WithCancel(ctx)
	defer stopConsume()
	var cwg sync.WaitGroup
	for i, q := range queues {
		if spec.sendOnly {
			break
		}
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			d.consume(cctx, d.clients[i%len(d.clients)], q, start[i])
		}()
	}

	sendStart := time.Now()
	if spec.rate > 0 {
		d.sendPaced(ctx, queues)
	} else {
		d.sendSaturated(ctx, queues)
	}
	d.res.SendElapsed = time.Since(sendStart)
	if spec.afterSend != nil {
		if err := spec.afterSend(ctx); err != nil {
			stopConsume()
			cwg.Wait()
			return nil, err
		}
	}
	d.dueMu.Lock()
	deadline := d.res.LastDue
	d.dueMu.Unlock()
	deadline = later(deadline, time.Now()).Add(spec.grace)
	for !spec.sendOnly && d.recvd.Load() < d.sentOK.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		_ = sleepCtx(ctx, 10*time.Millisecond)
	}
	stopConsume()
	cwg.Wait()

	r := d.res
	r.Sent = d.sentOK.Load()
	r.Received = d.recvd.Load()
	if !spec.sendOnly {
		r.Lost = max(r.Sent-r.Received, 0)
	}
	r.Early = d.early.Load()
	r.MaxEarly = time.Duration(d.maxEarl.Load()) * time.Microsecond
	if us := d.lastRcv.Load(); us > 0 {
		r.LastReceive = time.UnixMicro(us)
	}
	return r, ctx.Err()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sendSaturated keeps spec.inflight sends outstanding until count are sent.
func (d *driver) sendSaturated(ctx context.Context, queues []admin.QueueAddr) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range d.spec.inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := d.clients[w%len(d.clients)]
			for ctx.Err() == nil {
				seq := next.Add(1) - 1
				if seq >= d.spec.count {
					return
				}
				d.send(cl, queues[seq%int64(len(queues))], seq)
			}
		}()
	}
	wg.Wait()
}

// sendPaced starts message i at start + i/rate, whatever the answers do
// (open loop), with at most pacedMaxOpen outstanding.
func (d *driver) sendPaced(ctx context.Context, queues []admin.QueueAddr) {
	open := make(chan struct{}, pacedMaxOpen)
	var wg sync.WaitGroup
	start := time.Now()
	for seq := int64(0); seq < d.spec.count && ctx.Err() == nil; seq++ {
		at := start.Add(time.Duration(float64(seq) / d.spec.rate * float64(time.Second)))
		if wait := time.Until(at); wait > 0 {
			_ = sleepCtx(ctx, wait)
		}
		open <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-open }()
			d.send(d.clients[seq%int64(len(d.clients))], queues[seq%int64(len(queues))], seq)
		}()
	}
	wg.Wait()
}

func (d *driver) send(cl *remoting.Client, q admin.QueueAddr, seq int64) {
	now := time.Now()
	props, due := d.spec.mark(seq, now)
	if props == nil {
		props = map[string]string{}
	}
	props[message.PropUniqKey] = admin.NewUniqID(now)
	props[message.PropWait] = "true"
	props[propRun] = d.runID
	props[propSeq] = strconv.FormatInt(seq, 10)
	props[propDueUs] = strconv.FormatInt(due.UnixMicro(), 10)
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: "cmp_producer", Topic: d.spec.topic, QueueID: q.QueueID,
		Body: d.body, Properties: props, BornTimestamp: now.UnixMilli(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	t0 := time.Now()
	resp, err := cl.Invoke(ctx, q.Addr, req)
	lat := time.Since(t0)
	cancel()
	switch {
	case err != nil:
		d.failure("transport: " + err.Error())
		return
	default:
		if _, ok := admin.SendStatus(resp.Code); !ok {
			d.failure(fmt.Sprintf("code %d %s", resp.Code, admin.ResponseName(resp.Code)))
			return
		}
	}
	d.res.SendLat.Record(lat)
	d.sentOK.Add(1)
	d.dueMu.Lock()
	if d.res.FirstDue.IsZero() || due.Before(d.res.FirstDue) {
		d.res.FirstDue = due
	}
	if due.After(d.res.LastDue) {
		d.res.LastDue = due
	}
	d.dueMu.Unlock()
}

func (d *driver) failure(key string) {
	if len(key) > 120 {
		key = key[:120]
	}
	d.errMu.Lock()
	d.res.Errors[key]++
	d.res.SendFailed++
	d.errMu.Unlock()
}

// consume long-polls q from offset until ctx ends, recording what it finds.
func (d *driver) consume(ctx context.Context, cl *remoting.Client, q admin.QueueAddr, offset int64) {
	pullLoop(ctx, cl, q, "cmp_consumer", offset, func(msgs []*admin.Message) { d.record(msgs, time.Now()) })
}

// pullLoop long-polls q as group from offset until ctx ends and hands the
// messages of every found pull to found; a broker that is away
// (restarting) is retried every pullErrorWait.
func pullLoop(ctx context.Context, cl *remoting.Client, q admin.QueueAddr, group string, offset int64, found func([]*admin.Message)) {
	for ctx.Err() == nil {
		req := admin.NewPullRequest(&admin.PullSpec{
			Group: group, Topic: q.Topic, QueueID: q.QueueID, Offset: offset, MaxNums: pullBatch,
			SysFlag: admin.PullFlagSuspend | admin.PullFlagSubscription, Suspend: pullSuspend, Subscription: "*",
		})
		resp, err := invokePull(ctx, cl, q.Addr, req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			_ = sleepCtx(ctx, pullErrorWait)
			continue
		}
		r, ok, perr := admin.ParsePullResponse(resp)
		if !ok || perr != nil {
			_ = sleepCtx(ctx, pullErrorWait)
			continue
		}
		if r.Status == admin.PullFound {
			found(r.Messages)
		}
		if r.Status != admin.PullNoNewMsg || r.NextBeginOffset > offset {
			offset = r.NextBeginOffset
		}
	}
}

func (d *driver) record(msgs []*admin.Message, now time.Time) {
	for _, m := range msgs {
		if m.Properties[propRun] != d.runID {
			continue
		}
		seq, err1 := strconv.ParseInt(m.Properties[propSeq], 10, 64)
		dueUs, err2 := strconv.ParseInt(m.Properties[propDueUs], 10, 64)
		if err1 != nil || err2 != nil || seq < 0 || seq >= d.spec.count {
			continue
		}
		word, bit := seq/64, uint64(1)<<(seq%64)
		d.seenMu.Lock()
		dup := d.seen[word]&bit != 0
		d.seen[word] |= bit
		d.seenMu.Unlock()
		if dup {
			d.errMu.Lock()
			d.res.Dups++
			d.errMu.Unlock()
			continue
		}
		late := now.Sub(time.UnixMicro(dueUs))
		if late < 0 {
			d.early.Add(1)
			for us := (-late).Microseconds(); ; {
				m := d.maxEarl.Load()
				if us <= m || d.maxEarl.CompareAndSwap(m, us) {
					break
				}
			}
		}
		d.res.Late.Record(late)
		for us := now.UnixMicro(); ; {
			m := d.lastRcv.Load()
			if us <= m || d.lastRcv.CompareAndSwap(m, us) {
				break
			}
		}
		d.recvd.Add(1)
	}
}

// invokePull sends one long-polling pull, bounded by the broker's suspend
// time plus slack.
func invokePull(ctx context.Context, cl *remoting.Client, addr string, req *remoting.Command) (*remoting.Command, error) {
	pctx, cancel := context.WithTimeout(ctx, pullSuspend+pullSlack)
	defer cancel()
	return cl.Invoke(pctx, addr, req)
}
