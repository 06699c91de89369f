package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Workload i (issue 14): request-reply round trips as the 4.9.x
// RequestProducer example makes them. The requester sends each request with
// CORRELATION_ID, REPLY_TO_CLIENT and TTL; a responder long-polls the request
// topic and answers each request with SEND_REPLY_MESSAGE_V2 (325) on the
// cluster's reply topic; the broker pushes the reply to the requester's
// connection (PUSH_REPLY_MESSAGE_TO_CLIENT, 326), found by the client id the
// requester registered with a producer heartbeat.
const (
	topicRequest   = "CmpRequest"
	groupRequester = "cmp_requester"
	groupResponder = "cmp_responder"
	replyTTL       = 3 * time.Second // the request's timeout (TTL property)
	replyHeartbeat = 10 * time.Second
	replyGrace     = replyTTL // wait for the last replies
	propTTL        = "TTL"    // MessageConst.PROPERTY_MESSAGE_TTL
	msgTypeReply   = "reply"  // MixAll.REPLY_MESSAGE_FLAG
	// slowRTT: the log says in which seconds the round trips slower than
	// this were sent (a stall of the machine bunches them in one second).
	slowRTT = 10 * time.Millisecond
)

// requester sends paced requests and matches the pushed replies.
type requester struct {
	clientID string
	cl       *remoting.Client
	body     []byte
	rtt      *bench.Histogram // this round's round trips
	pooled   *bench.Histogram // every round's (nil: none)
	slowMu   sync.Mutex
	slow     map[int64]int // round trips over slowRTT by second of their send
	first    time.Time     // start of the measured requests
	pending  sync.Map      // correlation id -> pendingRequest

	sent, replied, failed, pushes atomic.Int64
}

// pendingRequest is a request waiting for its reply.
type pendingRequest struct {
	began time.Time // the send's start
	warm  bool      // a warm-up request: not measured
}

// onPush serves the broker's PUSH_REPLY_MESSAGE_TO_CLIENT.
func (q *requester) onPush(_ string, req *remoting.Command) *remoting.Command {
	if req.Code != remoting.PushReplyMessageToClient {
		return remoting.NewResponse(req, remoting.RequestCodeNotSupported, "not served by the bench requester")
	}
	now := time.Now()
	q.pushes.Add(1)
	props := message.Props(req.Header().Str("properties", false))
	if v, ok := q.pending.LoadAndDelete(props.Get(message.PropCorrelationID)); ok && !v.(pendingRequest).warm {
		d := now.Sub(v.(pendingRequest).began)
		q.rtt.Record(d)
		if d > slowRTT {
			q.slowMu.Lock()
			q.slow[v.(pendingRequest).began.Unix()]++
			q.slowMu.Unlock()
		}
		if q.pooled != nil {
			q.pooled.Record(d)
		}
		q.replied.Add(1)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// slowSeconds lists the seconds (from the first) in which slow round trips
// were sent, with their counts: "3:12 4:2".
func (q *requester) slowSeconds() string {
	q.slowMu.Lock()
	defer q.slowMu.Unlock()
	if len(q.slow) == 0 {
		return "none"
	}
	secs := slices.Sorted(maps.Keys(q.slow))
	var b strings.Builder
	for _, sec := range secs {
		fmt.Fprintf(&b, " %d:%d", sec-q.first.Unix(), q.slow[sec])
	}
	return strings.TrimSpace(b.String())
}

// heartbeat registers the requester's client id as a producer of its group
// on the broker's connection (the Java broker finds the reply's channel in
// its producer table).
func (q *requester) heartbeat(ctx context.Context, addr string) error {
	body := remoting.MarshalBody(&remoting.HeartbeatData{
		ClientID:        q.clientID,
		ProducerDataSet: []*remoting.ProducerData{{GroupName: groupRequester}},
		ConsumerDataSet: []*remoting.ConsumerData{},
	})
	hctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	resp, err := q.cl.Invoke(hctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, body))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("compare: heartbeat answered %d %s", resp.Code, resp.Remark)
	}
	return nil
}

func (q *requester) request(qa admin.QueueAddr, corr string, warm bool) {
	now := time.Now()
	props := map[string]string{
		message.PropUniqKey:       admin.NewUniqID(now),
		message.PropWait:          "true",
		message.PropCorrelationID: corr,
		message.PropReplyToClient: q.clientID,
		propTTL:                   strconv.FormatInt(replyTTL.Milliseconds(), 10),
	}
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: groupRequester, Topic: qa.Topic, QueueID: qa.QueueID,
		Body: q.body, Properties: props, BornTimestamp: now.UnixMilli(),
	})
	q.pending.Store(corr, pendingRequest{began: now, warm: warm})
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	resp, err := q.cl.Invoke(ctx, qa.Addr, req)
	cancel()
	ok := err == nil
	if ok {
		_, ok = admin.SendStatus(resp.Code)
	}
	switch {
	case warm:
	case !ok:
		q.pending.Delete(corr)
		q.failed.Add(1)
	default:
		q.sent.Add(1)
	}
}

// run sends n requests paced at rate (open loop, at most pacedMaxOpen
// outstanding), over the queues in turn.
func (q *requester) run(ctx context.Context, queues []admin.QueueAddr, n int64, rate float64, prefix string, warm bool) {
	open := make(chan struct{}, pacedMaxOpen)
	var wg sync.WaitGroup
	began := time.Now()
	for seq := int64(0); seq < n && ctx.Err() == nil; seq++ {
		at := began.Add(time.Duration(float64(seq) / rate * float64(time.Second)))
		if wait := time.Until(at); wait > 0 {
			_ = sleepCtx(ctx, wait)
		}
		open <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-open }()
			q.request(queues[seq%int64(len(queues))], prefix+strconv.FormatInt(seq, 10), warm)
		}()
	}
	wg.Wait()
}

// settle waits up to replyGrace for the replies of every request sent.
func (q *requester) settle(ctx context.Context) error {
	for deadline := time.Now().Add(replyGrace); time.Now().Before(deadline); {
		empty := true
		q.pending.Range(func(_, _ any) bool { empty = false; return false })
		if empty {
			return nil
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// responder long-polls every request queue and answers each request.
type responder struct {
	replyTopic string
	body       []byte
	inflight   sync.WaitGroup

	replies, failed atomic.Int64
}

func (s *responder) serve(ctx context.Context, cl *remoting.Client, q admin.QueueAddr, offset int64) {
	pullLoop(ctx, cl, q, groupResponder, offset, func(msgs []*admin.Message) {
		for _, m := range msgs {
			s.inflight.Add(1)
			go func() {
				defer s.inflight.Done()
				s.reply(cl, q.Addr, m)
			}()
		}
	})
}

// reply sends the reply of request m as MessageUtil.createReplyMessage
// builds it and the 4.9.x producer sends it (SEND_REPLY_MESSAGE_V2).
func (s *responder) reply(cl *remoting.Client, addr string, m *admin.Message) {
	now := time.Now()
	props := map[string]string{
		message.PropUniqKey:       admin.NewUniqID(now),
		message.PropWait:          "true",
		message.PropMsgType:       msgTypeReply,
		message.PropCorrelationID: m.Properties[message.PropCorrelationID],
		message.PropReplyToClient: m.Properties[message.PropReplyToClient],
		propTTL:                   m.Properties[propTTL],
	}
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: groupResponder, Topic: s.replyTopic, QueueID: 0,
		Body: s.body, Properties: props, BornTimestamp: now.UnixMilli(),
	})
	req.Code = remoting.SendReplyMessageV2
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	resp, err := cl.Invoke(ctx, addr, req)
	cancel()
	if err != nil || resp.Code != remoting.Success {
		s.failed.Add(1)
		return
	}
	s.replies.Add(1)
}

// replyPhase runs workload i: -reply-rounds rounds over the targets, in
// turn in the order given, then reversed (ABBA), each on a fresh
// ASYNC_FLUSH broker, so that a drift of the shared machine's load falls on
// every target alike. The round trips of a target's rounds are pooled in one
// histogram.
func (r *runner) replyPhase(ctx context.Context, targets []*target) error {
	type pooled struct {
		rtt                   *bench.Histogram
		sent, replied, failed int64
		cpu                   time.Duration
		peakRSS               int64
	}
	pool := map[string]*pooled{}
	for _, t := range targets {
		pool[t.name] = &pooled{rtt: &bench.Histogram{}}
	}
	for round := range r.cfg.replyRounds {
		order := slices.Clone(targets)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-reply")
			c, _, err := startCluster(ctx, t, dir, asyncFlush)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			pl := pool[t.name]
			res, err := r.requestReply(ctx, t, c, pl.rtt)
			c.close()
			os.RemoveAll(filepath.Join(dir, "store"))
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			pl.sent += res.sent
			pl.replied += res.replied
			pl.failed += res.failed
			pl.cpu += res.usage.CPU
			pl.peakRSS = max(pl.peakRSS, res.usage.PeakRSS)
			r.set(t, fmt.Sprintf("wi.%d.p99", round+1), res.p99)
		}
	}
	for _, t := range targets {
		pl := pool[t.name]
		p := pl.rtt.Percentiles()
		r.recordUsage(t, "wi", usage{CPU: pl.cpu, PeakRSS: pl.peakRSS})
		r.set(t, "wi.p50", p.P50)
		r.set(t, "wi.p99", p.P99)
		r.set(t, "wi.p999", p.P999)
		r.set(t, "wi.max", p.Max)
		r.set(t, "wi.replied", float64(pl.replied))
		r.set(t, "wi.timeout", float64(pl.sent-pl.replied))
		r.set(t, "wi.failed", float64(pl.failed))
	}
	return nil
}

// replyResult is one round of workload i on one broker.
type replyResult struct {
	sent, replied, failed int64
	p99                   float64 // of this round alone
	usage                 usage
}

// requestReply runs one round of workload i against c; the measured round
// trips are added to rtt.
func (r *runner) requestReply(ctx context.Context, t *target, c *cluster, rtt *bench.Histogram) (*replyResult, error) {
	if err := c.createTopic(ctx, topicRequest); err != nil {
		return nil, err
	}
	queues, err := c.route(ctx, topicRequest)
	if err != nil {
		return nil, err
	}
	start := make([]int64, len(queues))
	for i, q := range queues {
		if start[i], err = c.adm.MaxOffset(ctx, q); err != nil {
			return nil, err
		}
	}
	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	runID := newRunID()
	q := &requester{clientID: "127.0.0.1@cmp-requester-" + runID, body: body, rtt: &bench.Histogram{}, pooled: rtt, slow: map[int64]int{}}
	q.cl = remoting.NewClient(remoting.ClientOptions{SerializeType: serialize, OnRequest: q.onPush})
	defer q.cl.Close()
	s := &responder{replyTopic: message.ReplyTopic(benchCluster), body: body}
	rcl := remoting.NewClient(remoting.ClientOptions{SerializeType: serialize})
	defer rcl.Close()
	if err := q.heartbeat(ctx, c.brokerAddr()); err != nil {
		return nil, err
	}

	sctx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	var swg sync.WaitGroup
	for i, qa := range queues {
		swg.Add(1)
		go func() {
			defer swg.Done()
			s.serve(sctx, rcl, qa, start[i])
		}()
	}
	swg.Add(1)
	go func() { // keep the registration fresh, as the client's heartbeat task does
		defer swg.Done()
		for sleepCtx(sctx, replyHeartbeat) == nil {
			_ = q.heartbeat(sctx, c.brokerAddr())
		}
	}()

	// A warm-up at the same rate (JIT for Java), then the measured run.
	q.run(ctx, queues, int64(r.cfg.replyRate*r.cfg.warmup.Seconds()), r.cfg.replyRate, runID+"-w", true)
	if err := q.settle(ctx); err != nil {
		return nil, err
	}
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	q.first = time.Now()
	q.run(ctx, queues, int64(r.cfg.replyRate*r.cfg.duration.Seconds()), r.cfg.replyRate, runID+"-", false)
	if err := q.settle(ctx); err != nil {
		return nil, err
	}
	u := smp.stop()
	stopServe()
	swg.Wait()
	s.inflight.Wait()

	p := q.rtt.Percentiles()
	r.logf("%s request-reply: round trips over %v by second of the run: %s", t.name, slowRTT, q.slowSeconds())
	res := &replyResult{sent: q.sent.Load(), replied: q.replied.Load(), failed: q.failed.Load() + s.failed.Load(), p99: p.P99, usage: u}
	r.logf("%s request-reply at %.0f/s: %d requests, %d replies, %d without reply within %v, %d failed sends; round trip p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms, broker CPU %.2f s",
		t.name, r.cfg.replyRate, res.sent, res.replied, res.sent-res.replied, replyTTL, res.failed,
		p.P50, p.P99, p.P999, p.Max, u.CPU.Seconds())
	return res, nil
}
