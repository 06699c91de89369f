package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The stock Java benchmark tools are not published on Maven Central; with
// -stock-tools they are compiled from the user's apache/rocketmq checkout
// (example/ at the 4.9.8 or 5.3.3 tag) against the broker jars, and drive
// workloads 1 and a on both brokers beside `rmq bench`.

var errStockTools = errors.New("compare: stock benchmark tools")

const (
	stockPkg      = "org/apache/rocketmq/example/benchmark"
	stockMain     = "org.apache.rocketmq.example.benchmark."
	stockWindow   = 10 * time.Second // the tools print a 10-second window every 10 s
	stockStopWait = 10 * time.Second
	// stockSkip is how many of the Producer's first windows its figures
	// leave out: the JVM's start and its JIT warm-up. On this project's
	// two-core machine the second window still ran below the third (against
	// the no-op server: 14 630, 22 867, 29 734 msg/s; the compiler threads
	// spent 4.9 s of CPU in the first 10 s, 0.6 s in the next).
	stockSkip = 2
	// stockSpanDelay is when, after the tool's start, the span its per-CPU
	// figures cover begins: its windows start about a second after the
	// process (the JVM's start and the producer's).
	stockSpanDelay = stockSkip*stockWindow + time.Second
)

// stockTools is a compiled copy of the tools and the jars they run with.
type stockTools struct {
	classes string
	lib     string
}

func (s *stockTools) classpath() string {
	return s.classes + string(os.PathListSeparator) + filepath.Join(s.lib, "*")
}

// buildStockTools compiles Producer and Consumer (and what they use from
// the same source tree) from checkout into workDir, against the first of
// libs whose jars they compile with (4.9.x and 5.x moved packages).
func buildStockTools(checkout, workDir string, libs []string) (*stockTools, error) {
	src := filepath.Join(checkout, "example", "src", "main", "java")
	var files []string
	for _, n := range []string{"Producer.java", "Consumer.java"} {
		f := filepath.Join(src, stockPkg, n)
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%w: %s is not an apache/rocketmq checkout: %v", errStockTools, checkout, err)
		}
		files = append(files, f)
	}
	var errs []error
	for _, lib := range libs {
		if m, _ := filepath.Glob(filepath.Join(lib, "rocketmq-client-*.jar")); len(m) == 0 {
			errs = append(errs, fmt.Errorf("no rocketmq-client jar in %s", lib))
			continue
		}
		out := filepath.Join(workDir, "stock-classes-"+slug(filepath.Base(filepath.Dir(lib))))
		if err := os.RemoveAll(out); err != nil {
			return nil, err
		}
		argv := append([]string{"-nowarn", "-encoding", "UTF-8", "-proc:none", "-d", out,
			"-cp", filepath.Join(lib, "*"), "-sourcepath", src}, files...)
		b, err := exec.Command("javac", argv...).CombinedOutput()
		if err == nil {
			return &stockTools{classes: out, lib: lib}, nil
		}
		errs = append(errs, fmt.Errorf("javac against %s: %v\n%s", lib, err, lastLines(string(b), 20)))
	}
	return nil, fmt.Errorf("%w: %w", errStockTools, errors.Join(errs...))
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// Statistics lines of the tools (identical in 4.9.x and 5.x):
//
//	Current Time: … Send TPS: 41234 Max RT(ms): 31 Average RT(ms):   3.101 Send Failed: 0 Response Failed: 0
//	Current Time: … TPS: 52011 FAIL: 0 AVG(B2C) RT(ms): … MAX(S2C) RT(ms): 12
var (
	stockSendLine = regexp.MustCompile(`Current Time: .*? Send TPS: (\d+) Max RT\(ms\): (\d+) Average RT\(ms\): +([0-9.]+) Send Failed: (\d+)`)
	stockRecvLine = regexp.MustCompile(`Current Time: .*? TPS: (\d+) FAIL: (\d+) `)
)

// stockStats is what a tool's output says: the TPS of each 10-second
// window, the largest max RT printed and the failures.
type stockStats struct {
	tps    []float64
	maxRT  float64
	failed int64
	// span is the steady part of a run whose peer counts messages
	// (stockPeer.count): from stockSpanDelay after the start to the end.
	span stockSpan
}

// stockSpan is what a run's steady span cost: the messages the peer counted,
// the broker's CPU and the tool's own CPU (or, read at one instant, their
// running totals). On a machine the tool shares with the broker, what it
// spends per message bounds how far any broker's lead can show.
type stockSpan struct {
	count              int64
	brokerCPU, toolCPU time.Duration
}

// perBrokerCPU is messages per broker CPU-second (0: not measured).
func (s stockSpan) perBrokerCPU() float64 {
	if s.count <= 0 || s.brokerCPU <= 0 {
		return 0
	}
	return float64(s.count) / s.brokerCPU.Seconds()
}

// toolUs is the tool's CPU per message in µs (0: not measured).
func (s stockSpan) toolUs() float64 {
	if s.count <= 0 || s.toolCPU <= 0 {
		return 0
	}
	return float64(s.toolCPU.Microseconds()) / float64(s.count)
}

// parseStockOutput reads the statistics lines of Producer (send) or
// Consumer output.
func parseStockOutput(out string, send bool) stockStats {
	var s stockStats
	for _, l := range strings.Split(out, "\n") {
		if send {
			m := stockSendLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			tps, _ := strconv.ParseFloat(m[1], 64)
			rt, _ := strconv.ParseFloat(m[2], 64)
			// Send Failed is cumulative in the snapshot.
			failed, _ := strconv.ParseInt(m[4], 10, 64)
			s.tps = append(s.tps, tps)
			s.maxRT = max(s.maxRT, rt)
			s.failed = max(s.failed, failed)
			continue
		}
		if stockRecvLine.MatchString(l) && !strings.Contains(l, "Send TPS") {
			m := stockRecvLine.FindStringSubmatch(l)
			tps, _ := strconv.ParseFloat(m[1], 64)
			failed, _ := strconv.ParseInt(m[2], 10, 64)
			s.tps = append(s.tps, tps)
			s.failed += failed
		}
	}
	return s
}

// steady is the mean TPS of the windows after the first stockSkip (the JVM's
// start and its JIT warm-up), or after as many as leave one.
func (s stockStats) steady() float64 {
	w := s.tps
	if len(w) > 1 {
		w = w[min(stockSkip, len(w)-1):]
	}
	if len(w) == 0 {
		return 0
	}
	var sum float64
	for _, v := range w {
		sum += v
	}
	return sum / float64(len(w))
}

// peak is the best 10-second window.
func (s stockStats) peak() float64 {
	var m float64
	for _, v := range s.tps {
		m = max(m, v)
	}
	return m
}

// stockPeer is what a stock tool is pointed at: a name server address, a
// directory for the tool's home and logs, the broker process whose usage is
// sampled over the run (0: none, the no-op server runs in this process),
// and, for the steady span's figures, how to count the messages it stored
// or answered (nil: none).
type stockPeer struct {
	ns, dir string
	pid     int
	count   func() (int64, error)
}

// clusterPeer is c, counting what is stored in topic (nil: no count).
func clusterPeer(ctx context.Context, c *cluster, topic string) stockPeer {
	p := stockPeer{ns: c.nsAddr(), dir: c.dir, pid: c.broker.pid()}
	if topic != "" {
		p.count = func() (int64, error) { return c.stored(ctx, topic) }
	}
	return p
}

// runStock runs tool (Producer, Consumer) against peer for d, then stops it
// and returns its statistics and the broker's usage over the run. The
// Producer runs as stockProcs processes side by side, whose statistics are
// added up (combineStock).
func (r *runner) runStock(ctx context.Context, peer stockPeer, tool string, d time.Duration, args ...string) (stockStats, usage, error) {
	st := r.stock
	n := 1
	if tool == "Producer" {
		n = r.stockProcs()
	}
	argv := append(append([]string{"java"}, r.stockJVM(tool)...), "-Duser.home="+peer.dir, "-cp", st.classpath(), stockMain+tool, "-n", peer.ns)
	argv = append(argv, args...)
	times := ""
	if n > 1 {
		times = fmt.Sprintf("%d processes side by side: ", n)
	}
	r.cmds = append(r.cmds, fmt.Sprintf("%sjava %s -cp <stock classes>:<jars> %s%s -n $NS %s  # %v, then stopped", times, strings.Join(r.stockJVM(tool), " "), stockMain, tool, strings.Join(args, " "), d))
	logs := make([]string, n)
	for i := range logs {
		logs[i] = filepath.Join(peer.dir, "logs", "stock-"+strings.ToLower(tool))
		if n > 1 {
			logs[i] += "-" + strconv.Itoa(i)
		}
	}
	if err := os.MkdirAll(filepath.Dir(logs[0]), 0o755); err != nil {
		return stockStats{}, usage{}, err
	}
	var smp *sampler
	if peer.pid != 0 {
		smp = startSampler(peer.pid, r.cfg.samplePeriod)
	}
	stopBroker := func() usage {
		if smp == nil {
			return usage{}
		}
		return smp.stop()
	}
	procs := make([]*process, 0, n)
	stopAll := func() {
		for _, p := range procs {
			p.stop(stockStopWait)
		}
	}
	pids := make([]int, 0, n)
	for i := range n {
		p, err := startProcess("stock "+tool, argv, nil, peer.dir, logs[i])
		if err != nil {
			stopAll()
			stopBroker()
			return stockStats{}, usage{}, err
		}
		procs, pids = append(procs, p), append(pids, p.pid())
	}
	var (
		span    stockSpan
		spanErr error
		werr    error
	)
	switch {
	case peer.count == nil:
		werr = sleepCtx(ctx, d)
	case d <= stockSpanDelay:
		werr = sleepCtx(ctx, d)
		spanErr = fmt.Errorf("a run of %v ends before the span begins (%v)", d, stockSpanDelay)
	default:
		if werr = sleepCtx(ctx, stockSpanDelay); werr == nil {
			mark, merr := readSpan(peer, pids)
			werr = sleepCtx(ctx, d-stockSpanDelay)
			end, eerr := readSpan(peer, pids) // before the stop: a reaped process has no /proc entry left
			span, spanErr = end.since(mark), errors.Join(merr, eerr)
		}
	}
	stopAll()
	u := stopBroker()
	if werr != nil {
		return stockStats{}, u, werr
	}
	each := make([]stockStats, n)
	for i, log := range logs {
		b, err := os.ReadFile(log + ".out")
		if err != nil {
			return stockStats{}, u, err
		}
		each[i] = parseStockOutput(string(b), tool == "Producer")
		if len(each[i].tps) == 0 {
			return each[i], u, fmt.Errorf("%w: %s printed no statistics in %v (see %s.out and .err)", errStockTools, tool, d, log)
		}
	}
	s := combineStock(each)
	if spanErr != nil {
		r.logf("stock %s: the steady span is not measured: %v", tool, spanErr)
	} else {
		s.span = span
	}
	return s, u, nil
}

// combineStock adds up the statistics of processes run side by side: their
// TPS window by window (as many windows as the shortest printed: they
// started together), the largest max RT, the failures of each.
func combineStock(each []stockStats) stockStats {
	s := stockStats{tps: slices.Clone(each[0].tps)}
	for _, e := range each {
		s.tps = s.tps[:min(len(s.tps), len(e.tps))]
		s.maxRT = max(s.maxRT, e.maxRT)
		s.failed += e.failed
	}
	for _, e := range each[1:] {
		for i := range s.tps {
			s.tps[i] += e.tps[i]
		}
	}
	return s
}

// readSpan reads the running totals of a run: what peer counted, and the
// CPU of its broker (none for pid 0) and of the tool's processes.
func readSpan(peer stockPeer, toolPids []int) (stockSpan, error) {
	count, cerr := peer.count()
	var broker procSample
	var berr error
	if peer.pid != 0 {
		broker, berr = readProc(peer.pid)
	}
	sp := stockSpan{count: count, brokerCPU: broker.cpu}
	errs := []error{cerr, berr}
	for _, pid := range toolPids {
		tool, err := readProc(pid)
		sp.toolCPU += tool.cpu
		errs = append(errs, err)
	}
	return sp, errors.Join(errs...)
}

// since is the span from the totals s0 to s.
func (s stockSpan) since(s0 stockSpan) stockSpan {
	return stockSpan{count: s.count - s0.count, brokerCPU: s.brokerCPU - s0.brokerCPU, toolCPU: s.toolCPU - s0.toolCPU}
}

// stockProcs is how many stock Producer processes drive workload 1 (and g):
// the tool's one producer opens one connection to a broker, and `rmq bench`
// opens -conns of them. A Java broker reads a connection on one Netty
// thread: against one connection carrying all of workload 1's sends it
// stored 12 % fewer messages per second than under `rmq bench` (thirteenth
// pass, docs/benchmarks.md), while rmq's figure did not move.
func (r *runner) stockProcs() int {
	if r.cfg.stockProcs > 0 {
		return r.cfg.stockProcs
	}
	return max(1, r.cfg.conns)
}

// stockShare is each stock Producer process's share of workload 1's sends in
// flight.
func (r *runner) stockShare() int { return max(1, r.cfg.inFlight()/r.stockProcs()) }

// stockProducerArgs is workload 1 for one stock Producer process: as many
// sync sending threads as its share of the sends `rmq bench` keeps in
// flight, or (-stock-async) the tool's async mode, whose window stockJVM
// bounds.
func (r *runner) stockProducerArgs() []string {
	if r.cfg.stockAsync {
		return []string{"-t", topicSend, "-s", "1024", "-y", "true"}
	}
	return []string{"-t", topicSend, "-s", "1024", "-w", strconv.Itoa(r.stockShare())}
}

// stockJVM is the JVM options of tool. In async mode the Producer's one
// thread queues up to 10 000 sends and its client lets 65 535 be in flight
// (NettySystemConfig's clientAsyncSemaphoreValue): sends then wait seconds
// and time out by the hundred thousand against either broker. The window is
// set to the process's share of workload 1's sends in flight, as `rmq bench`
// keeps them.
func (r *runner) stockJVM(tool string) []string {
	o := []string{"-Xms1g", "-Xmx1g"}
	if r.cfg.stockAsync && tool == "Producer" {
		o = append(o, "-Dcom.rocketmq.remoting.clientAsyncSemaphoreValue="+strconv.Itoa(r.stockShare()))
	}
	return o
}

// stockProducer names the stock Producer's mode in table rows.
func (r *runner) stockProducer() string {
	n, share := r.stockProcs(), strconv.Itoa(r.stockShare())
	switch {
	case r.cfg.stockAsync && n > 1:
		return "stock Producer (async, " + strconv.Itoa(n) + " × " + share + " in flight)"
	case r.cfg.stockAsync:
		return "stock Producer (async, " + share + " in flight)"
	case n > 1:
		return "stock Producer (" + strconv.Itoa(n) + " × " + share + " threads)"
	}
	return "stock Producer"
}

// stockDuration is how long the stock Producer runs: the windows it skips,
// then duration, at least three windows.
func (r *runner) stockDuration() time.Duration {
	return stockSpanDelay + max(r.cfg.duration, 3*stockWindow) + time.Second
}

// stockSaturated is workload 1 driven by the stock Producer.
func (r *runner) stockSaturated(ctx context.Context, t *target, c *cluster) error {
	s, u, err := r.runStock(ctx, clusterPeer(ctx, c, topicSend), "Producer", r.stockDuration(), r.stockProducerArgs()...)
	if err != nil {
		return err
	}
	r.set(t, "w1.stock.tps", s.steady())
	r.set(t, "w1.stock.maxrt", s.maxRT)
	r.set(t, "w1.stock.failed", float64(s.failed))
	// Per message figures count what the broker stored in the steady span
	// (the tool prints rates per window only), over the broker's and the
	// tool's CPU in the same span.
	if v := s.span.perBrokerCPU(); v > 0 {
		r.set(t, "w1.stock.tpcpu", v)
	}
	if v := s.span.toolUs(); v > 0 {
		r.set(t, "w1.stock.toolus", v)
	}
	r.logf("%s %s: %.0f msg/s (windows %v), max RT %.0f ms, %d failed, broker CPU %.1f s; after the first %d windows: %d stored, %.0f msg per broker CPU-s, the tool's CPU %.1f µs/msg",
		t.name, r.stockProducer(), s.steady(), s.tps, s.maxRT, s.failed, u.CPU.Seconds(), stockSkip, s.span.count, s.span.perBrokerCPU(), s.span.toolUs())
	return nil
}

// stockDrain is workload a driven by the stock Consumer (push, 20 threads,
// a new group) over a second backlog stored by `rmq bench produce`. Both
// brokers start a new group at offset 0 while the queue's first message is
// recent, so the tool reads both backlogs. It never ends: it runs for a
// span sized by the rmq bench drain rate, and its best 10-second window is
// reported, with the drain rate the group's offsets on the broker show
// (drainprobe.go).
func (r *runner) stockDrain(ctx context.Context, t *target, c *cluster, rate float64) error {
	fill, err := r.rmqBench(ctx, c.nsAddr(), "produce", "-t", topicBacklog, "-s", "1024", "-c", strconv.Itoa(r.cfg.conns),
		"-w", strconv.Itoa(r.cfg.inflight), "--count", strconv.FormatInt(r.cfg.backlog, 10), "-d", "0s")
	if err != nil {
		return err
	}
	d := 3*stockWindow + 2*time.Second
	if rate > 0 {
		d = max(d, time.Duration(1.5*float64(2*fill.Sent)/rate*float64(time.Second))+stockWindow)
	}
	stop := probeOffsets(ctx, c.adm, stockDrainGroup, topicBacklog, drainProbePeriod)
	s, u, err := r.runStock(ctx, clusterPeer(ctx, c, ""), "Consumer", d, "-t", topicBacklog, "-g", stockDrainGroup)
	samples := stop()
	if err != nil {
		return err
	}
	r.set(t, "wa.stock.tps", s.peak())
	drain := "not measured (the offsets did not reach 90 % of the backlog)"
	if rate, ok := drainRate(samples, 0.1, 0.9); ok {
		r.set(t, "wa.stock.drain", rate)
		drain = fmt.Sprintf("%.0f msg/s", rate)
	}
	r.logf("%s stock Consumer over %d stored: drain from 10 to 90 %% (broker offsets, %d samples) %s; best window %.0f msg/s (windows %v), %d failed, broker CPU %.1f s",
		t.name, fill.Sent, len(samples), drain, s.peak(), s.tps, s.failed, u.CPU.Seconds())
	return nil
}

// stockDrainGroup is the stock Consumer's group in workload a.
const stockDrainGroup = "cmp_stock_drain"
