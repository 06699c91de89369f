package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
)

// Topics of workloads a-e.
const (
	topicBacklog = "CmpBacklog"
	topicPipe    = "CmpPipe"
	topicLarge   = "CmpLarge"
	topicScale   = "CmpTimerScale"
	topicMany    = "CmpMany" // + index
)

// Settings of workloads d and e.
const (
	manyWorkers   = 8                // concurrent updateTopic requests
	lookupWorkers = 16               // concurrent route lookups
	scaleBody     = 128              // bytes per pending timer
	scaleDueAfter = 6 * time.Hour    // pending timers are due this far out ...
	scaleWindow   = 6 * time.Hour    // ... spread over this window
	scaleWarmDue  = time.Second      // the warm-up timers are due at once
	drainTimeout  = 30 * time.Minute // bound of workload a's drain
	largeSizes    = "65536,1048576"  // workload c's body sizes
	pipeSlack     = 500 * time.Millisecond
)

// scaleLevels are workload e's pending-timer levels up to max; max itself
// ends the list when it is not one of them.
func scaleLevels(max int64) []int64 {
	var out []int64
	for _, l := range []int64{1_000, 100_000, 1_000_000, 10_000_000} {
		if l <= max {
			out = append(out, l)
		}
	}
	if len(out) == 0 || out[len(out)-1] != max {
		out = append(out, max)
	}
	return out
}

// parseSizes reads a comma-separated list of byte counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitComma(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("compare: size %q is not a positive byte count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// sizeKey names a body size in measure keys: "64k", "1m".
func sizeKey(n int) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "m"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

// sizeName is a body size for people: "64 KiB", "1 MiB".
func sizeName(n int) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// extraPhase runs workloads a, b and c on one ASYNC_FLUSH broker and d on a
// fresh one.
func (r *runner) extraPhase(ctx context.Context, t *target) error {
	if r.cfg.hasAny("a", "b", "c") {
		dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-extra")
		c, _, err := startCluster(ctx, t, dir, asyncFlush)
		if err != nil {
			return err
		}
		err = r.extraWorkloads(ctx, t, c)
		c.close()
		os.RemoveAll(filepath.Join(dir, "store"))
		if err != nil {
			return err
		}
	}
	if r.cfg.has("d") {
		dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-topics")
		c, _, err := startCluster(ctx, t, dir, asyncFlush)
		if err != nil {
			return err
		}
		err = r.manyTopics(ctx, t, c)
		c.close()
		os.RemoveAll(filepath.Join(dir, "store"))
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) extraWorkloads(ctx context.Context, t *target, c *cluster) error {
	for _, topic := range []string{topicBacklog, topicPipe, topicLarge} {
		if err := c.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	if r.cfg.has("a") {
		if err := r.drain(ctx, t, c); err != nil {
			return err
		}
	}
	if r.cfg.has("b") {
		if err := r.pipe(ctx, t, c); err != nil {
			return err
		}
	}
	if r.cfg.has("c") {
		if err := r.large(ctx, t, c); err != nil {
			return err
		}
	}
	return nil
}

// drain is workload a: a backlog of 1 KiB messages is stored first, then
// consumers long-poll every queue from its minimum offset until they have
// it all.
func (r *runner) drain(ctx context.Context, t *target, c *cluster) error {
	n := strconv.FormatInt(r.cfg.backlog, 10)
	fill, err := r.rmqBench(ctx, c.nsAddr(), "produce", "-t", topicBacklog, "-s", "1024", "-c", strconv.Itoa(r.cfg.conns),
		"-w", strconv.Itoa(r.cfg.inflight), "--count", n, "-d", "0s")
	if err != nil {
		return err
	}
	r.logf("%s backlog: %d stored at %.0f msg/s (%d failed)", t.name, fill.Sent, fill.SendTps, fill.SendFailed)
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	s, err := r.rmqBench(ctx, c.nsAddr(), "consume", "-t", topicBacklog, "-g", "cmp_drain", "--from", "min",
		"-c", strconv.Itoa(r.cfg.conns), "--count", strconv.FormatInt(fill.Sent, 10), "-d", drainTimeout.String())
	u := smp.stop()
	if err != nil {
		return err
	}
	r.recordUsage(t, "wa", u)
	r.set(t, "wa.tps", s.RecvTps)
	r.set(t, "wa.received", float64(s.Received))
	r.set(t, "wa.p99", s.Latency.P99)
	r.set(t, "wa.p999", s.Latency.P999)
	r.set(t, "wa.max", s.Latency.Max)
	if u.CPU > 0 {
		r.set(t, "wa.tpcpu", float64(s.Received)/u.CPU.Seconds())
	}
	r.logf("%s drain of %d: %d received at %.0f msg/s, broker CPU %.1f s, %.0f msg per CPU-s, pull p99 %.2f p99.9 %.2f max %.2f ms, peak RSS %.0f MiB",
		t.name, fill.Sent, s.Received, s.RecvTps, u.CPU.Seconds(), float64(s.Received)/max(u.CPU.Seconds(), 1e-9),
		s.Latency.P99, s.Latency.P999, s.Latency.Max, float64(u.PeakRSS)/(1<<20))
	if s.Received < fill.Sent {
		r.note("%s: workload a drained %d of %d messages within %v", t.name, s.Received, fill.Sent, drainTimeout)
	}
	if r.stock != nil {
		return r.stockDrain(ctx, t, c, s.RecvTps)
	}
	return nil
}

// pipe is workload b: saturated sends of 1 KiB and consumers long-polling
// the same (fresh) topic, both for the workload duration.
func (r *runner) pipe(ctx context.Context, t *target, c *cluster) error {
	var (
		wg   sync.WaitGroup
		cons *bench.Summary
		cerr error
	)
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	wg.Add(1)
	go func() {
		defer wg.Done()
		cons, cerr = r.rmqBench(ctx, c.nsAddr(), "consume", "-t", topicPipe, "-g", "cmp_pipe", "--from", "min",
			"-c", strconv.Itoa(r.cfg.conns), "-d", (r.cfg.duration + pipeSlack).String())
	}()
	// The consumer reads the offsets first (from the minimum: nothing sent
	// is missed) and ends with the producer; its rate is over the
	// producer's window, before which there was nothing to receive.
	_ = sleepCtx(ctx, pipeSlack)
	prod, perr := r.rmqBench(ctx, c.nsAddr(), "produce", r.produceArgs(topicPipe, 1024, r.cfg.duration)...)
	wg.Wait()
	u := smp.stop()
	if perr != nil {
		return perr
	}
	if cerr != nil {
		return cerr
	}
	r.recordUsage(t, "wb", u)
	r.set(t, "wb.send", prod.SendTps)
	recvTps := float64(cons.Received) / max(prod.ElapsedSec, 1e-9)
	r.set(t, "wb.recv", recvTps)
	r.set(t, "wb.p99", prod.Latency.P99)
	r.set(t, "wb.p999", prod.Latency.P999)
	r.set(t, "wb.max", prod.Latency.Max)
	r.logf("%s produce+consume: sent %.0f msg/s, received %.0f msg/s, send p99 %.2f p99.9 %.2f max %.2f ms, broker CPU %.1f s, peak RSS %.0f MiB",
		t.name, prod.SendTps, recvTps, prod.Latency.P99, prod.Latency.P999, prod.Latency.Max, u.CPU.Seconds(), float64(u.PeakRSS)/(1<<20))
	return nil
}

// large is workload c: saturated sends of 64 KiB and 1 MiB bodies; MiB/s
// against the sequential write bandwidth measured on the store's file
// system in the same run (by the first target).
func (r *runner) large(ctx context.Context, t *target, c *cluster) error {
	if _, ok := r.m["machine"]["seqwrite"]; !ok {
		bw, err := seqWrite(ctx, filepath.Join(c.dir, "seqwrite.tmp"), r.cfg.seqWriteMiB<<20)
		if err != nil {
			return err
		}
		r.m["machine"] = measures{"seqwrite": bw}
		r.logf("sequential write bandwidth of %s: %.0f MiB/s (%d MiB, fdatasync)", c.dir, bw, r.cfg.seqWriteMiB)
	}
	sizes, err := parseSizes(largeSizes)
	if err != nil {
		return err
	}
	for _, size := range sizes {
		key := "wc." + sizeKey(size)
		smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
		s, err := r.rmqBench(ctx, c.nsAddr(), "produce", r.produceArgs(topicLarge, size, r.cfg.duration)...)
		u := smp.stop()
		if err != nil {
			return err
		}
		r.recordUsage(t, key, u)
		r.set(t, key+".mibps", s.SendMiBps)
		r.set(t, key+".share", s.SendMiBps/r.m["machine"]["seqwrite"])
		r.set(t, key+".p99", s.Latency.P99)
		r.set(t, key+".p999", s.Latency.P999)
		r.set(t, key+".max", s.Latency.Max)
		r.set(t, key+".failed", float64(s.SendFailed))
		r.logf("%s %s sends: %.0f msg/s, %.1f MiB/s (%.0f %% of sequential write), p99 %.2f p99.9 %.2f max %.2f ms, %d failed, peak RSS %.0f MiB",
			t.name, sizeName(size), s.SendTps, s.SendMiBps, 100*s.SendMiBps/r.m["machine"]["seqwrite"], s.Latency.P99, s.Latency.P999, s.Latency.Max,
			s.SendFailed, float64(u.PeakRSS)/(1<<20))
	}
	return nil
}

// seqWrite writes n bytes to path in 1 MiB blocks, fdatasyncs, removes the
// file and returns MiB/s (what `dd bs=1M conv=fdatasync` reports).
func seqWrite(ctx context.Context, path string, n int64) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i*7 + 1) // not all zeroes, should the file system compress
	}
	start := time.Now()
	for done := int64(0); done < n; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k := int64(len(block))
		if n-done < k {
			k = n - done
		}
		if _, err := f.Write(block[:k]); err != nil {
			return 0, err
		}
		done += k
	}
	if err := fdatasync(f); err != nil {
		return 0, err
	}
	secs := time.Since(start).Seconds()
	return float64(n) / (1 << 20) / max(secs, 1e-9), nil
}

// manyTopics is workload d: topicCount topics of 8 queues created with
// updateTopic (manyWorkers at a time), timed until the name server routes
// every one; then route lookups per second; broker and name server memory
// at rest and at peak.
func (r *runner) manyTopics(ctx context.Context, t *target, c *cluster) error {
	bsmp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	nsmp := startSampler(c.ns.pid(), r.cfg.samplePeriod)
	n := r.cfg.topicCount
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%05d", topicMany, i)
	}
	start := time.Now()
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range manyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				spec := admin.TopicSpec{TopicName: names[i], ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
				if _, err := c.adm.UpdateTopic(ctx, spec, c.brokerAddr(), ""); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("compare: create topic %s on %s: %w", names[i], t.name, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		bsmp.stop()
		nsmp.stop()
		return firstErr
	}
	created := time.Since(start)
	// A routed topic stays routed: walk the list once, waiting on each.
	deadline := time.Now().Add(routeTimeout + time.Duration(n)*10*time.Millisecond)
	for _, name := range names {
		for {
			rd, err := c.adm.Route(ctx, name)
			if err == nil && len(admin.PublishQueues(name, rd)) == 8 {
				break
			}
			if time.Now().After(deadline) {
				bsmp.stop()
				nsmp.stop()
				return fmt.Errorf("%w: topic %s: %v", errRoute, name, err)
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				bsmp.stop()
				nsmp.stop()
				return err
			}
		}
	}
	routed := time.Since(start)
	r.set(t, "wd.create", created.Seconds())
	r.set(t, "wd.register", routed.Seconds())
	r.logf("%s %d topics: updateTopic done in %.2f s, all routed in %.2f s", t.name, n, created.Seconds(), routed.Seconds())

	lookups, failed := routeLookups(ctx, c.adm, names, r.cfg.lookupTime)
	bu, nu := bsmp.stop(), nsmp.stop()
	r.set(t, "wd.lookups", float64(lookups)/r.cfg.lookupTime.Seconds())
	r.set(t, "wd.lookupfail", float64(failed))
	r.recordUsage(t, "wd", bu)
	r.set(t, "wd.ns.rss", float64(nu.PeakRSS)/(1<<20))
	r.set(t, "wd.ns.cpu", nu.CPU.Seconds())
	_ = sleepCtx(ctx, r.cfg.idleWait)
	if p, err := readProc(c.broker.pid()); err == nil {
		r.set(t, "wd.idle", float64(p.rss)/(1<<20))
	}
	if p, err := readProc(c.ns.pid()); err == nil {
		r.set(t, "wd.ns.idle", float64(p.rss)/(1<<20))
	}
	r.logf("%s route lookups: %.0f/s (%d failed), name server CPU %.1f s; broker RSS peak %.0f idle %.0f MiB, name server RSS peak %.0f idle %.0f MiB",
		t.name, float64(lookups)/r.cfg.lookupTime.Seconds(), failed, nu.CPU.Seconds(), float64(bu.PeakRSS)/(1<<20), r.m[t.name]["wd.idle"],
		float64(nu.PeakRSS)/(1<<20), r.m[t.name]["wd.ns.idle"])
	return nil
}

// routeLookups asks for random routes of names with lookupWorkers at a time
// for d and counts the answers and failures.
func routeLookups(ctx context.Context, adm *admin.Admin, names []string, d time.Duration) (ok, failed int64) {
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var okN, failN atomic.Int64
	var wg sync.WaitGroup
	for range lookupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				_, err := adm.Route(lctx, names[rand.IntN(len(names))])
				switch {
				case lctx.Err() != nil:
				case err != nil:
					failN.Add(1)
				default:
					okN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return okN.Load(), failN.Load()
}

// timerScalePhase is workload e on an ASYNC_FLUSH broker: timers due hours
// out are sent up to each pending level, then a probe of scaleProbe more is
// timed (wall time of its sends; broker CPU from a settled broker until it
// has settled again, per message) and the RSS read; last, the broker
// restarts over everything pending.
func (r *runner) timerScalePhase(ctx context.Context, t *target) error {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-scale")
	c, _, err := startCluster(ctx, t, dir, asyncFlush)
	if err != nil {
		return err
	}
	defer func() {
		c.close()
		os.RemoveAll(filepath.Join(dir, "store"))
	}()
	if err := c.createTopic(ctx, topicScale); err != nil {
		return err
	}
	due := time.Now().Add(scaleDueAfter)
	send := func(n int64, soon bool) (*loadResult, error) {
		res, err := runLoad(ctx, c, loadSpec{
			topic: topicScale, count: n, inflight: r.cfg.inFlight(), size: scaleBody, sendOnly: true,
			mark: func(seq int64, now time.Time) (map[string]string, time.Time) {
				if soon {
					return timerProps(now.Add(scaleWarmDue))
				}
				return timerProps(due.Add(time.Duration(rand.Int64N(int64(scaleWindow)))))
			},
		})
		if err != nil {
			return nil, err
		}
		if res.Sent < n {
			return nil, fmt.Errorf("compare: %s accepted %d of %d pending timers: %v", t.name, res.Sent, n, res.Errors)
		}
		return res, nil
	}
	// A warm-up of timers due at once (they leave the wheel before the first
	// level) so that the first probe does not time connection set-up or JIT.
	if _, err := send(r.cfg.scaleProbe, true); err != nil {
		return err
	}
	if err := sleepCtx(ctx, scaleWarmDue+2*time.Second); err != nil {
		return err
	}
	pending := int64(0)
	for _, level := range scaleLevels(r.cfg.scaleMax) {
		if fill := level - pending; fill > 0 {
			res, err := send(fill, false)
			if err != nil {
				return err
			}
			pending += res.Sent
			r.logf("%s timer scale: filled to %d pending at %.0f msg/s", t.name, pending, res.SendRate())
		}
		// The probe's CPU is the broker's from a settled start until it has
		// settled again, so it counts neither the fill's tail nor less than
		// its own work (settle); its wall time is the sends'.
		if d, ok := settle(ctx, c.broker.pid(), settleLimit); !ok {
			r.logf("%s timer scale: not settled %v after the fill to %d pending", t.name, d.Round(time.Millisecond), pending)
		}
		smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
		res, err := send(r.cfg.scaleProbe, false)
		if err == nil {
			if d, ok := settle(ctx, c.broker.pid(), settleLimit); !ok {
				r.logf("%s timer scale: not settled %v after the probe at %d pending", t.name, d.Round(time.Millisecond), pending)
			}
		}
		u := smp.stop()
		if err != nil {
			return err
		}
		pending += res.Sent
		key := "we." + strconv.FormatInt(level, 10)
		us := res.SendElapsed.Seconds() * 1e6 / float64(res.Sent)
		cpuUs := u.CPU.Seconds() * 1e6 / float64(res.Sent)
		p := res.SendLat.Percentiles()
		r.set(t, key+".us", us)
		r.set(t, key+".cpuus", cpuUs)
		r.set(t, key+".p99", p.P99)
		r.set(t, key+".p999", p.P999)
		r.set(t, key+".max", p.Max)
		rss := float64(u.PeakRSS) / (1 << 20)
		if s, err := readProc(c.broker.pid()); err == nil {
			rss = max(rss, float64(s.rss)/(1<<20))
		}
		r.set(t, key+".rss", rss)
		r.logf("%s %d pending timers: enqueue %.1f µs/msg wall, %.1f broker CPU-µs/msg, send p99 %.2f p99.9 %.2f max %.2f ms, RSS %.0f MiB",
			t.name, level, us, cpuUs, p.P99, p.P999, p.Max, rss)
	}
	stop, boot, err := c.restartBroker(ctx)
	if err != nil {
		return err
	}
	r.set(t, "we.pending", float64(pending))
	r.set(t, "we.stop", stop.Seconds())
	r.set(t, "we.restart", boot.Seconds())
	r.logf("%s restart with %d pending timers: stop %.2f s, start to ready %.2f s", t.name, pending, stop.Seconds(), boot.Seconds())
	return nil
}

// ceiling is workload g: workload 1's load (warm-up, then the measured
// run) against the no-op remoting server.
func (r *runner) ceiling(ctx context.Context) error {
	n, err := startNoop()
	if err != nil {
		return err
	}
	defer n.stop()
	if _, err := r.rmqBench(ctx, n.address(), "produce", r.produceArgs(topicSend, 1024, r.cfg.warmup)...); err != nil {
		return err
	}
	s, err := r.rmqBench(ctx, n.address(), "produce", r.produceArgs(topicSend, 1024, r.cfg.duration)...)
	if err != nil {
		return err
	}
	m := measures{"g.tps": s.SendTps, "g.p99": s.Latency.P99, "g.p999": s.Latency.P999, "g.max": s.Latency.Max, "g.failed": float64(s.SendFailed)}
	r.m["noop"] = m
	r.logf("no-op server: %.0f msg/s, p99 %.2f p99.9 %.2f max %.2f ms, %d failed (%d sends answered)",
		s.SendTps, s.Latency.P99, s.Latency.P999, s.Latency.Max, s.SendFailed, n.sends.Load())
	if r.stock == nil {
		return nil
	}
	// The stock Producer's own ceiling: workload 1 by the tool against a
	// server that does nothing. No broker can lead Java under this tool by
	// more than this over Java's figure, whatever it costs.
	dir := filepath.Join(r.cfg.workDir, "noop")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	peer := stockPeer{ns: n.address(), dir: dir, count: func() (int64, error) { return n.sends.Load(), nil }}
	st, _, err := r.runStock(ctx, peer, "Producer", r.stockDuration(), r.stockProducerArgs()...)
	if err != nil {
		return err
	}
	m["g.stock.tps"] = st.steady()
	if v := st.span.toolUs(); v > 0 {
		m["g.stock.toolus"] = v
	}
	r.logf("no-op server, %s: %.0f msg/s (windows %v), max RT %.0f ms, %d failed; after the first %d windows: %d sends answered, the tool's CPU %.1f µs/msg",
		r.stockProducer(), st.steady(), st.tps, st.maxRT, st.failed, stockSkip, st.span.count, st.span.toolUs())
	return nil
}

// extraRows are the table rows of workloads a-e and g; get and same are
// rows()'s helpers, val adds a row of values computed here.
func (r *runner) extraRows(rmq, j4, j5 *target, get func(*target, string) float64,
	same func(wl, metric, unit string, peer *target, k string, g goal),
	val func(wl, metric, unit string, peer *target, rv, jv float64, g goal)) {
	latencies := func(wl, what string, peer *target, key string) {
		same(wl, what+" p99", "ms", peer, key+".p99", noGoal)
		same(wl, what+" p99.9", "ms", peer, key+".p999", noGoal)
		same(wl, what+" max", "ms", peer, key+".max", noGoal)
	}
	wa := fmt.Sprintf("a drain a %d-message backlog", r.cfg.backlog)
	same(wa, "consume throughput", "msg/s", j4, "wa.tps", atLeast(2))
	same(wa, "msg per broker CPU-second", "msg/CPU-s", j4, "wa.tpcpu", atLeast(2.5))
	latencies(wa, "pull", j4, "wa")
	same(wa, "broker CPU", "s", j4, "wa.cpu", noGoal)
	same(wa, "peak RSS while draining", "MiB", j4, "wa.rss", atMost(0.1))
	same(wa, "peak anonymous RSS", "MiB", j4, "wa.anon", noGoal)

	wb := "b produce + consume 1 KiB, saturated"
	same(wb, "send throughput", "msg/s", j4, "wb.send", atLeast(1.5))
	same(wb, "consume throughput", "msg/s", j4, "wb.recv", atLeast(1.5))
	latencies(wb, "send", j4, "wb")
	same(wb, "broker CPU", "s", j4, "wb.cpu", noGoal)
	same(wb, "peak RSS", "MiB", j4, "wb.rss", noGoal)

	seq := r.m["machine"]["seqwrite"]
	if sizes, err := parseSizes(largeSizes); err == nil && seq > 0 {
		for i, size := range sizes {
			wl, key := "c send "+sizeName(size), "wc."+sizeKey(size)
			if i == 0 {
				val(wl, "sequential write bandwidth (1 MiB writes, fdatasync)", "MiB/s", j4, seq, seq, noGoal)
			}
			same(wl, "throughput", "MiB/s", j4, key+".mibps", atLeast(1.5))
			shareGoal := noGoal
			if i == len(sizes)-1 {
				shareGoal = rmqAtLeast(0.8)
			}
			same(wl, "share of sequential write bandwidth", "", j4, key+".share", shareGoal)
			latencies(wl, "send", j4, key)
			same(wl, "broker CPU", "s", j4, key+".cpu", noGoal)
			same(wl, "peak RSS", "MiB", j4, key+".rss", noGoal)
			same(wl, "failed sends", "", j4, key+".failed", noGoal)
		}
	}

	wd := fmt.Sprintf("d %d topics × 8 queues", r.cfg.topicCount)
	same(wd, "registration: create all, until all routed", "s", j4, "wd.register", atMost(0.2))
	same(wd, "updateTopic of all", "s", j4, "wd.create", noGoal)
	same(wd, "route lookups", "lookups/s", j4, "wd.lookups", noGoal)
	same(wd, "failed lookups", "", j4, "wd.lookupfail", noGoal)
	same(wd, "broker idle RSS", "MiB", j4, "wd.idle", atMost(0.1))
	same(wd, "broker peak RSS", "MiB", j4, "wd.rss", atMost(0.1))
	same(wd, "name server idle RSS", "MiB", j4, "wd.ns.idle", noGoal)
	same(wd, "name server peak RSS", "MiB", j4, "wd.ns.rss", noGoal)
	same(wd, "name server CPU", "s", j4, "wd.ns.cpu", noGoal)

	levels := scaleLevels(r.cfg.scaleMax)
	we := "e pending timers at scale"
	for _, l := range levels {
		key := "we." + strconv.FormatInt(l, 10)
		at := fmt.Sprintf("at %d pending: ", l)
		same(we, at+"enqueue, wall", "µs/msg", j5, key+".us", noGoal)
		same(we, at+"enqueue, broker CPU", "µs/msg", j5, key+".cpuus", noGoal)
		same(we, at+"send p99", "ms", j5, key+".p99", noGoal)
		same(we, at+"send p99.9", "ms", j5, key+".p999", noGoal)
		same(we, at+"send max", "ms", j5, key+".max", noGoal)
		same(we, at+"RSS", "MiB", j5, key+".rss", noGoal)
	}
	ratio := func(t *target, a, b string) float64 { return get(t, a) / get(t, b) }
	if len(levels) > 1 {
		lo, hi := "we."+strconv.FormatInt(levels[0], 10), "we."+strconv.FormatInt(levels[len(levels)-1], 10)
		val(we, fmt.Sprintf("enqueue CPU cost at %d / at %d pending", levels[len(levels)-1], levels[0]), "", j5,
			ratio(rmq, hi+".cpuus", lo+".cpuus"), ratio(j5, hi+".cpuus", lo+".cpuus"), rmqWithin(0.8, 1.2))
	}
	if slices.Contains(levels, 10_000_000) && slices.Contains(levels, 1_000_000) {
		val(we, "RSS at 10000000 / at 1000000 pending", "", j5,
			ratio(rmq, "we.10000000.rss", "we.1000000.rss"), ratio(j5, "we.10000000.rss", "we.1000000.rss"), rmqAtMost(2))
	}
	same(we, fmt.Sprintf("restart with %d + %d probe pending: start to ready", r.cfg.scaleMax, r.cfg.scaleProbe), "s", j5, "we.restart", rmqAtMost(1))
	same(we, "restart: orderly stop", "s", j5, "we.stop", noGoal)

	wf := "f stock benchmark tools (-stock-tools)"
	sp := r.stockProducer()
	same(wf, "workload 1 by the "+sp+": throughput", "msg/s", j4, "w1.stock.tps", atLeast(1.5))
	same(wf, "workload 1 by the "+sp+": msg per broker CPU-second", "msg/CPU-s", j4, "w1.stock.tpcpu", atLeast(2))
	// f's target: the stock tool's rmq/Java ratio within ±15 % of `rmq
	// bench`'s for workload 1 (the rmq column; NaN when either is missing).
	for _, m := range []struct{ name, key string }{{"throughput", "tps"}, {"msg per broker CPU-second", "tpcpu"}} {
		rr := func(k string) float64 { return get(rmq, k) / get(j4, k) }
		val(wf, "workload 1, "+m.name+": "+sp+"'s rmq/Java over rmq bench's", "", j4,
			rr("w1.stock."+m.key)/rr("w1."+m.key), math.NaN(), rmqWithin(0.85, 1.15))
	}
	// The tool's own CPU per message, beside the broker's: on two shared
	// cores, a tool that costs several times the broker per message leaves
	// the brokers' difference a small part of the whole.
	same(wf, "workload 1 by the "+sp+": the tool's CPU per stored message", "µs/msg", j4, "w1.stock.toolus", noGoal)
	same(wf, "workload 1 by the "+sp+": max RT", "ms", j4, "w1.stock.maxrt", noGoal)
	same(wf, "workload 1 by the "+sp+": failed sends", "", j4, "w1.stock.failed", noGoal)
	same(wf, "workload a by the stock Consumer: drain from 10 to 90 % (broker offsets)", "msg/s", j4, "wa.stock.drain", atLeast(2))
	same(wf, "workload a by the stock Consumer: best 10-s window", "msg/s", j4, "wa.stock.tps", noGoal)

	if g, ok := r.m["noop"]; ok {
		wg := "g no-op remoting server (loopback ceiling)"
		val(wg, "throughput, workload 1's load", "msg/s", j4, g["g.tps"], math.NaN(), noGoal)
		val(wg, "send p99", "ms", j4, g["g.p99"], math.NaN(), noGoal)
		val(wg, "send p99.9", "ms", j4, g["g.p999"], math.NaN(), noGoal)
		val(wg, "send max", "ms", j4, g["g.max"], math.NaN(), noGoal)
		val(wg, "workload 1 throughput / ceiling", "", j4, get(rmq, "w1.tps")/g["g.tps"], get(j4, "w1.tps")/g["g.tps"], rmqAtLeast(0.5))
		if c, ok := g["g.stock.tps"]; ok {
			val(wg, "throughput, workload 1 by the "+sp, "msg/s", j4, c, math.NaN(), noGoal)
			val(wg, "the "+sp+"'s CPU per answered send", "µs/msg", j4, g["g.stock.toolus"], math.NaN(), noGoal)
			val(wg, "workload 1 by the "+sp+": throughput / its ceiling", "", j4,
				get(rmq, "w1.stock.tps")/c, get(j4, "w1.stock.tps")/c, noGoal)
			// f's bound: the most any broker could lead Java by under the
			// stock Producer on this machine, over rmq bench's ratio.
			val(wg, sp+"'s ceiling / Java's throughput, over rmq bench's rmq/Java", "", j4,
				c/get(j4, "w1.stock.tps")/(get(rmq, "w1.tps")/get(j4, "w1.tps")), math.NaN(), noGoal)
		}
	}
}
