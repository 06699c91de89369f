package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// rocketmq-rust (github.com/mxsm/rocketmq-rust) is the third peer (-rust):
// its name server and broker, built with cargo from the pinned commit on
// first use, run from the same settings as the others in its own
// configuration format (TOML for the broker, flags for the name server).
const (
	// rustCommit is the commit bench-compare builds (main of 2026-08-23,
	// "Preserve typed errors across Tokio connect flights", #9644).
	rustCommit   = "dc569dff53393238ec9dfed935ed20aad96676f3"
	rustRepo     = "https://github.com/mxsm/rocketmq-rust.git"
	rustName     = "rocketmq-rust"
	rustNamesrv  = "rocketmq-namesrv-rust"
	rustBroker   = "rocketmq-broker-rust"
	rustLogLevel = "warn" // everything else logs at this level
	// Readiness lines, logged at info by the two modules the log filter
	// keeps at info (rocketmq-namesrv src/bootstrap.rs,
	// rocketmq-broker src/broker_runtime/lifecycle.rs).
	rustNamesrvReady = "NameServer is now running and accepting requests"
	rustBrokerReady  = "started successfully"
)

// rustSparse are the paths of the checkout: everything but images, site,
// test fixtures and scripts, which the two binaries do not need (and a
// partial mirror may lack).
var rustSparse = []string{
	"/*",
	"!/resources/",
	"!/rocketmq-dashboard/rocketmq-dashboard-tauri/",
	"!/rocketmq-store/tests/fixtures/",
	"!/rocketmq-website/",
	"!/scripts/",
}

var errRustBuild = errors.New("compare: rocketmq-rust build failed")

// rustBinDir is where the binaries of rustCommit are kept under cache.
func rustBinDir(cache string) string {
	return filepath.Join(cache, "rocketmq-rust-"+rustCommit[:12], "bin")
}

// buildRust returns the directory of the name server and broker binaries of
// rustCommit, building them on first use: a checkout of repo in
// cache/rocketmq-rust-src, `cargo build --release` of the two binaries
// only, the binaries copied to rustBinDir. Cargo's output goes to log.
func buildRust(ctx context.Context, repo, cache string, log io.Writer) (string, error) {
	bin := rustBinDir(cache)
	if fileExists(filepath.Join(bin, rustNamesrv)) && fileExists(filepath.Join(bin, rustBroker)) {
		return bin, nil
	}
	src := filepath.Join(cache, "rocketmq-rust-src")
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", src}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: git %s: %v\n%s", errRustBuild, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if !fileExists(filepath.Join(src, ".git")) {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, "git", "clone", "--no-checkout", repo, src)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%w: git clone %s: %v\n%s", errRustBuild, repo, err, out)
		}
	}
	if err := git("cat-file", "-e", rustCommit+"^{commit}"); err != nil {
		if err := git("fetch", repo, rustCommit); err != nil {
			return "", err
		}
	}
	if err := git(append([]string{"sparse-checkout", "set", "--no-cone"}, rustSparse...)...); err != nil {
		return "", err
	}
	if err := git("checkout", "--detach", rustCommit); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "cargo", "build", "--release", "--locked",
		"-p", "rocketmq-namesrv", "-p", "rocketmq-broker", "--bin", rustNamesrv, "--bin", rustBroker)
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: cargo build in %s: %v", errRustBuild, src, err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{rustNamesrv, rustBroker} {
		b, err := os.ReadFile(filepath.Join(src, "target", "release", name))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o755); err != nil {
			return "", err
		}
	}
	return bin, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// rustNamesrvArgv is the command line of the rocketmq-rust name server: a
// loopback listener (it refuses a public one without a security profile),
// its home and key-value store in dir.
func (t *target) rustNamesrvArgv(dir string, port int) ([]string, []string) {
	return []string{filepath.Join(t.rust, rustNamesrv),
		"--listenPort", strconv.Itoa(port), "--bindAddress", "127.0.0.1",
		"--rocketmqHome", dir, "--kvConfigPath", filepath.Join(dir, "namesrv", "kvConfig.json"),
		"--log-filter", rustLogLevel + ",rocketmq_namesrv::bootstrap=info",
	}, []string{"HOME=" + dir, "ROCKETMQ_HOME=" + dir}
}

// rustBrokerArgv writes broker.toml into dir and returns the command line
// of the rocketmq-rust broker.
func (t *target) rustBrokerArgv(dir string, nsPort, port int, flush string, extra []string) ([]string, []string, error) {
	if len(extra) > 0 {
		return nil, nil, fmt.Errorf("compare: %s: broker.conf lines %q have no TOML mapping here", t.name, extra)
	}
	conf := filepath.Join(dir, "broker.toml")
	if err := os.WriteFile(conf, []byte(rustBrokerTOML(dir, nsPort, port, flush)), 0o644); err != nil {
		return nil, nil, err
	}
	return []string{filepath.Join(t.rust, rustBroker), "-c", conf,
		"--log-filter", rustLogLevel + ",rocketmq_broker::broker_runtime::lifecycle=info",
	}, []string{"HOME=" + dir, "ROCKETMQ_HOME=" + dir}, nil
}

// rustBrokerTOML is brokerConf's settings in rocketmq-rust's canonical
// broker configuration (rocketmq-broker src/config/raw.rs: a [broker] and a
// [store] table; distribution/config/broker/broker.toml is its example).
// The listener binds loopback and the HA port is the one after the listen
// port, as the Java broker's.
func rustBrokerTOML(dir string, nsPort, port int, flush string) string {
	store := filepath.Join(dir, "store")
	var b strings.Builder
	fmt.Fprintf(&b, "[broker]\n")
	fmt.Fprintf(&b, "listenPort = %d\n", port)
	fmt.Fprintf(&b, "brokerIp1 = %q\n", "127.0.0.1")
	fmt.Fprintf(&b, "namesrvAddr = %q\n", fmt.Sprintf("127.0.0.1:%d", nsPort))
	fmt.Fprintf(&b, "storePathRootDir = %q\n", store)
	fmt.Fprintf(&b, "autoCreateTopicEnable = true\n")
	fmt.Fprintf(&b, "\n[broker.brokerIdentity]\n")
	fmt.Fprintf(&b, "brokerName = %q\n", "broker-a")
	fmt.Fprintf(&b, "brokerClusterName = %q\n", benchCluster)
	fmt.Fprintf(&b, "brokerId = 0\n")
	fmt.Fprintf(&b, "\n[broker.brokerServerConfig]\n")
	fmt.Fprintf(&b, "bindAddress = %q\n", "127.0.0.1")
	fmt.Fprintf(&b, "\n[store]\n")
	fmt.Fprintf(&b, "storePathRootDir = %q\n", store)
	fmt.Fprintf(&b, "brokerRole = %q\n", "ASYNC_MASTER")
	fmt.Fprintf(&b, "flushDiskType = %q\n", flush)
	fmt.Fprintf(&b, "deleteWhen = 4\n")
	fmt.Fprintf(&b, "fileReservedTime = 48\n")
	fmt.Fprintf(&b, "haListenAddress = %q\n", "127.0.0.1")
	fmt.Fprintf(&b, "haListenPort = %d\n", port+1)
	return b.String()
}

// rustWorkloads are the workloads run against rocketmq-rust, by phase.
var rustWorkloads = []string{"1", "2", "3", "4", "5", "6", "a", "b", "c"}

// rustPhase runs the selected workloads rocketmq-rust takes part in. A
// workload that fails is recorded (a note, and "failed" in its rows) and
// the next one runs, on a fresh broker if this one died.
func (r *runner) rustPhase(ctx context.Context, t *target) error {
	var c *cluster
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	// up returns a running cluster of flush type for workload w, after
	// topics; ok false when it could not start (recorded against w).
	up := func(w, flush, dirName string, topics ...string) bool {
		if c != nil && (c.flush != flush || c.broker.exited() || c.ns.exited()) {
			c.close()
			os.RemoveAll(filepath.Join(c.dir, "store"))
			c = nil
		}
		if c == nil {
			var boot time.Duration
			var err error
			c, boot, err = startCluster(ctx, t, filepath.Join(r.cfg.workDir, slug(t.name)+"-"+dirName), flush)
			if err != nil {
				c = nil
				r.rustFailed(t, w, err)
				return false
			}
			if _, ok := r.m[t.name]["boot"]; !ok && flush == asyncFlush {
				r.set(t, "boot", boot.Seconds()*1000)
				r.logf("%s broker ready in %v (name server %s, broker %s)", t.name, boot.Round(time.Millisecond), c.nsAddr(), c.brokerAddr())
				r.idleRSS(ctx, t, c, "idle")
			}
		}
		for _, topic := range topics {
			if err := c.createTopic(ctx, topic); err != nil {
				r.rustFailed(t, w, err)
				return false
			}
		}
		return true
	}
	runs := []struct {
		w, flush, dir string
		topics        []string
		f             func() error
	}{
		{"1", asyncFlush, "async", []string{topicSend}, func() error { return r.saturated(ctx, t, c, "w1") }},
		{"3", asyncFlush, "async", []string{topicE2E}, func() error { return r.endToEnd(ctx, t, c) }},
		{"4", asyncFlush, "async", []string{topicDelay}, func() error { return r.delayLevels(ctx, t, c) }},
		{"a", asyncFlush, "async", []string{topicBacklog}, func() error { return r.drain(ctx, t, c) }},
		{"b", asyncFlush, "async", []string{topicPipe}, func() error { return r.pipe(ctx, t, c) }},
		{"c", asyncFlush, "async", []string{topicLarge}, func() error { return r.large(ctx, t, c) }},
		{"6", asyncFlush, "async", []string{topicTimer, topicFlood}, func() error {
			rate, err := r.timerRate(ctx, t, c)
			if err != nil {
				return err
			}
			if _, err = r.flood(ctx, t, c, rate); err != nil {
				return err
			}
			return r.undelivered(t, "w6")
		}},
		{"5", asyncFlush, "async", []string{topicTimer}, func() error {
			rate, err := r.timerRate(ctx, t, c)
			if err != nil {
				return err
			}
			if err := r.timers(ctx, t, c, rate, time.Duration(r.m[t.name]["boot"]*float64(time.Millisecond))); err != nil {
				return err
			}
			return r.undelivered(t, "w5")
		}},
		{"2", syncFlush, "sync", []string{topicSend}, func() error { return r.saturated(ctx, t, c, "w2") }},
	}
	for _, run := range runs {
		if !r.cfg.has(run.w) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !up(run.w, run.flush, run.dir, run.topics...) {
			continue
		}
		if err := run.f(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.rustFailed(t, run.w, err)
		}
	}
	return nil
}

var errUndelivered = errors.New("compare: no message delivered")

// undelivered fails a delayed workload (measure prefix key) of which t
// delivered nothing: its lateness figures describe no message, so they are
// dropped (the lost count stays).
func (r *runner) undelivered(t *target, key string) error {
	m := r.m[t.name]
	if m[key+".received"] > 0 || m[key+".lost"] == 0 {
		return nil
	}
	for _, k := range []string{"p50", "p99", "p999", "max", "early", "maxearly", "drain"} {
		delete(m, key+"."+k)
	}
	return fmt.Errorf("%w: %.0f accepted, none received within the grace", errUndelivered, m[key+".lost"])
}

// rustFailed records that workload w failed on t.
func (r *runner) rustFailed(t *target, w string, err error) {
	if r.failed == nil {
		r.failed = map[string]string{}
	}
	msg := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // the first line; logs hold the rest
	}
	r.failed[w] = msg
	r.note("%s: workload %s failed: %s", t.name, w, msg)
}

// workloadID is the workload a row belongs to: the first word of its
// workload cell ("4 delay levels ..." → "4").
func workloadID(workload string) string {
	id, _, _ := strings.Cut(workload, " ")
	return id
}

// fillRust sets the rocketmq-rust value of every row read from a measure
// key, and marks the rows of the workloads it failed.
func (r *runner) fillRust(rows []row, t *target) {
	for i := range rows {
		rows[i].rust = math.NaN()
		if t == nil {
			continue
		}
		rows[i].hasRust = true
		if rows[i].key != "" {
			if v, ok := r.m[t.name][rows[i].key]; ok {
				rows[i].rust = v
			}
		}
		if math.IsNaN(rows[i].rust) {
			if _, ok := r.failed[workloadID(rows[i].workload)]; ok {
				rows[i].rustFailed = true
			}
		}
	}
}

// rustCells are the rocketmq-rust columns of r: its value and rmq/Rust.
func (r row) rustCells() []string {
	if r.rustFailed {
		return []string{"failed", "—"}
	}
	q := math.NaN()
	if !math.IsNaN(r.rmq) && !math.IsNaN(r.rust) && r.rust != 0 {
		q = r.rmq / r.rust
	}
	return []string{fmtValue(r.rust), fmtRatio(q)}
}

var rustHeader = []string{"Rust", "rmq/Rust"}

// withRust reports whether the table has the rocketmq-rust columns.
func withRust(rows []row) bool {
	for _, r := range rows {
		if r.hasRust {
			return true
		}
	}
	return false
}
