package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/message"
)

// Topics, each created with 8 queues on both brokers before use. The stock
// BenchmarkTest topic has 1024 queues on both and is avoided.
const (
	topicSend  = "CmpSend"
	topicE2E   = "CmpE2E"
	topicDelay = "CmpDelay"
	topicTimer = "CmpTimer"
	topicFlood = "CmpFlood"
)

// spreadPrime permutes sequence numbers over a window (coprime with every
// count used), so due times cover it evenly but arrive in no order.
const spreadPrime = 1_000_003

// measures holds one target's numbers by key ("w1.tps", ...).
type measures map[string]float64

// runner executes the workloads and keeps the measurements and the exact
// commands it ran.
type runner struct {
	cfg   *config
	log   io.Writer
	m     map[string]measures // by target name
	cmds  []string            // `rmq bench` command lines, for the report
	stock *stockTools         // -stock-tools, compiled; nil: not run
	// sqlSets are the message sequence numbers workload h delivered, by
	// target name.
	sqlSets map[string]seqSet
	notes   []string
	// runs are the measures of each run of -runs, runNotes the number of
	// notes made before the current run (runs.go).
	runs     []map[string]measures
	runNotes int
	// failed are the workloads rocketmq-rust failed, with the error's
	// first line (rust.go).
	failed map[string]string
}

func (r *runner) set(t *target, key string, v float64) {
	if r.m[t.name] == nil {
		r.m[t.name] = measures{}
	}
	r.m[t.name][key] = v
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (r *runner) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, s)
	r.logf("note: %s", s)
}

// recordUsage stores a sampler's totals under prefix.
func (r *runner) recordUsage(t *target, prefix string, u usage) {
	r.set(t, prefix+".cpu", u.CPU.Seconds())
	r.set(t, prefix+".rss", float64(u.PeakRSS)/(1<<20))
	r.set(t, prefix+".anon", float64(u.PeakAnon)/(1<<20))
}

// idleRSS waits for the broker to settle and reads its resident memory.
func (r *runner) idleRSS(ctx context.Context, t *target, c *cluster, key string) {
	_ = sleepCtx(ctx, r.cfg.idleWait)
	if p, err := readProc(c.broker.pid()); err == nil {
		r.set(t, key+".rss", float64(p.rss)/(1<<20))
		r.set(t, key+".anon", float64(p.rssAnon)/(1<<20))
	}
}

// rmqBench runs `rmq bench <mode> -n <ns> <args> --report-interval 0 --json`
// and returns its summary; show is the command line for the report.
func (r *runner) rmqBench(ctx context.Context, ns, mode string, args ...string) (*bench.Summary, error) {
	argv := append([]string{r.cfg.rmqBin, "bench", mode, "-n", ns}, args...)
	argv = append(argv, "--report-interval", "0", "--json")
	r.cmds = append(r.cmds, "rmq bench "+mode+" -n $NS "+strings.Join(args, " ")+" --json")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("compare: %v: %w\n%s", argv, err, errb.String())
	}
	var s bench.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return nil, fmt.Errorf("compare: bench output: %w\n%s", err, out.String())
	}
	return &s, nil
}

// produceArgs are the `rmq bench produce` flags of a saturating send of
// size-byte messages for d.
func (r *runner) produceArgs(topic string, size int, d time.Duration) []string {
	return []string{"-t", topic, "-s", strconv.Itoa(size), "-c", strconv.Itoa(r.cfg.conns), "-w", strconv.Itoa(r.cfg.inflight), "-d", d.String()}
}

// benchProduce runs `rmq bench produce` against the cluster for d and
// returns its summary; the broker's usage is sampled over the run.
func (r *runner) benchProduce(ctx context.Context, c *cluster, topic string, d time.Duration) (*bench.Summary, usage, error) {
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	s, err := r.rmqBench(ctx, c.nsAddr(), "produce", r.produceArgs(topic, 1024, d)...)
	u := smp.stop()
	return s, u, err
}

// warmProduce is workload 1's load on topicSend: the warm-up, then the
// measured run.
func (r *runner) warmProduce(ctx context.Context, c *cluster) (*bench.Summary, usage, error) {
	if _, _, err := r.benchProduce(ctx, c, topicSend, r.cfg.warmup); err != nil {
		return nil, usage{}, err
	}
	return r.benchProduce(ctx, c, topicSend, r.cfg.duration)
}

// saturated is workloads 1 and 2: sync sends of 1 KiB as fast as the
// in-flight window allows, after a warm-up (JIT for Java).
func (r *runner) saturated(ctx context.Context, t *target, c *cluster, key string) error {
	s, u, err := r.warmProduce(ctx, c)
	if err != nil {
		return err
	}
	r.recordUsage(t, key, u)
	r.set(t, key+".tps", s.SendTps)
	r.set(t, key+".p99", s.Latency.P99)
	r.set(t, key+".p999", s.Latency.P999)
	r.set(t, key+".max", s.Latency.Max)
	r.set(t, key+".failed", float64(s.SendFailed))
	if u.CPU > 0 {
		r.set(t, key+".tpcpu", float64(s.Sent)/u.CPU.Seconds())
	}
	r.logf("%s %s: %.0f msg/s, broker CPU %.1f s, %.0f msg per CPU-s, p99 %.2f p99.9 %.2f max %.2f ms, %d failed, peak RSS %.0f MiB",
		t.name, key, s.SendTps, u.CPU.Seconds(), float64(s.Sent)/max(u.CPU.Seconds(), 1e-9), s.Latency.P99, s.Latency.P999, s.Latency.Max,
		s.SendFailed, float64(u.PeakRSS)/(1<<20))
	return nil
}

// endToEnd is workload 3: a fixed moderate rate, latency from the start of
// the send to the consumer's receipt (long polling).
func (r *runner) endToEnd(ctx context.Context, t *target, c *cluster) error {
	n := int64(r.cfg.e2eRate * r.cfg.duration.Seconds())
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	res, err := runLoad(ctx, c, loadSpec{
		topic: topicE2E, count: n, rate: r.cfg.e2eRate, size: 1024, grace: 10 * time.Second,
		mark: func(_ int64, now time.Time) (map[string]string, time.Time) { return nil, now },
	})
	u := smp.stop()
	if err != nil {
		return err
	}
	r.recordUsage(t, "w3", u)
	p := res.Late.Percentiles()
	r.set(t, "w3.p50", p.P50)
	r.set(t, "w3.p99", p.P99)
	r.set(t, "w3.p999", p.P999)
	r.set(t, "w3.max", p.Max)
	r.set(t, "w3.lost", float64(res.Lost))
	r.logf("%s e2e at %.0f msg/s: p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms, %d lost, %d send failures, broker CPU %.1f s",
		t.name, r.cfg.e2eRate, p.P50, p.P99, p.P999, p.Max, res.Lost, res.SendFailed, u.CPU.Seconds())
	return nil
}

// delayLevels is workload 4: delayCount messages at levels 2 and 3
// (alternating; 5 s and 10 s), paced at delayRate. A message is due its
// level's delay after the millisecond its send started; sends are paced
// rather than saturating so that the lateness measures the delivery, not a
// send queue (both brokers count the delay from their store time, which
// follows the send's start by the send latency).
func (r *runner) delayLevels(ctx context.Context, t *target, c *cluster) error {
	levels := map[int]time.Duration{2: 5 * time.Second, 3: 10 * time.Second}
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	res, err := runLoad(ctx, c, loadSpec{
		topic: topicDelay, count: r.cfg.delayCount, rate: r.cfg.delayRate, size: 1024,
		grace: r.cfg.delayGrace,
		mark: func(seq int64, now time.Time) (map[string]string, time.Time) {
			lv := 2 + int(seq%2)
			// Both brokers count the delay from the millisecond store time.
			return map[string]string{message.PropDelay: strconv.Itoa(lv)}, now.Truncate(time.Millisecond).Add(levels[lv])
		},
	})
	u := smp.stop()
	if err != nil {
		return err
	}
	r.recordUsage(t, "w4", u)
	r.lateness(t, "w4", res)
	return nil
}

// lateness stores the delivery measurements of a delayed load.
func (r *runner) lateness(t *target, key string, res *loadResult) {
	p := res.Late.Percentiles()
	r.set(t, key+".rate", res.SendRate())
	r.set(t, key+".p50", p.P50)
	r.set(t, key+".p99", p.P99)
	r.set(t, key+".p999", p.P999)
	r.set(t, key+".max", p.Max)
	r.set(t, key+".early", float64(res.Early))
	r.set(t, key+".maxearly", res.MaxEarly.Seconds()*1000)
	r.set(t, key+".lost", float64(res.Lost))
	r.set(t, key+".received", float64(res.Received))
	r.set(t, key+".failed", float64(res.SendFailed))
	r.set(t, key+".drain", res.Drain().Seconds())
	// Broker CPU per delivered message: a peer that refuses part of the
	// sends (Java's flow control) delivers, and spends CPU on, fewer. Every
	// delayed workload records its usage (recordUsage) before this.
	if cpu, ok := r.m[t.name][key+".cpu"]; ok && res.Received > 0 {
		r.set(t, key+".cpumsg", cpu/float64(res.Received)*1e6)
	}
	r.logf("%s %s: sent %d at %.0f msg/s (%d failed), lateness p50 %.1f p99 %.1f p99.9 %.1f max %.1f ms, %d early (max %.1f ms), %d lost, %d dups, drain %.2f s",
		t.name, key, res.Sent, res.SendRate(), res.SendFailed, p.P50, p.P99, p.P999, p.Max, res.Early, res.MaxEarly.Seconds()*1000, res.Lost, res.Dups, res.Drain().Seconds())
	for k, v := range res.Errors {
		r.logf("  send error %q: %d", k, v)
	}
}

// timerRate sends a short burst of timers due soon, to warm the path up and
// to learn the broker's timer enqueue rate, which sizes the lead time of
// the timer workloads so that (almost) no message is due before it is sent.
func (r *runner) timerRate(ctx context.Context, t *target, c *cluster) (float64, error) {
	res, err := runLoad(ctx, c, loadSpec{
		topic: topicTimer, count: r.cfg.timerWarm, inflight: r.cfg.inFlight(), size: 1024, grace: 30 * time.Second,
		mark: func(_ int64, now time.Time) (map[string]string, time.Time) {
			return timerProps(now.Add(2 * time.Second))
		},
	})
	if err != nil {
		return 0, err
	}
	r.logf("%s timer warm-up: %d sent at %.0f msg/s, %d received", t.name, res.Sent, res.SendRate(), res.Received)
	if res.Sent == 0 {
		return 0, fmt.Errorf("compare: %s accepted no timer message: %v", t.name, res.Errors)
	}
	return res.SendRate(), nil
}

// timerProps sets TIMER_DELIVER_MS; the due time is that millisecond.
func timerProps(due time.Time) (map[string]string, time.Time) {
	ms := due.UnixMilli()
	return map[string]string{message.PropTimerDeliverMs: strconv.FormatInt(ms, 10)}, time.UnixMilli(ms)
}

// spread places message seq of count in window from start, evenly but in a
// scattered order.
func spread(start time.Time, window time.Duration, seq, count int64) time.Time {
	k := (seq * spreadPrime) % count
	return start.Add(time.Duration(float64(window) * float64(k) / float64(count)))
}

// flood is workload 6: floodCount timers all due within one second; the
// drain time runs from the start of that second to the last delivery.
func (r *runner) flood(ctx context.Context, t *target, c *cluster, rate float64) (float64, error) {
	lead := time.Duration(1.5*float64(r.cfg.floodCount)/rate*float64(time.Second)) + 5*time.Second
	at := time.Now().Add(lead).Truncate(time.Second)
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	res, err := runLoad(ctx, c, loadSpec{
		topic: topicFlood, count: r.cfg.floodCount, inflight: r.cfg.inFlight(), size: 1024, grace: 60 * time.Second,
		mark: func(seq int64, _ time.Time) (map[string]string, time.Time) {
			return timerProps(spread(at, time.Second, seq, r.cfg.floodCount))
		},
	})
	u := smp.stop()
	if err != nil {
		return 0, err
	}
	r.recordUsage(t, "w6", u)
	r.lateness(t, "w6", res)
	return res.SendRate(), nil
}

// timers is workloads 5 and 7: timerCount timers due over timerWindow,
// which starts once the sends and a broker restart are expected to be over;
// the restart in between (stop, then start over the store with every timer
// pending) is timed.
func (r *runner) timers(ctx context.Context, t *target, c *cluster, rate float64, boot time.Duration) error {
	sendEst := time.Duration(float64(r.cfg.timerCount) / rate * float64(time.Second))
	// Room for the sends, then a stop (a Java broker takes seconds) and a
	// start of the broker.
	lead := sendEst*13/10 + 3*boot + 20*time.Second
	start := time.Now().Add(lead).Truncate(time.Second)
	r.logf("%s timers: %d due over %v from %s (lead %v)", t.name, r.cfg.timerCount, r.cfg.timerWindow, start.Format("15:04:05"), lead.Round(time.Second))
	smp := startSampler(c.broker.pid(), r.cfg.samplePeriod)
	var before usage
	res, err := runLoad(ctx, c, loadSpec{
		topic: topicTimer, count: r.cfg.timerCount, inflight: r.cfg.inFlight(), size: 1024, grace: 60 * time.Second,
		mark: func(seq int64, _ time.Time) (map[string]string, time.Time) {
			return timerProps(spread(start, r.cfg.timerWindow, seq, r.cfg.timerCount))
		},
		afterSend: func(ctx context.Context) error {
			before = smp.stop()
			if time.Now().After(start) {
				r.note("%s: the timer sends ended after the first due time; early messages were due before the restart", t.name)
			}
			stop, boot, err := c.restartBroker(ctx)
			if err != nil {
				return err
			}
			r.set(t, "w7.stop", stop.Seconds())
			r.set(t, "w7.restart", boot.Seconds())
			r.logf("%s restart with %d pending timers: stop %.2f s, start to ready %.2f s", t.name, r.cfg.timerCount, stop.Seconds(), boot.Seconds())
			smp = startSampler(c.broker.pid(), r.cfg.samplePeriod)
			return nil
		},
	})
	after := smp.stop()
	if err != nil {
		return err
	}
	r.recordUsage(t, "w5", usage{CPU: before.CPU + after.CPU, PeakRSS: max(before.PeakRSS, after.PeakRSS), PeakAnon: max(before.PeakAnon, after.PeakAnon)})
	r.lateness(t, "w5", res)
	return nil
}

// delayPhase runs workloads 1, 3 and 4 on an ASYNC_FLUSH broker and 2 on a
// SYNC_FLUSH one, and measures the boot time and idle memory.
func (r *runner) delayPhase(ctx context.Context, t *target) error {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-async")
	c, boot, err := startCluster(ctx, t, dir, asyncFlush)
	if err != nil {
		return err
	}
	defer c.close()
	r.set(t, "boot", boot.Seconds()*1000)
	r.logf("%s broker ready in %v (name server %s, broker %s)", t.name, boot.Round(time.Millisecond), c.nsAddr(), c.brokerAddr())
	r.idleRSS(ctx, t, c, "idle")
	for _, topic := range []string{topicSend, topicE2E, topicDelay} {
		if err := c.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	if r.cfg.has("1") {
		if err := r.saturated(ctx, t, c, "w1"); err != nil {
			return err
		}
		if r.stock != nil {
			if err := r.stockSaturated(ctx, t, c); err != nil {
				return err
			}
		}
	}
	if r.cfg.has("3") {
		if err := r.endToEnd(ctx, t, c); err != nil {
			return err
		}
	}
	if r.cfg.has("4") {
		if err := r.delayLevels(ctx, t, c); err != nil {
			return err
		}
	}
	c.close()
	os.RemoveAll(filepath.Join(dir, "store"))
	if !r.cfg.has("2") {
		return nil
	}
	dir = filepath.Join(r.cfg.workDir, slug(t.name)+"-sync")
	c, _, err = startCluster(ctx, t, dir, syncFlush)
	if err != nil {
		return err
	}
	defer c.close()
	if err := c.createTopic(ctx, topicSend); err != nil {
		return err
	}
	err = r.saturated(ctx, t, c, "w2")
	c.close()
	os.RemoveAll(filepath.Join(dir, "store"))
	return err
}

// timerPhase runs workloads 6, 5 and 7 on an ASYNC_FLUSH broker.
func (r *runner) timerPhase(ctx context.Context, t *target) error {
	dir := filepath.Join(r.cfg.workDir, slug(t.name)+"-timer")
	c, boot, err := startCluster(ctx, t, dir, asyncFlush)
	if err != nil {
		return err
	}
	defer c.close()
	r.set(t, "boot5", boot.Seconds()*1000)
	r.logf("%s broker ready in %v (name server %s, broker %s)", t.name, boot.Round(time.Millisecond), c.nsAddr(), c.brokerAddr())
	r.idleRSS(ctx, t, c, "idle5")
	for _, topic := range []string{topicTimer, topicFlood} {
		if err := c.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	rate, err := r.timerRate(ctx, t, c)
	if err != nil {
		return err
	}
	if r.cfg.has("6") {
		// The flood's sends are a longer sample of the enqueue rate (after the
		// warm-up, so with a warmer JIT on Java).
		floodRate, err := r.flood(ctx, t, c, rate)
		if err != nil {
			return err
		}
		rate = max(rate, floodRate)
	}
	if r.cfg.has("5") || r.cfg.has("7") {
		if err := r.timers(ctx, t, c, rate, boot); err != nil {
			return err
		}
	}
	c.close()
	os.RemoveAll(filepath.Join(dir, "store"))
	return nil
}

func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b)
}
