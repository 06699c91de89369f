package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rmqclient "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/internal/sdklog"
)

// Workload k (issue 16): the 5.x gRPC endpoint. rmq's (grpcapi, in the
// broker process) against the stock proxy in Local mode, which runs the
// stock 5.x broker in its own JVM; both driven by the same stock Go 5.x SDK
// (github.com/apache/rocketmq-clients/golang/v5) in this process, over TLS
// (the SDK's default; both ends make a self-signed certificate):
//
//	send:     saturated Producer.Send of 1 KiB (-conns producers, -inflight
//	          goroutines each), after a warm-up
//	e2e:      Producer.Send paced at -grpc-rate, SimpleConsumer receive +
//	          ack; sent -> acked
//	timers:   Message.SetDelayTimestamp(send + grpcTimerAhead) paced at
//	          -grpc-rate; received - due
//	revive:   messages received with the shortest invisible duration the
//	          stock proxy allows (minInvisibleTimeMillsForRecv, 10 s) and
//	          not acked; redelivery received - (popTime + invisibleTime of
//	          the first receipt handle)
//
// The broker's CPU and RSS are the rmq broker process's and the proxy's
// (broker and proxy in one JVM).

// Topics and consumer groups of workload k.
const (
	topicGRPCSend   = "CmpGrpcSend"
	topicGRPCE2E    = "CmpGrpcE2E"
	topicGRPCTimer  = "CmpGrpcTimer"
	topicGRPCRevive = "CmpGrpcRevive"
)

// Settings of workload k.
const (
	grpcBody         = 1024
	grpcReceivers    = 4                // concurrent Receive calls per consumer
	grpcBatch        = 32               // maxMessageNum of a Receive
	grpcAwait        = 5 * time.Second  // long polling (the proxy's minimum)
	grpcAckInvisible = 30 * time.Second // invisible duration of the consumers that ack
	grpcRevive       = 10 * time.Second // invisible duration of the revive test (the proxy's minimum)
	grpcTimerAhead   = 5 * time.Second  // delivery timestamps are this far after the send
	grpcGrace        = 30 * time.Second // wait for deliveries after the last one is due
	grpcMaxOpen      = 1024             // paced sends outstanding at once
	grpcSendTimeout  = 10 * time.Second // one Send, the SDK's retries included
	grpcErrorWait    = 100 * time.Millisecond
	grpcPropSent     = "CMP_SENT_US"  // unix µs the send was issued
	grpcPropDue      = "CMP_DUE_US"   // unix µs the message is due
	grpcLogDir       = "go-sdk-logs"  // the SDK's log root under -workdir
	grpcKey          = "wk"           // measure key prefix
	grpcGroupPrefix  = "CmpGrpcGroup" // + topic
)

// grpcPhase runs workload k on each target: rmq and the Java proxy.
func (r *runner) grpcPhase(ctx context.Context, targets []*target) error {
	logRoot := filepath.Join(r.cfg.workDir, grpcLogDir)
	if err := os.MkdirAll(logRoot, 0o755); err != nil {
		return err
	}
	defer sdklog.RemoveAfter()() // its call log in /tmp: over 1 GB in one run
	// The SDK logs to files under its log root ($HOME/logs by default).
	os.Setenv(rmqclient.CLIENT_LOG_ROOT, logRoot)
	os.Setenv(rmqclient.CLIENT_LOG_LEVEL, "warn")
	rmqclient.ResetLogger()
	r.cmds = append(r.cmds, fmt.Sprintf("workload k: in-process stock Go 5.x SDK (rocketmq-clients/golang/v5) against each gRPC endpoint: "+
		"send 1 KiB, %d producers × %d in flight, %v warm-up + %v; receive+ack %.0f msg/s for %v; %d delivery timestamps +%v at %.0f/s; "+
		"%d messages received %v invisible, not acked, redelivered",
		r.cfg.conns, r.cfg.inflight, r.cfg.warmup, r.cfg.duration, r.cfg.grpcRate, r.cfg.duration, r.cfg.grpcTimers, grpcTimerAhead,
		r.cfg.grpcRate, r.cfg.grpcRevive, grpcRevive))
	for _, t := range targets {
		if err := r.grpcWorkloads(ctx, t); err != nil {
			return fmt.Errorf("%s: workload k: %w", t.name, err)
		}
	}
	return nil
}

func (r *runner) grpcWorkloads(ctx context.Context, t *target) error {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-grpc")
	gp, err := freePort()
	if err != nil {
		return err
	}
	c := &cluster{t: t, dir: dir, flush: asyncFlush, grpcPort: gp}
	if !t.proxy {
		// The stock check of a message's kind against its topic's
		// message.type is off, as in the Java peer's proxyConfig: the
		// topics are made without attributes and the timers are DELAY.
		c.extra = []string{"grpcServerPort=" + strconv.Itoa(gp), "enableTopicMessageTypeCheck=false"}
	}
	c, boot, err := startClusterOf(ctx, c)
	if err != nil {
		return err
	}
	defer func() {
		c.close()
		os.RemoveAll(filepath.Join(dir, "store"))
	}()
	r.logf("%s gRPC endpoint 127.0.0.1:%d ready in %v", t.name, gp, boot.Round(time.Millisecond))
	for _, topic := range []string{topicGRPCSend, topicGRPCE2E, topicGRPCTimer, topicGRPCRevive} {
		if err := c.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	whole := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	endpoint := fmt.Sprintf("127.0.0.1:%d", gp)
	steps := []func(context.Context, *target, *cluster, string) error{r.grpcSend, r.grpcE2E, r.grpcTimers, r.grpcReviveLateness}
	for _, step := range steps {
		if err := step(ctx, t, c, endpoint); err != nil {
			whole.stop()
			return err
		}
	}
	u := whole.stop()
	r.set(t, grpcKey+".rss", float64(u.PeakRSS)/(1<<20))
	r.set(t, grpcKey+".anon", float64(u.PeakAnon)/(1<<20))
	r.logf("%s workload k: peak RSS %.0f MiB (anonymous %.0f MiB)", t.name, float64(u.PeakRSS)/(1<<20), float64(u.PeakAnon)/(1<<20))
	return nil
}

// grpcProducer starts a stock SDK producer of topic at endpoint.
func grpcProducer(endpoint, topic string) (rmqclient.Producer, error) {
	p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: endpoint, Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithTopics(topic))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("compare: producer of %s at %s: %w", topic, endpoint, err)
	}
	return p, nil
}

// grpcConsumer starts a stock SDK simple consumer of every tag of topic.
func grpcConsumer(endpoint, topic string) (rmqclient.SimpleConsumer, error) {
	c, err := rmqclient.NewSimpleConsumer(&rmqclient.Config{Endpoint: endpoint, ConsumerGroup: grpcGroupPrefix + topic,
		Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithAwaitDuration(grpcAwait),
		rmqclient.WithSubscriptionExpressions(map[string]*rmqclient.FilterExpression{topic: rmqclient.SUB_ALL}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("compare: simple consumer of %s at %s: %w", topic, endpoint, err)
	}
	return c, nil
}

// errCount counts errors and keeps the first.
type errCount struct {
	mu    sync.Mutex
	n     int64
	first error
}

func (e *errCount) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		e.first = err
	}
	e.n++
}

func (e *errCount) count() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// String is "0", or the count and the first error.
func (e *errCount) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d, first: %v", e.n, e.first)
}

// sendStats counts one load's sends.
type sendStats struct {
	ok     atomic.Int64
	failed errCount
	lat    bench.Histogram
}

func (s *sendStats) done(start time.Time, err error) {
	if err != nil {
		s.failed.add(err)
		return
	}
	s.ok.Add(1)
	s.lat.Record(time.Since(start))
}

// grpcMessage is a 1 KiB message of topic stamped with its send time (and
// due time when due is set).
func grpcMessage(topic string, body []byte, sent, due time.Time) *rmqclient.Message {
	m := &rmqclient.Message{Topic: topic, Body: body}
	m.AddProperty(grpcPropSent, strconv.FormatInt(sent.UnixMicro(), 10))
	if !due.IsZero() {
		m.AddProperty(grpcPropDue, strconv.FormatInt(due.UnixMicro(), 10))
		m.SetDelayTimestamp(due)
	}
	return m
}

// saturate sends as fast as -conns producers with -inflight sends each
// allow, for d.
func (r *runner) saturate(ctx context.Context, ps []rmqclient.Producer, topic string, d time.Duration) *sendStats {
	st := &sendStats{}
	body := make([]byte, grpcBody)
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		for range r.cfg.inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for sctx.Err() == nil {
					now := time.Now()
					cctx, ccancel := context.WithTimeout(ctx, grpcSendTimeout)
					_, err := p.Send(cctx, grpcMessage(topic, body, now, time.Time{}))
					ccancel()
					st.done(now, err)
				}
			}()
		}
	}
	wg.Wait()
	return st
}

// grpcSend is workload k's send throughput.
func (r *runner) grpcSend(ctx context.Context, t *target, c *cluster, endpoint string) error {
	var ps []rmqclient.Producer
	defer func() {
		for _, p := range ps {
			_ = p.GracefulStop()
		}
	}()
	for range r.cfg.conns {
		p, err := grpcProducer(endpoint, topicGRPCSend)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	r.saturate(ctx, ps, topicGRPCSend, r.cfg.warmup)
	self := startSampler(os.Getpid(), r.cfg.samplePeriod)
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	start := time.Now()
	st := r.saturate(ctx, ps, topicGRPCSend, r.cfg.duration)
	took := time.Since(start)
	u, du := smp.stop(), self.stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	if st.ok.Load() == 0 {
		return fmt.Errorf("compare: no gRPC send succeeded: %v", st.failed.first)
	}
	k := grpcKey + ".send"
	r.recordUsage(t, k, u)
	tps := float64(st.ok.Load()) / took.Seconds()
	r.set(t, k+".tps", tps)
	if u.CPU > 0 {
		r.set(t, k+".tpcpu", float64(st.ok.Load())/u.CPU.Seconds())
	}
	r.setPercentiles(t, k, st.lat.Percentiles())
	r.set(t, k+".failed", float64(st.failed.count()))
	r.set(t, k+".driver", du.CPU.Seconds())
	p := st.lat.Percentiles()
	r.logf("%s gRPC send 1 KiB: %.0f msg/s, %.0f msg per broker CPU-s, p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms, failed: %s, broker CPU %.1f s, driver CPU %.1f s",
		t.name, tps, float64(st.ok.Load())/max(u.CPU.Seconds(), 1e-9), p.P50, p.P99, p.P999, p.Max, &st.failed, u.CPU.Seconds(), du.CPU.Seconds())
	return nil
}

// setPercentiles stores p50, p99, p99.9 and max under key.
func (r *runner) setPercentiles(t *target, key string, p bench.Percentiles) {
	r.set(t, key+".p50", p.P50)
	r.set(t, key+".p99", p.P99)
	r.set(t, key+".p999", p.P999)
	r.set(t, key+".max", p.Max)
}

// paced sends count messages at rate from one producer, due giving each
// its due time (zero: none); it returns once every send is answered.
func paced(ctx context.Context, p rmqclient.Producer, topic string, count int64, rate float64, due func(sent time.Time) time.Time) *sendStats {
	st := &sendStats{}
	body := make([]byte, grpcBody)
	sem := make(chan struct{}, grpcMaxOpen)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range count {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			if sleepCtx(ctx, d) != nil {
				break
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			now := time.Now()
			m := grpcMessage(topic, body, now, due(now))
			cctx, cancel := context.WithTimeout(ctx, grpcSendTimeout)
			_, err := p.Send(cctx, m)
			cancel()
			st.done(now, err)
		}()
	}
	wg.Wait()
	return st
}

// receiveLoop runs grpcReceivers Receive loops on c until ctx ends; each
// received message goes to handle with the time its Receive returned.
// Errors other than an empty receive are counted in errs.
func receiveLoop(ctx context.Context, c rmqclient.SimpleConsumer, invisible time.Duration, errs *errCount,
	handle func(mv *rmqclient.MessageView, at time.Time)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range grpcReceivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mvs, err := c.Receive(ctx, grpcBatch, invisible)
				at := time.Now()
				if err != nil {
					if ctx.Err() == nil && !emptyReceive(err) {
						errs.add(err)
						_ = sleepCtx(ctx, grpcErrorWait)
					}
					continue
				}
				for _, mv := range mvs {
					handle(mv, at)
				}
			}
		}()
	}
	return &wg
}

// emptyReceive reports whether err is a long poll that found nothing (the
// SDK's MESSAGE_NOT_FOUND status, or its client-side deadline).
func emptyReceive(err error) bool {
	if e, ok := rmqclient.AsErrRpcStatus(err); ok {
		return e.GetCode() == int32(v2.Code_MESSAGE_NOT_FOUND)
	}
	return strings.Contains(err.Error(), "DEADLINE_EXCEEDED") || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// propTime reads a unix-µs property of mv.
func propTime(mv *rmqclient.MessageView, key string) (time.Time, bool) {
	v, ok := mv.GetProperties()[key]
	if !ok {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
}

// lateness collects how late deliveries came after they were due;
// deliveries before due count as 0 in the histogram and as early. For the
// log, it also keeps the span of due times of the deliveries later than
// slowLate (one stall or many).
type lateness struct {
	hist     bench.Histogram
	early    atomic.Int64
	maxEarly atomic.Int64 // µs

	mu               sync.Mutex
	firstDue         time.Time // of every delivery
	slow             int64     // deliveries later than slowLate
	slowPopped       int64     // of them, popped later than slowLate after due
	slowFrom, slowTo time.Time // their first and last due time
}

// slowLate is the lateness the log's stall summary counts.
const slowLate = 100 * time.Millisecond

// record counts a delivery due at due, received at at, popped by the
// broker at popped (from its receipt handle; zero: unknown).
func (l *lateness) record(at, due, popped time.Time) {
	d := at.Sub(due)
	l.hist.Record(d)
	l.mu.Lock()
	if l.firstDue.IsZero() || due.Before(l.firstDue) {
		l.firstDue = due
	}
	if d > slowLate {
		l.slow++
		if !popped.IsZero() && popped.Sub(due) > slowLate {
			l.slowPopped++
		}
		if l.slowFrom.IsZero() || due.Before(l.slowFrom) {
			l.slowFrom = due
		}
		if due.After(l.slowTo) {
			l.slowTo = due
		}
	}
	l.mu.Unlock()
	if d < 0 {
		l.early.Add(1)
		for {
			m := l.maxEarly.Load()
			if -d.Microseconds() <= m || l.maxEarly.CompareAndSwap(m, -d.Microseconds()) {
				break
			}
		}
	}
}

// slowSpan says how many deliveries were later than slowLate and when,
// relative to the first due time, they were due.
func (l *lateness) slowSpan() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slow == 0 {
		return fmt.Sprintf("none later than %v", slowLate)
	}
	return fmt.Sprintf("%d later than %v, %d of them popped that late, due %.2f-%.2f s after the first due time", l.slow, slowLate,
		l.slowPopped, l.slowFrom.Sub(l.firstDue).Seconds(), l.slowTo.Sub(l.firstDue).Seconds())
}

// seenSet is the message IDs a consumer has had, with a value each.
type seenSet[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func newSeenSet[V any]() *seenSet[V] { return &seenSet[V]{m: map[string]V{}} }

// add stores v under id unless id is there; it reports whether it was new
// and returns the stored value.
func (s *seenSet[V]) add(id string, v V) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[id]; ok {
		return old, false
	}
	s.m[id] = v
	return v, true
}

func (s *seenSet[V]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// waitCount polls n until it reaches want or deadline passes.
func waitCount(ctx context.Context, n func() int64, want int64, deadline time.Time) {
	for n() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		_ = sleepCtx(ctx, 50*time.Millisecond)
	}
}

// grpcE2E is workload k's receive + ack: a producer paced at -grpc-rate for
// -duration, a simple consumer acking each message; sent -> acked.
func (r *runner) grpcE2E(ctx context.Context, t *target, c *cluster, endpoint string) error {
	count := int64(r.cfg.grpcRate * r.cfg.duration.Seconds())
	e2e, recv, errs := &bench.Histogram{}, &bench.Histogram{}, &errCount{}
	seen := newSeenSet[struct{}]()
	var acked, ackFailed, dups atomic.Int64
	// Of the deliveries later than slowLate, those the broker popped that
	// late too (the wait was before the pop, not after it).
	var slow, slowPop atomic.Int64
	res, err := r.consumeWhile(ctx, c, endpoint, topicGRPCE2E, grpcAckInvisible, errs, func(cons rmqclient.SimpleConsumer, mv *rmqclient.MessageView, at time.Time) {
		sent, ok := propTime(mv, grpcPropSent)
		if !ok {
			return
		}
		if _, fresh := seen.add(mv.GetMessageId(), struct{}{}); !fresh {
			dups.Add(1)
		}
		recv.Record(at.Sub(sent))
		if at.Sub(sent) > slowLate {
			slow.Add(1)
			if pop, _, err := receiptTimes(mv.GetReceiptHandle()); err == nil && pop.Sub(sent) > slowLate {
				slowPop.Add(1)
			}
		}
		if err := cons.Ack(ctx, mv); err != nil {
			ackFailed.Add(1)
			return
		}
		e2e.Record(time.Since(sent))
		acked.Add(1)
	}, func(p rmqclient.Producer) (*sendStats, time.Time) {
		st := paced(ctx, p, topicGRPCE2E, count, r.cfg.grpcRate, func(time.Time) time.Time { return time.Time{} })
		return st, time.Now()
	}, func() int64 { return int64(seen.len()) })
	if err != nil {
		return err
	}
	k := grpcKey + ".e2e"
	r.recordUsage(t, k, res.usage)
	r.setPercentiles(t, k, e2e.Percentiles())
	r.setPercentiles(t, k+".recv", recv.Percentiles())
	r.setPercentiles(t, k+".send", res.sent.lat.Percentiles())
	r.set(t, k+".sent", float64(res.sent.ok.Load()))
	r.set(t, k+".failed", float64(res.sent.failed.count()))
	r.set(t, k+".lost", float64(res.sent.ok.Load()-int64(seen.len())))
	r.set(t, k+".ackfail", float64(ackFailed.Load()))
	r.set(t, k+".dups", float64(dups.Load()))
	r.set(t, k+".errors", float64(errs.count()))
	p, q, sp := e2e.Percentiles(), recv.Percentiles(), res.sent.lat.Percentiles()
	r.logf("%s gRPC receive+ack at %.0f msg/s: %d sent (failed: %s), %d acked (%d ack failures, %d duplicates, receive errors: %s), sent->acked p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms, sent->received p99 %.2f ms (%d later than %v, %d of them popped that late), send p99 %.2f max %.2f ms, broker CPU %.1f s",
		t.name, r.cfg.grpcRate, res.sent.ok.Load(), &res.sent.failed, acked.Load(), ackFailed.Load(), dups.Load(), errs.String(), p.P50, p.P99, p.P999, p.Max, q.P99, slow.Load(), slowLate, slowPop.Load(), sp.P99, sp.Max, res.usage.CPU.Seconds())
	return nil
}

// consumed is what consumeWhile saw.
type consumed struct {
	sent  *sendStats
	usage usage
}

// consumeWhile runs a simple consumer of topic (handle sees each message)
// while send produces; it waits until got reaches the sends answered, or
// grpcGrace after the time send returns, and samples the broker over it.
func (r *runner) consumeWhile(ctx context.Context, c *cluster, endpoint, topic string, invisible time.Duration, errs *errCount,
	handle func(rmqclient.SimpleConsumer, *rmqclient.MessageView, time.Time),
	send func(rmqclient.Producer) (*sendStats, time.Time), got func() int64) (*consumed, error) {
	cons, err := grpcConsumer(endpoint, topic)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cons.GracefulStop() }()
	p, err := grpcProducer(endpoint, topic)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.GracefulStop() }()
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	rctx, cancel := context.WithCancel(ctx)
	wg := receiveLoop(rctx, cons, invisible, errs, func(mv *rmqclient.MessageView, at time.Time) { handle(cons, mv, at) })
	st, last := send(p)
	waitCount(ctx, got, st.ok.Load(), last.Add(grpcGrace))
	cancel()
	wg.Wait()
	u := smp.stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st.ok.Load() == 0 {
		return nil, fmt.Errorf("compare: no gRPC send to %s succeeded: %v", topic, st.failed.first)
	}
	return &consumed{sent: st, usage: u}, nil
}

// grpcTimers is workload k's delivery timestamps: -grpc-timers messages
// paced at -grpc-rate, each due grpcTimerAhead after its send; received -
// due.
func (r *runner) grpcTimers(ctx context.Context, t *target, c *cluster, endpoint string) error {
	late, errs := &lateness{}, &errCount{}
	seen := newSeenSet[struct{}]()
	var ackFailed, dups atomic.Int64
	res, err := r.consumeWhile(ctx, c, endpoint, topicGRPCTimer, grpcAckInvisible, errs, func(cons rmqclient.SimpleConsumer, mv *rmqclient.MessageView, at time.Time) {
		due, ok := propTime(mv, grpcPropDue)
		if !ok {
			_ = cons.Ack(ctx, mv) // primeDelay's
			return
		}
		if _, fresh := seen.add(mv.GetMessageId(), struct{}{}); fresh {
			popped, _, _ := receiptTimes(mv.GetReceiptHandle())
			late.record(at, due, popped)
		} else {
			dups.Add(1)
		}
		if err := cons.Ack(ctx, mv); err != nil {
			ackFailed.Add(1)
		}
	}, func(p rmqclient.Producer) (*sendStats, time.Time) {
		if err := primeDelay(ctx, p, topicGRPCTimer); err != nil {
			return &sendStats{failed: errCount{n: 1, first: err}}, time.Now()
		}
		// Whole milliseconds: both brokers keep a delivery timestamp in ms
		// (TIMER_DELIVER_MS), and a due time between two would show a
		// delivery on time as up to 1 ms early.
		st := paced(ctx, p, topicGRPCTimer, r.cfg.grpcTimers, r.cfg.grpcRate, func(sent time.Time) time.Time {
			return sent.Add(grpcTimerAhead).Truncate(time.Millisecond)
		})
		return st, time.Now().Add(grpcTimerAhead)
	}, func() int64 { return int64(seen.len()) })
	if err != nil {
		return err
	}
	k := grpcKey + ".dt"
	r.recordLateness(t, k, late, res, int64(seen.len()))
	r.set(t, k+".ackfail", float64(ackFailed.Load()))
	r.set(t, k+".dups", float64(dups.Load()))
	p := late.hist.Percentiles()
	r.logf("%s gRPC delivery timestamps +%v at %.0f msg/s: %d sent (failed: %s), %d received (%d early, by up to %.1f ms; %d duplicates, receive errors: %s), lateness p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms (%s), broker CPU %.1f s",
		t.name, grpcTimerAhead, r.cfg.grpcRate, res.sent.ok.Load(), &res.sent.failed, seen.len(), late.early.Load(), float64(late.maxEarly.Load())/1000,
		dups.Load(), errs.String(), p.P50, p.P99, p.P999, p.Max, late.slowSpan(), res.usage.CPU.Seconds())
	return nil
}

// primeDelay sends delay messages without grpcPropDue (the consumer acks
// and skips them) until one is accepted. The SDK checks a message's type
// against the route's accepted types until the endpoint's Settings reach
// it, and the stock proxy routes a topic without a message.type attribute
// as NORMAL only: the first DELAY sends would fail in the SDK, on the Java
// side alone.
func primeDelay(ctx context.Context, p rmqclient.Producer, topic string) error {
	var err error
	for range 50 {
		m := &rmqclient.Message{Topic: topic, Body: []byte("prime")}
		m.SetDelayTimestamp(time.Now().Add(time.Millisecond))
		cctx, cancel := context.WithTimeout(ctx, grpcSendTimeout)
		_, err = p.Send(cctx, m)
		cancel()
		if err == nil || sleepCtx(ctx, grpcErrorWait) != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("compare: no delay message accepted: %w", err)
	}
	return nil
}

// recordLateness stores a lateness workload's numbers under key.
func (r *runner) recordLateness(t *target, key string, late *lateness, res *consumed, got int64) {
	r.recordUsage(t, key, res.usage)
	r.setPercentiles(t, key, late.hist.Percentiles())
	r.set(t, key+".sent", float64(res.sent.ok.Load()))
	r.set(t, key+".failed", float64(res.sent.failed.count()))
	r.set(t, key+".early", float64(late.early.Load()))
	r.set(t, key+".lost", float64(res.sent.ok.Load()-got))
}

// receiptTimes reads the popTime (retrieveTime) and the invisibleTime of a
// receipt handle, whose fields both brokers write as ReceiptHandle.encode
// does (common/consumer ReceiptHandle.java): startOffset retrieveTime
// invisibleTime reviveQueueId topicType brokerName queueId offset
// [commitLogOffset].
func receiptTimes(handle string) (pop time.Time, invisible time.Duration, err error) {
	f := strings.Fields(handle)
	if len(f) < 8 {
		return time.Time{}, 0, fmt.Errorf("compare: receipt handle %q has %d fields, want at least 8", handle, len(f))
	}
	popMs, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("compare: receipt handle %q: retrieveTime: %w", handle, err)
	}
	inv, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("compare: receipt handle %q: invisibleTime: %w", handle, err)
	}
	return time.UnixMilli(popMs), time.Duration(inv) * time.Millisecond, nil
}

// grpcReviveLateness is workload k's POP revive: -grpc-revive messages
// paced at -grpc-rate, received with invisible duration grpcRevive and not
// acked; each redelivery is measured against the end of the first
// receipt's invisible time, then acked.
func (r *runner) grpcReviveLateness(ctx context.Context, t *target, c *cluster, endpoint string) error {
	late, errs := &lateness{}, &errCount{}
	first := newSeenSet[time.Time]()
	again := newSeenSet[struct{}]()
	var badHandle, ackFailed atomic.Int64
	res, err := r.consumeWhile(ctx, c, endpoint, topicGRPCRevive, grpcRevive, errs, func(cons rmqclient.SimpleConsumer, mv *rmqclient.MessageView, at time.Time) {
		popped, inv, err := receiptTimes(mv.GetReceiptHandle())
		if err != nil {
			badHandle.Add(1)
			return
		}
		firstDue, fresh := first.add(mv.GetMessageId(), popped.Add(inv))
		if fresh {
			return // not acked: it comes back once due
		}
		if _, fresh := again.add(mv.GetMessageId(), struct{}{}); fresh {
			late.record(at, firstDue, popped)
		}
		if err := cons.Ack(ctx, mv); err != nil {
			ackFailed.Add(1)
		}
	}, func(p rmqclient.Producer) (*sendStats, time.Time) {
		st := paced(ctx, p, topicGRPCRevive, r.cfg.grpcRevive, r.cfg.grpcRate, func(time.Time) time.Time { return time.Time{} })
		return st, time.Now().Add(grpcRevive)
	}, func() int64 { return int64(again.len()) })
	if err != nil {
		return err
	}
	if n := badHandle.Load(); n > 0 {
		return fmt.Errorf("compare: %s: %d receipt handles without popTime and invisibleTime", t.name, n)
	}
	k := grpcKey + ".rv"
	r.recordLateness(t, k, late, res, int64(again.len()))
	r.set(t, k+".ackfail", float64(ackFailed.Load()))
	p := late.hist.Percentiles()
	r.logf("%s gRPC revive after %v invisible: %d sent (failed: %s), %d first received, %d redelivered (%d early, by up to %.1f ms; receive errors: %s), lateness p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms (%s), broker CPU %.1f s",
		t.name, grpcRevive, res.sent.ok.Load(), &res.sent.failed, first.len(), again.len(), late.early.Load(), float64(late.maxEarly.Load())/1000, errs.String(),
		p.P50, p.P99, p.P999, p.Max, late.slowSpan(), res.usage.CPU.Seconds())
	return nil
}

// grpcRows are the table rows of workload k against jp, the Java proxy;
// same is rows()'s helper.
func (r *runner) grpcRows(jp *target, same func(wl, metric, unit string, peer *target, k string, g goal)) {
	latencies := func(wl, what string, key string, p99 goal) {
		same(wl, what+" p50", "ms", jp, key+".p50", noGoal)
		same(wl, what+" p99", "ms", jp, key+".p99", p99)
		same(wl, what+" p99.9", "ms", jp, key+".p999", noGoal)
		same(wl, what+" max", "ms", jp, key+".max", noGoal)
	}
	k := grpcKey
	ws := "k gRPC send 1 KiB, saturated (Go 5.x SDK)"
	same(ws, "throughput", "msg/s", jp, k+".send.tps", atLeast(2))
	same(ws, "msg per broker CPU-second", "msg/CPU-s", jp, k+".send.tpcpu", atLeast(2))
	latencies(ws, "send", k+".send", noGoal)
	same(ws, "failed sends", "", jp, k+".send.failed", noGoal)
	same(ws, "broker CPU", "s", jp, k+".send.cpu", noGoal)
	same(ws, "driver CPU (this process, SDK included)", "s", jp, k+".send.driver", noGoal)

	we := fmt.Sprintf("k gRPC receive + ack at %.0f msg/s", r.cfg.grpcRate)
	latencies(we, "sent to acked", k+".e2e", atMost(0.5))
	same(we, "sent to received p99", "ms", jp, k+".e2e.recv.p99", noGoal)
	same(we, "send p99", "ms", jp, k+".e2e.send.p99", noGoal)
	same(we, "not received", "msgs", jp, k+".e2e.lost", zeroRMQ)
	same(we, "failed sends", "", jp, k+".e2e.failed", noGoal)
	same(we, "failed acks", "", jp, k+".e2e.ackfail", noGoal)
	same(we, "broker CPU", "s", jp, k+".e2e.cpu", noGoal)

	wt := fmt.Sprintf("k gRPC delivery timestamp +%v, %d msgs at %.0f/s", grpcTimerAhead, r.cfg.grpcTimers, r.cfg.grpcRate)
	latencies(wt, "lateness", k+".dt", atMost(0.1))
	same(wt, "delivered early", "msgs", jp, k+".dt.early", zeroRMQ)
	same(wt, "lost", "msgs", jp, k+".dt.lost", zeroRMQ)
	same(wt, "failed sends", "", jp, k+".dt.failed", noGoal)
	same(wt, "broker CPU", "s", jp, k+".dt.cpu", noGoal)

	wr := fmt.Sprintf("k gRPC POP revive after %v invisible, %d msgs", grpcRevive, r.cfg.grpcRevive)
	latencies(wr, "redelivery lateness", k+".rv", rmqAtMost(50))
	same(wr, "redelivered early", "msgs", jp, k+".rv.early", zeroRMQ)
	same(wr, "not redelivered", "msgs", jp, k+".rv.lost", zeroRMQ)
	same(wr, "broker CPU", "s", jp, k+".rv.cpu", noGoal)

	wm := "k gRPC, whole workload"
	same(wm, "peak RSS (rmq broker; Java broker + proxy, one JVM)", "MiB", jp, k+".rss", atMost(0.1))
	same(wm, "peak anonymous RSS", "MiB", jp, k+".anon", noGoal)
}
