package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Sentinel errors of process control.
var (
	ErrNotReady     = errors.New("harness: rmq did not print both boot success lines in time")
	ErrExitedEarly  = errors.New("harness: rmq exited before it was ready")
	ErrUncleanExit  = errors.New("harness: rmq did not exit cleanly")
	ErrStopTimeout  = errors.New("harness: rmq did not exit after SIGTERM")
	ErrStillRunning = errors.New("harness: rmq is still running")
	ErrNotRunning   = errors.New("harness: rmq is not running")
	ErrBadConfig    = errors.New("harness: bad config")
)

// logTailLines bounds how much output an error message carries.
const logTailLines = 200

// Config describes one standalone process.
type Config struct {
	Bin     string // the rmq binary (see BuildRMQ)
	WorkDir string // holds broker.conf and store/; Start defaults it to t.TempDir()
	// NamesrvPort and BrokerPort are picked with FreePorts when zero. They are
	// kept across restarts.
	NamesrvPort, BrokerPort int
	// BrokerConf holds the lines of broker.conf ("key=value"). brokerIP1=127.0.0.1
	// is appended unless a brokerIP1 line is present, and smallStore=true
	// unless a smallStore line is.
	BrokerConf []string
	Args       []string // extra command-line arguments after the standard ones
	// ReadyTimeout bounds the wait for the boot lines (30 s when zero);
	// StopTimeout bounds the wait for exit after SIGTERM (30 s when zero).
	ReadyTimeout, StopTimeout time.Duration
}

// Process is a running (or stopped) `rmq standalone`. Its methods are safe for
// concurrent use, but starting and stopping are meant to be driven by one test.
type Process struct {
	cfg Config
	*child
}

// child is the run control every process of the harness shares (rmq
// standalone, and the brokers and name servers of an HA pair): one
// operating-system process at a time, its output kept across restarts.
type child struct {
	what        string // "rmq", "java broker": the subject of error messages
	logs        *logBuffer
	stopTimeout time.Duration
	// cleanExit tells a clean exit after SIGTERM (rmq: status 0; a JVM:
	// 143, its shutdown hooks having run).
	cleanExit func(*os.ProcessState) bool

	mu  sync.Mutex
	cur *run
}

// run is one operating-system process; Restart creates a new one.
type run struct {
	cmd         *exec.Cmd
	exited      chan struct{}
	state       *os.ProcessState
	waitErr     error
	stdout, err *stream
}

// Launch starts rmq standalone as cfg describes and waits until it is ready.
// On failure the process is killed and the error carries its output.
func Launch(cfg Config) (*Process, error) {
	if cfg.Bin == "" || cfg.WorkDir == "" {
		return nil, fmt.Errorf("%w: Bin and WorkDir are required", ErrBadConfig)
	}
	if cfg.NamesrvPort == 0 || cfg.BrokerPort == 0 {
		np, bp, err := FreePorts()
		if err != nil {
			return nil, err
		}
		if cfg.NamesrvPort == 0 {
			cfg.NamesrvPort = np
		}
		if cfg.BrokerPort == 0 {
			cfg.BrokerPort = bp
		}
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 30 * time.Second
	}
	p := &Process{cfg: cfg, child: &child{what: "rmq", logs: &logBuffer{}, stopTimeout: cfg.StopTimeout,
		cleanExit: func(s *os.ProcessState) bool { return s.Success() }}}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Start is Launch for tests: it fails t on error, kills the process when the
// test ends, and logs the process output if the test failed.
func Start(t testing.TB, cfg Config) *Process {
	t.Helper()
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	p, err := Launch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rmq output (%s):\n%s", p.cfg.WorkDir, p.Logs())
		}
		p.Close()
	})
	return p
}

// AttachLogs makes a test that shares an already running process log the
// output produced during the test, if the test fails.
func (p *Process) AttachLogs(t testing.TB) {
	mark := p.logs.mark()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rmq output during %s:\n%s", t.Name(), p.logs.since(mark))
		}
	})
}

// NamesrvAddr is the name server address clients use.
func (p *Process) NamesrvAddr() string { return "127.0.0.1:" + strconv.Itoa(p.cfg.NamesrvPort) }

// BrokerAddr is the broker's main address, as it registers itself.
func (p *Process) BrokerAddr() string { return "127.0.0.1:" + strconv.Itoa(p.cfg.BrokerPort) }

// BrokerVIPAddr is the broker's VIP channel (listen port - 2).
func (p *Process) BrokerVIPAddr() string { return "127.0.0.1:" + strconv.Itoa(p.cfg.BrokerPort-2) }

// BrokerPort is the broker's main port.
func (p *Process) BrokerPort() int { return p.cfg.BrokerPort }

// StoreDir is the --store-dir passed to rmq.
func (p *Process) StoreDir() string { return filepath.Join(p.cfg.WorkDir, "store") }

// Logs returns everything the process printed, across restarts.
func (p *child) Logs() string { return p.logs.since(0) }

// LogMark and LogsSince select the output printed after a point in time.
func (p *child) LogMark() int              { return p.logs.mark() }
func (p *child) LogsSince(mark int) string { return p.logs.since(mark) }

func (p *child) tail() string {
	all := p.Logs()
	lines := strings.Split(all, "\n")
	if len(lines) > logTailLines {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-logTailLines)}, lines[len(lines)-logTailLines:]...)
	}
	return strings.Join(lines, "\n")
}

func (p *Process) writeConf() (string, error) {
	lines := append([]string(nil), p.cfg.BrokerConf...)
	hasIP, hasSmall, hasGrpcPort := false, false, false
	for _, l := range lines {
		if k, _, ok := strings.Cut(l, "="); ok {
			hasIP = hasIP || strings.TrimSpace(k) == "brokerIP1"
			hasSmall = hasSmall || strings.TrimSpace(k) == "smallStore"
			hasGrpcPort = hasGrpcPort || strings.TrimSpace(k) == "grpcServerPort"
		}
	}
	if !hasIP {
		lines = append(lines, "brokerIP1=127.0.0.1")
	}
	// Every test broker runs a small store (a few MiB of disk, no 1 GiB
	// fallocated segments) unless the test says otherwise.
	if !hasSmall {
		lines = append(lines, "smallStore=true")
	}
	if !hasGrpcPort {
		// Any free port: processes run side by side, and 8081 may be taken.
		lines = append(lines, "grpcServerPort=0")
	}
	path := filepath.Join(p.cfg.WorkDir, "broker.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("harness: write broker.conf: %w", err)
	}
	return path, nil
}

// start launches a new run and waits for readiness.
func (p *Process) start() error {
	if p.Running() {
		return ErrStillRunning
	}
	conf, err := p.writeConf()
	if err != nil {
		return err
	}
	args := append([]string{
		"standalone",
		"--store-dir", p.StoreDir(),
		"--namesrv-port", strconv.Itoa(p.cfg.NamesrvPort),
		"--listen-port", strconv.Itoa(p.cfg.BrokerPort),
		"-c", conf,
	}, p.cfg.Args...)
	cmd := exec.Command(p.cfg.Bin, args...)
	cmd.Dir = p.cfg.WorkDir
	watch := newReadyWatch()
	return p.launch(cmd, watch, watch.ready, p.cfg.ReadyTimeout)
}

// launch starts cmd as the new run and waits until ready is closed (watch
// sees its stdout lines), the process exits, or timeout passes (it is then
// killed).
func (p *child) launch(cmd *exec.Cmd, watch lineWatcher, ready <-chan struct{}, timeout time.Duration) error {
	cmd.SysProcAttr = procAttr()
	r := &run{
		cmd:    cmd,
		exited: make(chan struct{}),
		stdout: &stream{buf: p.logs, stdout: true},
		err:    &stream{buf: p.logs},
	}
	cmd.Stdout, cmd.Stderr = r.stdout, r.err
	p.logs.setWatch(watch)
	p.logs.add(fmt.Sprintf("harness: start %s", strings.Join(cmd.Args, " ")), false)

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("harness: start %s: %w", p.what, err)
	}
	p.mu.Lock()
	p.cur = r
	p.mu.Unlock()
	go func() {
		r.waitErr = cmd.Wait()
		r.state = cmd.ProcessState
		r.stdout.flush()
		r.err.flush()
		p.logs.add(fmt.Sprintf("harness: %s exited: %v", p.what, r.state), false)
		close(r.exited)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-r.exited:
		return fmt.Errorf("%w (%s, %v); output:\n%s", ErrExitedEarly, p.what, r.state, p.tail())
	case <-timer.C:
		p.Close()
		return fmt.Errorf("%w (%s, %v); output:\n%s", ErrNotReady, p.what, timeout, p.tail())
	}
}

func (r *run) done() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (p *child) current() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Running reports whether the current run has not exited.
func (p *child) Running() bool {
	r := p.current()
	return r != nil && !r.done()
}

// Pid is the operating-system id of the current run.
func (p *child) Pid() int {
	if r := p.current(); r != nil && r.cmd.Process != nil {
		return r.cmd.Process.Pid
	}
	return 0
}

// Stop sends SIGTERM and waits for the exit. It fails when the process does
// not exit within StopTimeout (it is then killed) or exits with a non-zero status.
func (p *child) Stop() error {
	r := p.current()
	if r == nil || r.done() {
		return ErrNotRunning
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !r.done() {
		return fmt.Errorf("harness: SIGTERM: %w", err)
	}
	select {
	case <-r.exited:
	case <-time.After(p.stopTimeout):
		p.Close()
		return fmt.Errorf("%w (%s) within %v; output:\n%s", ErrStopTimeout, p.what, p.stopTimeout, p.tail())
	}
	if !p.cleanExit(r.state) {
		return fmt.Errorf("%w (%s): %v; output:\n%s", ErrUncleanExit, p.what, r.state, p.tail())
	}
	return nil
}

// Kill sends SIGKILL and waits for the exit: a crash.
func (p *child) Kill() error {
	r := p.current()
	if r == nil || r.done() {
		return ErrNotRunning
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil && !r.done() {
		return fmt.Errorf("harness: SIGKILL: %w", err)
	}
	<-r.exited
	return nil
}

// Restart starts the process again after Stop or Kill, with the same ports,
// store directory and broker.conf, and waits until it is ready.
func (p *Process) Restart() error {
	if p.Running() {
		return ErrStillRunning
	}
	return p.start()
}

// ExitCode is the exit status of the last run (-1 while running or when a
// signal ended it).
func (p *child) ExitCode() int {
	r := p.current()
	if r == nil || !r.done() {
		return -1
	}
	return r.state.ExitCode()
}

// Close kills the process if it is still running. It is idempotent.
func (p *child) Close() {
	r := p.current()
	if r == nil || r.done() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}
