package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// Workload l (issue 44): a replicated pair of each implementation, a master
// and its slave (brokerId 1, SLAVE) on this machine, one name server.
//
//   - SYNC_MASTER: 1 KiB sends as fast as the in-flight window allows, after
//     a warm-up; throughput, send p99, and the CPU of master and slave
//     together per acknowledged message. A send counts only when it answers
//     SEND_OK (the slave has the bytes); FLUSH_SLAVE_TIMEOUT and
//     SLAVE_NOT_AVAILABLE are counted apart.
//   - ASYNC_MASTER: sends paced at the end-to-end rate (-e2e-rate) to one
//     queue while a poller asks the slave for that queue's max offset every
//     millisecond; a message's replication lag is from its SEND_OK to the
//     first poll that finds it on the slave (readable there: in its consume
//     queue). The poll's own round trip is part of it, for both brokers.
//
// It is opt-in (-only l): it needs replication on both sides.

const (
	topicHA    = "CmpHA"
	haPollWait = time.Millisecond
)

// haPair is a master cluster (name server + master) and its slave.
type haPair struct {
	c         *cluster
	slave     *process
	slavePort int
}

func (p *haPair) close() {
	if p.slave != nil {
		p.slave.stop(stopGrace)
	}
	p.c.close()
}

func (p *haPair) slaveAddr() string { return fmt.Sprintf("127.0.0.1:%d", p.slavePort) }

// startHAPair starts a name server, a master of role, and a slave, each with
// its own store under dir, and waits until the name server lists both.
func startHAPair(ctx context.Context, t *target, dir, role string) (*haPair, error) {
	c, _, err := startClusterConf(ctx, t, filepath.Join(dir, "master"), asyncFlush, []string{"brokerRole=" + role})
	if err != nil {
		return nil, err
	}
	p := &haPair{c: c}
	sdir := filepath.Join(dir, "slave")
	if err := os.RemoveAll(sdir); err != nil {
		p.close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(sdir, "logs"), 0o755); err != nil {
		p.close()
		return nil, err
	}
	if p.slavePort, err = brokerPorts(); err != nil {
		p.close()
		return nil, err
	}
	argv, env, err := t.brokerArgv(sdir, c.nsPort, p.slavePort, asyncFlush, []string{"brokerId=1", "brokerRole=SLAVE"})
	if err != nil {
		p.close()
		return nil, err
	}
	if p.slave, err = startProcess(t.name+" slave", argv, env, sdir, filepath.Join(sdir, "logs", "broker")); err != nil {
		p.close()
		return nil, err
	}
	_, ready := t.readyLines()
	if _, err := p.slave.waitReady(ctx, ready, brokerBootTimeout); err != nil {
		p.close()
		return nil, err
	}
	deadline := time.Now().Add(routeTimeout)
	for {
		ci, err := c.adm.ClusterInfo(ctx)
		if err == nil {
			for _, bd := range ci.BrokerAddrTable {
				if bd.BrokerAddrs[1] == p.slaveAddr() {
					return p, nil
				}
			}
		}
		if time.Now().After(deadline) {
			p.close()
			return nil, fmt.Errorf("%w: slave %s", errRoute, p.slaveAddr())
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			p.close()
			return nil, err
		}
	}
}

// waitSlaveFollows sends single messages until one answers SEND_OK and the
// slave holds every queue of topicHA up to the master's end: the slave is
// connected and reporting.
func (p *haPair) waitSlaveFollows(ctx context.Context, cl *remoting.Client) error {
	queues, err := p.c.route(ctx, topicHA)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, _, err := haSend(ctx, cl, queues[0], make([]byte, 16))
		if err == nil && code == remoting.Success {
			caught := true
			for _, q := range queues {
				m, err1 := p.c.adm.MaxOffset(ctx, q)
				sq := q
				sq.Addr = p.slaveAddr()
				s, err2 := p.c.adm.MaxOffset(ctx, sq)
				if err1 != nil || err2 != nil || s != m {
					caught = false
					break
				}
			}
			if caught {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("compare: the slave %s did not follow its master within 2 min (last send: code %d, %v)", p.slaveAddr(), code, err)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// haSend sends one message to q and returns the response code and the
// queue offset it was stored at.
func haSend(ctx context.Context, cl *remoting.Client, q admin.QueueAddr, body []byte) (int32, int64, error) {
	now := time.Now()
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: "cmp_ha_producer", Topic: q.Topic, QueueID: q.QueueID, Body: body,
		Properties:    map[string]string{message.PropUniqKey: admin.NewUniqID(now), message.PropWait: "true"},
		BornTimestamp: now.UnixMilli(),
	})
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	resp, err := cl.Invoke(sctx, q.Addr, req)
	if err != nil {
		return 0, 0, err
	}
	off, _ := strconv.ParseInt(resp.Ext()["queueOffset"], 10, 64)
	return resp.Code, off, nil
}

// haPhase runs workload l on each target.
func (r *runner) haPhase(ctx context.Context, targets []*target) error {
	for _, t := range targets {
		if err := r.haSync(ctx, t); err != nil {
			return fmt.Errorf("%s: SYNC_MASTER pair: %w", t.name, err)
		}
		if err := r.haLag(ctx, t); err != nil {
			return fmt.Errorf("%s: ASYNC_MASTER pair: %w", t.name, err)
		}
	}
	return nil
}

// haTopic is a started pair of role with topicHA created, the slave
// following, a client and topicHA's queues on the master.
type haTopic struct {
	pair   *haPair
	cl     *remoting.Client
	queues []admin.QueueAddr
	dir    string
}

func (h *haTopic) close() {
	h.cl.Close()
	h.pair.close()
	os.RemoveAll(h.dir)
}

// startHATopic starts the pair of role for t under the work directory
// (ha-sync or ha-async), creates topicHA and waits until the slave follows:
// the setup both halves of workload l share.
func (r *runner) startHATopic(ctx context.Context, t *target, role string) (*haTopic, error) {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-ha-"+strings.ToLower(strings.TrimSuffix(role, "_MASTER")))
	p, err := startHAPair(ctx, t, dir, role)
	if err != nil {
		return nil, err
	}
	h := &haTopic{pair: p, cl: remoting.NewClient(remoting.ClientOptions{SerializeType: serialize}), dir: dir}
	if err := p.c.createTopic(ctx, topicHA); err != nil {
		h.close()
		return nil, err
	}
	if err := p.waitSlaveFollows(ctx, h.cl); err != nil {
		h.close()
		return nil, err
	}
	if h.queues, err = p.c.route(ctx, topicHA); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// haSync is the SYNC_MASTER half of workload l.
func (r *runner) haSync(ctx context.Context, t *target) error {
	h, err := r.startHATopic(ctx, t, "SYNC_MASTER")
	if err != nil {
		return err
	}
	defer h.close()
	p, cl, queues := h.pair, h.cl, h.queues
	if _, err := haSaturate(ctx, cl, queues, r.cfg.inFlight(), r.cfg.warmup, nil); err != nil {
		return err
	}
	ms, ss := startSampler(p.c.broker.pid(), r.cfg.samplePeriod), startSampler(p.slave.pid(), r.cfg.samplePeriod)
	res, err := haSaturate(ctx, cl, queues, r.cfg.inFlight(), r.cfg.duration, nil)
	mu, su := ms.stop(), ss.stop()
	if err != nil {
		return err
	}
	cpu := mu.CPU + su.CPU
	tps := float64(res.ok) / res.elapsed.Seconds()
	pc := res.lat.Percentiles()
	r.set(t, "wl.tps", tps)
	r.set(t, "wl.p99", pc.P99)
	r.set(t, "wl.notok", float64(res.notOK))
	r.set(t, "wl.failed", float64(res.failed))
	r.set(t, "wl.cpu", cpu.Seconds())
	if res.ok > 0 {
		r.set(t, "wl.cpumsg", cpu.Seconds()/float64(res.ok)*1e6)
	}
	r.logf("%s SYNC_MASTER pair: %.0f SEND_OK/s, p99 %.2f ms (p50 %.2f, max %.2f), %d answered other than SEND_OK %v, %d failed, CPU master %.1f s + slave %.1f s = %.1f µs per message",
		t.name, tps, pc.P99, pc.P50, pc.Max, res.notOK, res.codes, res.failed, mu.CPU.Seconds(), su.CPU.Seconds(),
		cpu.Seconds()/max(float64(res.ok), 1)*1e6)
	return nil
}

// haResult is what haSaturate measured.
type haResult struct {
	ok, notOK, failed int64
	codes             map[int32]int64
	lat               *bench.Histogram // SEND_OK answers only
	elapsed           time.Duration
}

// haSaturate keeps inflight sends of 1 KiB outstanding over queues for d.
// acked, when set, is called with each SEND_OK's queue offset and time.
func haSaturate(ctx context.Context, cl *remoting.Client, queues []admin.QueueAddr, inflight int, d time.Duration,
	acked func(q int, off int64, at time.Time)) (*haResult, error) {
	res := &haResult{codes: map[int32]int64{}, lat: &bench.Histogram{}}
	var mu sync.Mutex
	var ok, notOK, failed atomic.Int64
	body := make([]byte, 1024)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(end) && ctx.Err() == nil; i += inflight {
				qi := i % len(queues)
				t0 := time.Now()
				code, off, err := haSend(ctx, cl, queues[qi], body)
				switch {
				case err != nil:
					failed.Add(1)
				case code == remoting.Success:
					res.lat.Record(time.Since(t0))
					ok.Add(1)
					if acked != nil {
						acked(qi, off, time.Now())
					}
				default:
					notOK.Add(1)
					mu.Lock()
					res.codes[code]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.ok, res.notOK, res.failed = ok.Load(), notOK.Load(), failed.Load()
	return res, ctx.Err()
}

// haLag is the ASYNC_MASTER half of workload l: replication lag.
func (r *runner) haLag(ctx context.Context, t *target) error {
	h, err := r.startHATopic(ctx, t, "ASYNC_MASTER")
	if err != nil {
		return err
	}
	defer h.close()
	p, cl, queues := h.pair, h.cl, h.queues
	q := queues[0]
	sq := q
	sq.Addr = p.slaveAddr()

	// acks[i] is when offset base+i was acknowledged; the poller reads them.
	// base is the first send's own offset: the queue's max offset read
	// before it can still lag a probe waitSlaveFollows stored (dispatch
	// is asynchronous), which made the first send's offset base+1.
	n := int(r.cfg.e2eRate * r.cfg.duration.Seconds())
	acks := make([]atomic.Int64, n) // unix ns; 0: not acknowledged (yet)
	body := make([]byte, 1024)
	code, base, err := haSend(ctx, cl, q, body)
	if err != nil || code != remoting.Success {
		return fmt.Errorf("compare: lag send 0: code %d: %v", code, err)
	}
	acks[0].Store(time.Now().UnixNano())
	lag := &bench.Histogram{}
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() {
		next := 0 // first index not yet seen on the slave
		for {
			m, err := p.c.adm.MaxOffset(pollCtx, sq)
			now := time.Now().UnixNano()
			if err == nil {
				for ; next < n && base+int64(next) < m; next++ {
					at := acks[next].Load()
					for at == 0 && pollCtx.Err() == nil { // on the slave before its SEND_OK arrived
						at = acks[next].Load()
					}
					lag.Record(time.Duration(max(now-at, 0)))
				}
			}
			if next == n || pollCtx.Err() != nil {
				polled <- pollCtx.Err()
				return
			}
			time.Sleep(haPollWait)
		}
	}()

	interval := time.Duration(float64(time.Second) / r.cfg.e2eRate)
	sendStart := time.Now()
	var failed int64
	for i := 1; i < n && ctx.Err() == nil; i++ {
		if wait := time.Until(sendStart.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		code, off, err := haSend(ctx, cl, q, body)
		if err != nil || code != remoting.Success || off != base+int64(i) {
			failed++
			stopPoll()
			<-polled
			return fmt.Errorf("compare: lag send %d: code %d offset %d (want %d): %v", i, code, off, base+int64(i), err)
		}
		acks[i].Store(time.Now().UnixNano())
	}
	// The poller ends when the slave has the last message (or after 60 s).
	select {
	case err = <-polled:
	case <-time.After(60 * time.Second):
		stopPoll()
		err = <-polled
	}
	stopPoll()
	if err != nil || lag.Count() < int64(n) {
		return fmt.Errorf("compare: the slave had %d of %d messages after 60 s (%v)", lag.Count(), n, err)
	}
	pc := lag.Percentiles()
	r.set(t, "wl.lagp50", pc.P50)
	r.set(t, "wl.lagp99", pc.P99)
	r.set(t, "wl.lagmax", pc.Max)
	r.logf("%s ASYNC_MASTER pair: %d messages at %.0f msg/s, replication lag (SEND_OK to readable on the slave) p50 %.2f p99 %.2f max %.2f ms",
		t.name, n, r.cfg.e2eRate, pc.P50, pc.P99, pc.Max)
	return nil
}

// haRows are the table rows of workload l.
func (r *runner) haRows(j4 *target, same func(wl, metric, unit string, peer *target, k string, g goal)) {
	if !r.cfg.only["l"] {
		return
	}
	wl := "l SYNC_MASTER pair, 1 KiB, saturated"
	same(wl, "SEND_OK throughput", "msg/s", j4, "wl.tps", atLeast(1.5))
	same(wl, "send p99", "ms", j4, "wl.p99", atMost(0.5))
	same(wl, "master+slave CPU per message", "µs", j4, "wl.cpumsg", atMost(0.5))
	same(wl, "answers other than SEND_OK", "", j4, "wl.notok", noGoal)
	wa := fmt.Sprintf("l ASYNC_MASTER pair, %.0f msg/s to one queue", r.cfg.e2eRate)
	same(wa, "replication lag p50", "ms", j4, "wl.lagp50", noGoal)
	same(wa, "replication lag p99", "ms", j4, "wl.lagp99", noGoal)
	same(wa, "replication lag max", "ms", j4, "wl.lagmax", noGoal)
}
