package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	workDir       string
	out           string
	section       string
	rmqConf       string
	rmqBin        string
	pom           string
	proxyPom      string
	cacheDir      string
	java4         string
	java5         string
	only          map[string]bool
	noJava        bool
	duration      time.Duration
	warmup        time.Duration
	idleWait      time.Duration
	samplePeriod  time.Duration
	conns         int
	inflight      int
	e2eRate       float64
	delayCount    int64
	delayRate     float64
	delayGrace    time.Duration
	timerWarm     int64
	timerCount    int64
	timerWindow   time.Duration
	floodCount    int64
	backlog       int64
	seqWriteMiB   int64
	topicCount    int
	lookupTime    time.Duration
	scaleMax      int64
	scaleProbe    int64
	stockTools    string
	stockAsync    bool
	stockProcs    int
	rust          bool
	rustRepo      string
	sqlBacklog    int64
	replyRate     float64
	replyRounds   int
	metricsRounds int
	scrapeEvery   time.Duration
	runs          int
	grpcRate      float64
	grpcTimers    int64
	grpcRevive    int64
	args          []string
}

// workloads are the names -only accepts, in run order.
var workloads = []string{"1", "2", "3", "4", "5", "6", "7", "a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "l"}

func (c *config) has(w string) bool { return len(c.only) == 0 || c.only[w] }

// inFlight is workload 1's sends in flight in all: conns × inflight.
func (c *config) inFlight() int { return c.conns * c.inflight }

// hasAny reports whether any of ws is selected.
func (c *config) hasAny(ws ...string) bool {
	for _, w := range ws {
		if c.has(w) {
			return true
		}
	}
	return false
}

func parseOnly(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f == "" {
			continue
		}
		if !slices.Contains(workloads, f) {
			return nil, fmt.Errorf("compare: -only %q: workloads are %s", s, strings.Join(workloads, ","))
		}
		out[f] = true
	}
	return out, nil
}

func parseFlags(args []string) (*config, error) {
	home, _ := os.UserHomeDir()
	c := &config{args: args}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.StringVar(&c.workDir, "workdir", filepath.Join(os.TempDir(), "rmq-bench-compare"), "scratch directory: stores, configs, logs (emptied per broker)")
	fs.StringVar(&c.out, "out", "docs/benchmarks.md", "Markdown file whose generated section gets the results (\"\": none)")
	fs.StringVar(&c.section, "section", "", "name of the generated section of -out to write (\"\": the full run's)")
	fs.StringVar(&c.rmqConf, "rmq-conf", "", "extra broker.conf lines of every rmq broker, ';'-separated (e.g. metricsExporterType=PROM;metricsPromExporterPort=5557;metricsPprofEnable=true to profile through /debug/pprof)")
	fs.StringVar(&c.rmqBin, "rmq", "bin/rmq", "rmq binary (broker, name server and `rmq bench`)")
	fs.StringVar(&c.pom, "pom", "bench/compare/peer-pom.xml", "dependency list used to fetch the Java jars")
	fs.StringVar(&c.proxyPom, "proxy-pom", "bench/compare/proxy-pom.xml", "dependency list used to fetch the Java proxy's jars (workload k)")
	fs.StringVar(&c.cacheDir, "jars", filepath.Join(home, ".cache", "rmq-bench-compare"), "Java jar cache (one rocketmq-<version>/lib per version)")
	fs.StringVar(&c.java4, "java4", "4.9.7", "Java broker for the 4.x workloads (1-4, a-d, startup)")
	fs.StringVar(&c.java5, "java5", "5.3.3", "Java broker for the timer workloads (5-7, e) and proxy for the gRPC workload (k)")
	only := fs.String("only", "", "comma-separated workloads to run (default all but l: "+strings.Join(workloads[:len(workloads)-1], ",")+"; l, the replicated pairs, runs only when named)")
	fs.BoolVar(&c.noJava, "no-java", false, "run rmq only (no comparison; for profiling the driver)")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "length of workloads 1-3")
	fs.DurationVar(&c.warmup, "warmup", 60*time.Second, "saturating warm-up before workloads 1 and 2 (JIT; also before g, j, k and the reply load): after 8 s Java's broker still spent ~20 % more CPU per message than after 60 s")
	fs.DurationVar(&c.idleWait, "idle-wait", 3*time.Second, "settling time before the idle RSS reading")
	fs.DurationVar(&c.samplePeriod, "sample", 200*time.Millisecond, "/proc sampling period")
	fs.IntVar(&c.conns, "conns", 2, "client connections of the load")
	fs.IntVar(&c.inflight, "inflight", 64, "sends in flight per connection when saturating")
	fs.Float64Var(&c.e2eRate, "e2e-rate", 2000, "message rate of workload 3 (msg/s)")
	fs.Int64Var(&c.delayCount, "delay-count", 100_000, "messages of workload 4")
	fs.Float64Var(&c.delayRate, "delay-rate", 10_000, "send rate of workload 4 (msg/s)")
	fs.DurationVar(&c.delayGrace, "delay-grace", 60*time.Second, "wait for late delay-level deliveries")
	fs.Int64Var(&c.timerWarm, "timer-warm", 20_000, "timer messages of the warm-up that measures the enqueue rate")
	fs.Int64Var(&c.timerCount, "timer-count", 1_000_000, "timer messages of workloads 5 and 7")
	fs.DurationVar(&c.timerWindow, "timer-window", 2*time.Minute, "window the workload-5 timers are due in")
	fs.Int64Var(&c.floodCount, "flood-count", 100_000, "timers of workload 6, all due within one second")
	fs.Int64Var(&c.backlog, "backlog", 1_000_000, "messages of the backlog workload a drains")
	fs.Int64Var(&c.seqWriteMiB, "seqwrite-mib", 1024, "MiB written (then fdatasync'd) to measure the sequential write bandwidth of workload c")
	fs.IntVar(&c.topicCount, "topics", 2000, "topics of workload d, 8 queues each")
	fs.DurationVar(&c.lookupTime, "lookup-duration", 10*time.Second, "length of workload d's route lookups")
	fs.Int64Var(&c.scaleMax, "timer-scale-max", 1_000_000, "most pending timers of workload e (levels 1k, 100k, 1M, 10M up to this)")
	fs.Int64Var(&c.scaleProbe, "timer-scale-probe", 20_000, "timer sends timed at each pending level of workload e")
	fs.Int64Var(&c.sqlBacklog, "sql-backlog", 1_000_000, "messages of the backlog workload h drains with an SQL92 filter")
	fs.Float64Var(&c.replyRate, "reply-rate", 1000, "request rate of workload i (requests/s, for -duration)")
	fs.IntVar(&c.replyRounds, "reply-rounds", 2, "rounds of workload i (each broker once per round; ABBA order)")
	fs.IntVar(&c.metricsRounds, "metrics-rounds", 2, "rounds of workload j (one broker with metrics off and one with them on each)")
	fs.DurationVar(&c.scrapeEvery, "scrape-interval", 2*time.Second, "how often workload j scrapes /metrics")
	fs.IntVar(&c.runs, "runs", 1, "run the selected workloads this many times (rmq and Java interleaved) and report the median of each metric (runs.go)")
	fs.Float64Var(&c.grpcRate, "grpc-rate", 250, "send rate of workload k's receive+ack, delivery-timestamp and revive loads (msg/s)")
	fs.Int64Var(&c.grpcTimers, "grpc-timers", 5_000, "delivery-timestamp messages of workload k")
	fs.Int64Var(&c.grpcRevive, "grpc-revive", 2_000, "messages of workload k's revive test (received, not acked, redelivered)")
	fs.StringVar(&c.stockTools, "stock-tools", "", "apache/rocketmq checkout (4.9.8 or 5.3.3 tag) whose example/ benchmark tools also drive workloads 1, a and g (\"\": not run)")
	fs.BoolVar(&c.stockAsync, "stock-async", false, "the stock Producer sends asynchronously (its -y true) with its client's async window (clientAsyncSemaphoreValue) at its share of conns×inflight, instead of that many sync threads")
	fs.IntVar(&c.stockProcs, "stock-procs", 0, "stock Producer processes driving workloads 1 and g, each one client connection with its share of conns×inflight in flight (0: -conns, workload 1's connections)")
	fs.BoolVar(&c.rust, "rust", false, "also run rocketmq-rust (workloads "+strings.Join(rustWorkloads, ",")+"; built with cargo from commit "+rustCommit[:12]+" on first use, cached beside the jars)")
	fs.StringVar(&c.rustRepo, "rust-repo", rustRepo, "git repository -rust fetches rocketmq-rust from")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.only, err = parseOnly(*only); err != nil {
		return nil, err
	}
	if c.rmqBin, err = filepath.Abs(c.rmqBin); err != nil {
		return nil, err
	}
	if c.workDir, err = filepath.Abs(c.workDir); err != nil {
		return nil, err
	}
	if c.backlog <= 0 || c.topicCount <= 0 || c.scaleMax <= 0 || c.scaleProbe <= 0 || c.seqWriteMiB <= 0 ||
		c.sqlBacklog <= 0 || c.replyRate <= 0 || c.replyRounds <= 0 || c.metricsRounds <= 0 || c.scrapeEvery <= 0 || c.runs <= 0 ||
		c.grpcRate <= 0 || c.grpcTimers <= 0 || c.grpcRevive <= 0 {
		return nil, fmt.Errorf("compare: -backlog, -topics, -timer-scale-max, -timer-scale-probe, -seqwrite-mib, -sql-backlog, -reply-rate, -reply-rounds, -metrics-rounds, -scrape-interval, -runs, -grpc-rate, -grpc-timers and -grpc-revive must be positive")
	}
	if c.timerCount%spreadPrime == 0 || c.floodCount%spreadPrime == 0 {
		return nil, fmt.Errorf("compare: counts must not be multiples of %d", spreadPrime)
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *config, w io.Writer) error {
	began := time.Now()
	mach := describeMachine(cfg.workDir)
	r := &runner{cfg: cfg, log: w, m: map[string]measures{}, sqlSets: map[string]seqSet{}}
	rmq := &target{name: "rmq", rmqBin: cfg.rmqBin, timers: true}
	for _, l := range strings.Split(cfg.rmqConf, ";") {
		if l = strings.TrimSpace(l); l != "" {
			rmq.conf = append(rmq.conf, l)
		}
	}
	j4 := &target{name: "Java " + cfg.java4, version: cfg.java4, lib: filepath.Join(cfg.cacheDir, "rocketmq-"+cfg.java4, "lib")}
	j5 := &target{name: "Java " + cfg.java5, version: cfg.java5, lib: filepath.Join(cfg.cacheDir, "rocketmq-"+cfg.java5, "lib"), timers: true}
	jp := &target{name: "Java " + cfg.java5 + " proxy", version: cfg.java5, lib: filepath.Join(cfg.cacheDir, "rocketmq-proxy-"+cfg.java5, "lib"), timers: true, proxy: true}
	if _, err := os.Stat(cfg.rmqBin); err != nil {
		return fmt.Errorf("compare: rmq binary: %w (make build)", err)
	}
	if err := os.MkdirAll(cfg.workDir, 0o755); err != nil {
		return err
	}
	delayTargets, timerTargets, grpcTargets := []*target{rmq}, []*target{rmq}, []*target{rmq}
	if !cfg.noJava {
		for _, t := range []*target{j4, j5} {
			r.logf("fetching the %s jars (Maven Central, cached in %s)", t.name, t.lib)
			if err := fetchJars(cfg.pom, t.version, t.lib); err != nil {
				return err
			}
		}
		delayTargets, timerTargets = append(delayTargets, j4), append(timerTargets, j5)
		if cfg.has("k") {
			r.logf("fetching the %s jars (Maven Central, cached in %s)", jp.name, jp.lib)
			if err := fetchJarsOf(cfg.proxyPom, jp.version, jp.lib, "rocketmq-proxy"); err != nil {
				return err
			}
			grpcTargets = append(grpcTargets, jp)
		}
	}
	if cfg.stockTools != "" && cfg.hasAny("1", "a", "g") {
		r.logf("compiling the stock benchmark tools of %s", cfg.stockTools)
		var err error
		if r.stock, err = buildStockTools(cfg.stockTools, cfg.workDir, []string{j4.lib, j5.lib}); err != nil {
			return err
		}
		r.logf("stock tools built against %s", r.stock.lib)
	}
	var rust *target // rocketmq-rust, with -rust (rust.go)
	for i := range cfg.runs {
		r.beginRun(i, cfg.runs)
		if cfg.has("1") || cfg.has("2") || cfg.has("3") || cfg.has("4") || cfg.has("7") {
			for _, t := range delayTargets {
				if err := r.delayPhase(ctx, t); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		if cfg.has("5") || cfg.has("6") || cfg.has("7") {
			for _, t := range timerTargets {
				if err := r.timerPhase(ctx, t); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		if cfg.hasAny("a", "b", "c", "d") {
			for _, t := range delayTargets {
				if err := r.extraPhase(ctx, t); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		if cfg.has("e") {
			for _, t := range timerTargets {
				if err := r.timerScalePhase(ctx, t); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		if cfg.has("g") {
			if err := r.ceiling(ctx); err != nil {
				return fmt.Errorf("no-op server: %w", err)
			}
		}
		if cfg.rust && cfg.hasAny(rustWorkloads...) {
			if rust == nil {
				r.logf("building rocketmq-rust %s (first use only; cached in %s)", rustCommit[:12], rustBinDir(cfg.cacheDir))
				bin, err := buildRust(ctx, cfg.rustRepo, cfg.cacheDir, w)
				if err != nil {
					return err
				}
				rust = &target{name: rustName, rust: bin, timers: true}
			}
			if err := r.rustPhase(ctx, rust); err != nil {
				return fmt.Errorf("%s: %w", rust.name, err)
			}
		}
		if err := r.issue14Phases(ctx, delayTargets); err != nil {
			return err
		}
		if cfg.has("j") {
			if err := r.metricsPhase(ctx, rmq); err != nil {
				return fmt.Errorf("metrics on/off: %w", err)
			}
		}
		if cfg.has("k") {
			if err := r.grpcPhase(ctx, grpcTargets); err != nil {
				return err
			}
		}
		// Workload l (replicated pairs, ha.go) runs only when named in -only.
		if cfg.only["l"] {
			if err := r.haPhase(ctx, delayTargets); err != nil {
				return err
			}
		}
		r.endRun(i, cfg.runs)
	}
	r.aggregateRuns()
	mach.loadAfter = loadAvg()
	rows := r.rows(rmq, j4, j5, jp)
	r.runRatios(rows, func() []row { return r.rows(rmq, j4, j5, jp) })
	r.fillRust(rows, rust)
	fmt.Fprintln(w)
	writeText(w, rows)
	r.logf("done in %v", time.Since(began).Round(time.Second))
	if cfg.out == "" {
		return nil
	}
	var md strings.Builder
	r.report(&md, rows, mach, began, time.Since(began))
	return replaceSection(cfg.out, cfg.section, md.String())
}

// rows turns the measurements into the comparison table.
func (r *runner) rows(rmq, j4, j5, jp *target) []row {
	var out []row
	get := func(t *target, k string) float64 {
		if v, ok := r.m[t.name][k]; ok {
			return v
		}
		return math.NaN()
	}
	add := func(wl, metric, unit string, peer *target, rk, jk string, g goal) {
		rv, jv := get(rmq, rk), get(peer, jk)
		if math.IsNaN(rv) && math.IsNaN(jv) {
			return
		}
		out = append(out, row{workload: wl, metric: metric, unit: unit, rmq: rv, java: jv, peer: peer.name, goal: g, key: rk})
	}
	same := func(wl, metric, unit string, peer *target, k string, g goal) { add(wl, metric, unit, peer, k, k, g) }
	for _, w := range []struct{ key, name string }{{"w1", "1 send 1 KiB, ASYNC_FLUSH"}, {"w2", "2 send 1 KiB, SYNC_FLUSH"}} {
		same(w.name, "throughput", "msg/s", j4, w.key+".tps", atLeast(1.5))
		same(w.name, "msg per broker CPU-second", "msg/CPU-s", j4, w.key+".tpcpu", atLeast(2))
		same(w.name, "send p99", "ms", j4, w.key+".p99", noGoal)
		same(w.name, "send p99.9", "ms", j4, w.key+".p999", noGoal)
		same(w.name, "send max", "ms", j4, w.key+".max", noGoal)
		same(w.name, "broker CPU", "s", j4, w.key+".cpu", noGoal)
		same(w.name, "peak RSS", "MiB", j4, w.key+".rss", atMost(0.1))
		same(w.name, "peak anonymous RSS", "MiB", j4, w.key+".anon", atMost(0.1))
		same(w.name, "failed sends", "", j4, w.key+".failed", noGoal)
	}
	e2e := fmt.Sprintf("3 produce+consume at %.0f msg/s", r.cfg.e2eRate)
	same(e2e, "end-to-end p50", "ms", j4, "w3.p50", noGoal)
	same(e2e, "end-to-end p99", "ms", j4, "w3.p99", atMost(0.5))
	same(e2e, "end-to-end p99.9", "ms", j4, "w3.p999", noGoal)
	same(e2e, "end-to-end max", "ms", j4, "w3.max", noGoal)
	same(e2e, "broker CPU", "s", j4, "w3.cpu", noGoal)
	// cpu is the goal on broker CPU: ≤ 0.4× Java for the delay-level and
	// timer workloads (issue 18).
	late := func(wl, key string, peer *target, cpu goal) {
		same(wl, "send rate", "msg/s", peer, key+".rate", noGoal)
		same(wl, "lateness p50", "ms", peer, key+".p50", noGoal)
		same(wl, "lateness p99", "ms", peer, key+".p99", atMost(0.1))
		same(wl, "lateness p99.9", "ms", peer, key+".p999", noGoal)
		same(wl, "lateness max", "ms", peer, key+".max", noGoal)
		same(wl, "delivered early", "msgs", peer, key+".early", zeroRMQ)
		same(wl, "lost", "msgs", peer, key+".lost", zeroRMQ)
		same(wl, "broker CPU", "s", peer, key+".cpu", cpu)
		same(wl, "broker CPU per delivered message", "µs", peer, key+".cpumsg", noGoal)
		same(wl, "peak RSS", "MiB", peer, key+".rss", atMost(0.1))
	}
	late(fmt.Sprintf("4 delay levels 2-3, %d msgs at %.0f/s", r.cfg.delayCount, r.cfg.delayRate), "w4", j4, atMost(0.4))
	t5 := fmt.Sprintf("5 timers, %d due over %v", r.cfg.timerCount, r.cfg.timerWindow)
	late(t5, "w5", j5, atMost(0.4))
	f6 := fmt.Sprintf("6 flood, %d timers due in 1 s", r.cfg.floodCount)
	same(f6, "time to drain", "s", j5, "w6.drain", noGoal)
	late(f6, "w6", j5, noGoal)
	st := "7 startup"
	same(st, "start to ready, empty store", "ms", j4, "boot", atMost(0.05))
	add(st, "start to ready, empty store", "ms", j5, "boot5", "boot5", atMost(0.05))
	same(st, "idle RSS", "MiB", j4, "idle.rss", noGoal)
	add(st, "idle RSS", "MiB", j5, "idle5.rss", "idle5.rss", noGoal)
	same(st, fmt.Sprintf("restart with %d pending timers: start to ready", r.cfg.timerCount), "s", j5, "w7.restart", atMost(0.05))
	same(st, "restart: orderly stop", "s", j5, "w7.stop", noGoal)
	val := func(wl, metric, unit string, peer *target, rv, jv float64, g goal) {
		if math.IsNaN(rv) && math.IsNaN(jv) {
			return
		}
		out = append(out, row{workload: wl, metric: metric, unit: unit, rmq: rv, java: jv, peer: peer.name, goal: g})
	}
	r.extraRows(rmq, j4, j5, get, same, val)
	r.issueRows(rmq, j4, get, same, val)
	r.haRows(j4, same)
	r.grpcRows(jp, same)
	return out
}

// machine describes where the run happened.
type machine struct {
	cpu, mem, kernel, disk, goVersion, java string
	cores                                   int
	loadBefore, loadAfter                   string
}

func describeMachine(dir string) *machine {
	m := &machine{loadBefore: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				m.cores++
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if l, _, ok := strings.Cut(string(b), "\n"); ok {
			m.mem = strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	m.disk = mountOf(dir)
	m.goVersion = goVersion()
	m.java = javaVersion()
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// mountOf returns "device fstype" of the mount holding dir.
func mountOf(dir string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "?"
	}
	best, what := -1, "?"
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if (dir == f[1] || strings.HasPrefix(dir, strings.TrimSuffix(f[1], "/")+"/")) && len(f[1]) > best {
			best, what = len(f[1]), f[0]+" "+f[2]
		}
	}
	return what
}

// sortedKeys lists a measures map in key order.
func sortedKeys(m measures) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
