package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Errors of process handling.
var (
	errNotReady = errors.New("compare: process did not print its readiness line in time")
	errExited   = errors.New("compare: process exited before it was ready")
	errProcStat = errors.New("compare: unreadable /proc stat")
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat; it is 100 on every Linux architecture Go supports.
const clockTicks = 100

// process is one child (a name server or a broker) with its output in files.
type process struct {
	name    string
	cmd     *exec.Cmd
	stdout  string // file the child's stdout goes to
	stderr  string // and its stderr (rocketmq-rust logs there)
	started time.Time
	done    chan struct{} // closed when the child has exited
	waitErr error
}

// startProcess runs argv with env added to the environment, stdout and stderr
// going to <logBase>.out and <logBase>.err.
func startProcess(name string, argv, env []string, dir, logBase string) (*process, error) {
	out, err := os.Create(logBase + ".out")
	if err != nil {
		return nil, err
	}
	errf, err := os.Create(logBase + ".err")
	if err != nil {
		out.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = ownGroup()
	p := &process{name: name, cmd: cmd, stdout: logBase + ".out", stderr: logBase + ".err", done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		out.Close()
		errf.Close()
		return nil, fmt.Errorf("compare: start %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		out.Close()
		errf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls the child's stdout and stderr for marker and returns how
// long after the start it appeared (to the polling resolution, 5 ms).
func (p *process) waitReady(ctx context.Context, marker string, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		for _, f := range []string{p.stdout, p.stderr} {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(marker)) {
				return time.Since(p.started), nil
			}
		}
		if p.exited() {
			return 0, fmt.Errorf("%w: %s (%v); see %s and its .err", errExited, p.name, p.waitErr, p.stdout)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%w: %s after %v (%q not in %s)", errNotReady, p.name, timeout, marker, p.stdout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for the exit, then SIGKILL after grace. It
// returns how long the orderly stop took.
func (p *process) stop(grace time.Duration) time.Duration {
	if p.exited() {
		return 0
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return time.Since(start)
}

// procSample is one reading of a process's accounting.
type procSample struct {
	cpu     time.Duration // utime + stime
	rss     int64         // VmRSS bytes
	rssAnon int64         // RssAnon bytes
}

// parseStatCPU reads utime+stime from the text of /proc/<pid>/stat. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')' in %q", errProcStat, stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the name", errProcStat, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%w: %v", errProcStat, err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// parseStatusMem reads VmRSS and RssAnon (kB) from /proc/<pid>/status.
func parseStatusMem(status string) (rss, anon int64, err error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	found := 0
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "RssAnon") {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		n, perr := strconv.ParseInt(f[0], 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("%w: %s: %v", errProcStat, k, perr)
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			anon = n << 10
		}
		found++
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("%w: VmRSS or RssAnon missing", errProcStat)
	}
	return rss, anon, nil
}

func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return procSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	rss, anon, err := parseStatusMem(string(status))
	return procSample{cpu: cpu, rss: rss, rssAnon: anon}, err
}

// sampler reads a process's CPU time and memory every period between start
// and stop, and keeps the peaks.
type sampler struct {
	pid    int
	period time.Duration

	mu       sync.Mutex
	first    procSample
	last     procSample
	peakRSS  int64
	peakAnon int64
	rssSum   int64
	n        int64

	stopc chan struct{}
	done  chan struct{}
}

func startSampler(pid int, period time.Duration) *sampler {
	s := &sampler{pid: pid, period: period, stopc: make(chan struct{}), done: make(chan struct{})}
	if p, err := readProc(pid); err == nil {
		s.first = p
		s.add(p)
	}
	go s.loop()
	return s
}

func (s *sampler) add(p procSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = p
	s.peakRSS = max(s.peakRSS, p.rss)
	s.peakAnon = max(s.peakAnon, p.rssAnon)
	s.rssSum += p.rss
	s.n++
}

func (s *sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		select {
		case <-s.stopc:
			return
		case <-t.C:
			if p, err := readProc(s.pid); err == nil {
				s.add(p)
			}
		}
	}
}

// usage is what a sampler saw.
type usage struct {
	CPU      time.Duration // CPU time used between start and stop
	PeakRSS  int64
	PeakAnon int64
	MeanRSS  int64
}

// stop takes a last reading and returns the totals.
func (s *sampler) stop() usage {
	close(s.stopc)
	<-s.done
	if p, err := readProc(s.pid); err == nil {
		s.add(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := usage{CPU: s.last.cpu - s.first.cpu, PeakRSS: s.peakRSS, PeakAnon: s.peakAnon}
	if s.n > 0 {
		u.MeanRSS = s.rssSum / s.n
	}
	return u
}

// Settling of a broker before and after a timed probe (workload e): the
// broker is settled once it used at most settleIdleCPU over settleWindow.
const (
	settleWindow  = 500 * time.Millisecond
	settleIdleCPU = 20 * time.Millisecond // two clock ticks; 4 % of a core
	settleLimit   = 20 * time.Second
)

// settle waits until process pid has finished the work queued before (it
// used at most settleIdleCPU over a settleWindow), or limit passed,
// and returns how long it waited and whether pid settled. Workload e's
// broker stores timers asynchronously (commitlog, then TimerLog), so CPU
// read right after a fill of millions still counts the fill, and CPU read
// right after a probe's sends misses part of the probe.
func settle(ctx context.Context, pid int, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	prev, err := readProc(pid)
	if err != nil {
		return 0, false
	}
	for time.Since(start) < limit {
		if sleepCtx(ctx, settleWindow) != nil {
			break
		}
		cur, err := readProc(pid)
		if err != nil {
			break
		}
		if cur.cpu-prev.cpu <= settleIdleCPU {
			return time.Since(start), true
		}
		prev = cur
	}
	return time.Since(start), false
}
